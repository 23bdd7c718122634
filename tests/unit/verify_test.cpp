#include "compiler/pipeline/verify.h"

#include <gtest/gtest.h>

namespace accel::pipeline {
namespace {

diag::Diagnostic Error(const source::SourceFile& file, uint32_t offset, std::string code,
                       std::string message) {
  return diag::Diagnostic{
      std::move(code), diag::Severity::Error, std::move(message), &file, {offset, offset + 1}, {}, {}};
}

TEST(Verify, PassesWhenExactlyTheExpectedDiagnosticsAppear) {
  source::SourceFile file("v.accel",
                          "a = 1 // expected-error [A2003] {{unknown field `a`}}\n"
                          "// expected-error@+1 {{missing}}\n"
                          "b = 2\n");
  std::vector<diag::Diagnostic> produced = {
      Error(file, 0, "A2003", "unknown field `a` in `Job`"),
      Error(file, file.text().find("b = 2"), "A3004", "missing required field")};
  EXPECT_TRUE(Verify(file, produced).empty());
}

TEST(Verify, ReportsMissingAndUnexpectedDiagnosticsBothWays) {
  source::SourceFile file("v.accel", "a = 1 // expected-error [A2003] {{unknown field}}\nb = 2\n");
  std::vector<diag::Diagnostic> produced = {Error(file, file.text().find("b = 2"), "A3001", "type mismatch")};
  std::vector<std::string> problems = Verify(file, produced);
  ASSERT_EQ(problems.size(), 2u);
  EXPECT_EQ(problems[0], "v.accel:2: unexpected error [A3001]: type mismatch");
  EXPECT_EQ(problems[1], "v.accel:1: expected error [A2003] not produced: {{unknown field}}");
}

TEST(Verify, CodeSeverityAndLineMustAllMatch) {
  source::SourceFile file("v.accel", "a // expected-warning [A2010] {{old}}\n");
  EXPECT_FALSE(Verify(file, {Error(file, 0, "A2010", "old name")}).empty());  // severity differs
  diag::Diagnostic warning = Error(file, 0, "A2011", "old name");
  warning.severity = diag::Severity::Warning;
  EXPECT_FALSE(Verify(file, {warning}).empty());  // code differs
  warning.code = "A2010";
  EXPECT_TRUE(Verify(file, {warning}).empty());
}

TEST(Verify, AbsoluteAndNegativeLineOffsets) {
  source::SourceFile file("v.accel", "x\ny\n// expected-error@-1 {{on y}}\n// expected-error@1 {{on x}}\n");
  EXPECT_TRUE(Verify(file, {Error(file, 2, "A1", "on y"), Error(file, 0, "A1", "on x")}).empty());
}

TEST(Verify, NotesAreCheckedOnlyWhenTheFileExpectsThem) {
  source::SourceFile quiet("v.accel", "a // expected-error {{e}}\n");
  diag::Diagnostic with_note = Error(quiet, 0, "A1", "e");
  with_note.notes.push_back({"A0002", diag::Severity::Note, "first set here", &quiet, {0, 1}, {}, {}});
  EXPECT_TRUE(Verify(quiet, {with_note}).empty());
  source::SourceFile strict("v.accel", "a // expected-error {{e}} expected-note {{elsewhere}}\n");
  with_note.file = &strict;
  with_note.notes[0].file = &strict;
  EXPECT_EQ(Verify(strict, {with_note}).size(), 2u);  // the note is unexpected, `elsewhere` missing
}

TEST(Verify, ExpectationOutsideTheFileIsAProblem) {
  source::SourceFile file("v.accel", "// expected-error@+5 {{x}}\n");
  EXPECT_EQ(Verify(file, {}).size(), 1u);
  // Huge offsets neither throw nor wrap around to a line inside the file.
  source::SourceFile huge(
      "v.accel", "// expected-error@99999999999999999999 {{x}}\n// expected-error@+4294967296 {{y}}\n");
  EXPECT_EQ(Verify(huge, {}).size(), 2u);
}

}  // namespace
}  // namespace accel::pipeline
