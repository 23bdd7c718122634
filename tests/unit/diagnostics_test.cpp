#include <gtest/gtest.h>

#include <set>

#include "compiler/diagnostics/diagnostic.h"
#include "compiler/diagnostics/render.h"
#include "llvm/Support/JSON.h"

namespace accel::diag {
namespace {

TEST(DiagnosticKinds, CodesAreUniqueAndWellFormed) {
  std::set<std::string_view> codes;
  for (const KindInfo& kind : AllKinds()) {
    EXPECT_TRUE(codes.insert(kind.code).second) << "code reused: " << kind.code;
    ASSERT_EQ(kind.code.size(), 5u) << kind.name;
    EXPECT_EQ(kind.code[0], 'A') << kind.name;
    // Notes live in A0xxx; everything else in its phase group.
    EXPECT_EQ(kind.code[1] == '0', kind.severity == Severity::Note) << kind.name;
  }
}

TEST(DiagnosticEngine, WrongArgumentsNeverThrow) {
  DiagnosticEngine engine;
  Diagnostic& d = engine.Emit(Kind::UnknownField, nullptr, {}, "only-one-argument");
  EXPECT_NE(d.message.find("internal error"), std::string::npos);
}

TEST(DiagnosticEngine, FormatsTheTableMessageAndCountsBySeverity) {
  DiagnosticEngine engine;
  source::SourceFile file("spec.accel", "x = 1\n");
  Diagnostic& d = engine.Emit(Kind::UnknownField, &file, {0, 1}, "x", "Job", "");
  EXPECT_EQ(d.code, "A2003");
  EXPECT_EQ(d.message, "unknown field `x` in `Job`");
  EXPECT_EQ(engine.error_count(), 1);
  engine.Add(Diagnostic{"W1", Severity::Warning, "w", &file, {}, {}, {}});
  EXPECT_EQ(engine.warning_count(), 1);
  EXPECT_TRUE(engine.has_errors());
}

// A 10 MB literal was printed three times: in the message, the source line and the caret line.
// Each is cut, once, to a few hundred bytes.
TEST(DiagnosticEngine, CutsALongLiteralInTheMessageAndTheSourceLine) {
  std::string literal(10 << 20, 'x');
  source::SourceFile file("big.accel", "job j { model = MLP { inputs = \"" + literal + "\" } }\n");
  DiagnosticEngine engine;
  Diagnostic& d = engine.Emit(Kind::TypeMismatch, &file, source::Span{31, static_cast<uint32_t>(33 + literal.size())},
                              "model.inputs", "int", "a string \"" + literal + "\"");
  EXPECT_LE(d.message.size(), kMaxMessageBytes + 32);
  EXPECT_NE(d.message.find("more bytes)"), std::string::npos);
  // Cut once: the count is of the literal's bytes, not of a second cut's few.
  size_t count = d.message.rfind("... (");
  ASSERT_NE(count, std::string::npos);
  EXPECT_GT(std::stoull(d.message.substr(count + 5)), (10u << 20) - kMaxMessageBytes);
  std::string text = RenderText(engine.diagnostics());
  EXPECT_LT(text.size(), 4096u);
}

TEST(RenderText, ShowsLocationSourceLineCaretRangeAndFixIt) {
  source::SourceFile file("specs/bert.accel", "job j {\n    bucket_cap_mbb = 50\n}\n");
  DiagnosticEngine engine;
  Diagnostic& d = engine.Emit(Kind::UnknownField, &file, {12, 26}, "bucket_cap_mbb",
                              "DistributedDataParallelKwargs", "; did you mean `bucket_cap_mb`?");
  d.fixit = FixIt{{12, 26}, "bucket_cap_mb"};
  EXPECT_EQ(RenderText(engine.diagnostics()),
            "specs/bert.accel:2:5: error: unknown field `bucket_cap_mbb` in `DistributedDataParallelKwargs`; "
            "did you mean `bucket_cap_mb`? [A2003]\n"
            "    2 |     bucket_cap_mbb = 50\n"
            "      |     ^~~~~~~~~~~~~~\n"
            "      = help: replace with `bucket_cap_mb`\n");
}

TEST(RenderText, CaretCountsCharactersNotBytes) {
  source::SourceFile file("u.accel", "s = \"é日\" x\n");
  DiagnosticEngine engine;
  uint32_t at = static_cast<uint32_t>(file.text().find('x'));
  engine.Emit(Kind::UnexpectedCharacter, &file, {at, at + 1}, "x");
  std::string text = RenderText(engine.diagnostics());
  // `s = "é日" ` is 9 characters, so the caret is the 10th column after the gutter.
  EXPECT_NE(text.find("      |          ^\n"), std::string::npos) << text;
}

// Found by the fuzzer: a diagnostic at the end of a file whose last line is only `\r`s lies
// past the shown (trimmed) line and made the renderer throw std::out_of_range.
TEST(RenderText, SpanPastTheShownLineIsClamped) {
  source::SourceFile file("r.accel", "job j {\n\r\r\r\r");
  DiagnosticEngine engine;
  uint32_t end = static_cast<uint32_t>(file.text().size());
  engine.Emit(Kind::SyntaxError, &file, {end, end}, "unexpected end of file");
  std::string text;
  EXPECT_NO_THROW(text = RenderText(engine.diagnostics()));
  EXPECT_NE(text.find("r.accel:2:5: error: unexpected end of file"), std::string::npos) << text;
}

TEST(RenderText, ColorsOnlyWhenAsked) {
  source::SourceFile file("a.accel", "x\n");
  DiagnosticEngine engine;
  engine.Emit(Kind::UnexpectedCharacter, &file, {0, 1}, "x");
  EXPECT_EQ(RenderText(engine.diagnostics()).find("\x1b["), std::string::npos);
  EXPECT_NE(RenderText(engine.diagnostics(), {true}).find("\x1b["), std::string::npos);
}

TEST(RenderJson, CarriesPositionsCodeAndNotes) {
  source::SourceFile file("a.accel", "ab\ncd\n");
  DiagnosticEngine engine;
  Diagnostic& d = engine.Emit(Kind::DuplicateField, &file, {3, 5}, "cd");
  d.notes.push_back(DiagnosticEngine::Note(Kind::NotePreviousValue, &file, {0, 2}));
  std::string json = RenderJson(engine.diagnostics());
  EXPECT_NE(json.find("\"line\": 2"), std::string::npos) << json;
  EXPECT_NE(json.find("\"end_column\": 3"), std::string::npos) << json;
  EXPECT_NE(json.find("\"code\": \"A2004\""), std::string::npos) << json;
  EXPECT_NE(json.find("first set here"), std::string::npos) << json;
}

TEST(RenderSarif, IsASarif21LogWithRulesLocationsAndFixes) {
  source::SourceFile file("s.accel", "job j {\n  bucket_cap_mbb = 1\n}\n");
  DiagnosticEngine engine;
  Diagnostic& d = engine.Emit(Kind::UnknownField, &file, {10, 24}, "bucket_cap_mbb", "K", "");
  d.fixit = FixIt{{10, 24}, "bucket_cap_mb"};
  d.notes.push_back(DiagnosticEngine::Note(Kind::NotePreviousValue, &file, {0, 3}));
  llvm::Expected<llvm::json::Value> log = llvm::json::parse(RenderSarif(engine.diagnostics(), "9.9"));
  ASSERT_TRUE(static_cast<bool>(log));
  const llvm::json::Object& root = *log->getAsObject();
  EXPECT_EQ(root.getString("version").getValue(), "2.1.0");
  const llvm::json::Object& run = *root.getArray("runs")->front().getAsObject();
  EXPECT_EQ(run.getObject("tool")->getObject("driver")->getString("name").getValue(), "accelc");
  const llvm::json::Object& result = *run.getArray("results")->front().getAsObject();
  EXPECT_EQ(result.getString("ruleId").getValue(), "A2003");
  EXPECT_EQ(result.getString("level").getValue(), "error");
  const llvm::json::Object& region = *result.getArray("locations")
                                          ->front()
                                          .getAsObject()
                                          ->getObject("physicalLocation")
                                          ->getObject("region");
  EXPECT_EQ(region.getInteger("startLine").getValue(), 2);
  EXPECT_EQ(region.getInteger("startColumn").getValue(), 3);
  EXPECT_EQ(region.getInteger("endColumn").getValue(), 17);
  EXPECT_EQ(result.getArray("relatedLocations")->size(), 1u);
  EXPECT_EQ(result.getArray("fixes")->size(), 1u);
}

TEST(RenderGithub, WritesEscapedWorkflowCommands) {
  source::SourceFile file("dir,x/s:1.accel", "a\n");
  DiagnosticEngine engine;
  engine.Emit(Kind::SyntaxError, &file, {0, 1}, "50% off\nnext line");
  engine.Add(Diagnostic{"W9", Severity::Warning, "w", nullptr, {}, {}, {}});
  EXPECT_EQ(RenderGithub(engine.diagnostics()),
            "::error file=dir%2Cx/s%3A1.accel,line=1,col=1,endLine=1,endColumn=2,title=A1001::50%25 "
            "off%0Anext line\n"
            "::warning title=W9::w\n");
}

TEST(RenderText, LongLinesShowAWindowAroundTheSpan) {
  std::string line = "job j { a = \"" + std::string(5000, 'x') + "\" $ }";
  source::SourceFile file("l.accel", line);
  DiagnosticEngine engine;
  uint32_t at = static_cast<uint32_t>(line.find('$'));
  engine.Emit(Kind::UnexpectedCharacter, &file, {at, at + 1}, "$");
  std::string text = RenderText(engine.diagnostics());
  EXPECT_LT(text.size(), 600u);
  EXPECT_NE(text.find("...xxx"), std::string::npos);
  // The caret sits under the `$` in the window.
  size_t source_line = text.find("    1 | ");
  size_t caret_line = text.find('^');
  size_t dollar = text.find('$', source_line);
  EXPECT_EQ(dollar - text.rfind('\n', dollar), caret_line - text.rfind('\n', caret_line));
}

TEST(ClosestMatch, SuggestsNearTyposAndNothingForUnrelatedWords) {
  std::vector<std::string> fields = {"bucket_cap_mb", "find_unused_parameters", "static_graph"};
  EXPECT_EQ(ClosestMatch("bucket_cap_mbb", fields), "bucket_cap_mb");
  EXPECT_EQ(ClosestMatch("statc_graph", fields), "static_graph");
  EXPECT_EQ(ClosestMatch("learning_rate", fields), "");
}

// The limit is a third of the word's length, rounded up, at least 1: a word of 3k + 2
// characters may be k + 1 edits away, not k + 2.
TEST(ClosestMatch, TheLimitIsAThirdOfTheWordRoundedUp) {
  // k = 1: five letters, two edits away is a typo, three is not.
  EXPECT_EQ(ClosestMatch("abcxy", {"abcde"}), "abcde");
  EXPECT_EQ(ClosestMatch("abxyz", {"abcde"}), "");
  // k = 2: eight letters, three edits away is a typo, four is not.
  EXPECT_EQ(ClosestMatch("abcdexyz", {"abcdefgh"}), "abcdefgh");
  EXPECT_EQ(ClosestMatch("abcdwxyz", {"abcdefgh"}), "");
  // A one-letter word still gets one edit.
  EXPECT_EQ(ClosestMatch("x", {"y"}), "y");
}

TEST(ClosestMatch, ASwapOfNeighboursIsOneEditAndCaseIsIgnored) {
  EXPECT_EQ(ClosestMatch("bsae", {"base", "bash"}), "base");  // one swap beats one substitution
  EXPECT_EQ(ClosestMatch("STRNG", {"string"}), "string");
  // A candidate whose length alone puts it past the best so far is never the answer.
  EXPECT_EQ(ClosestMatch("steps", {"step", "stepsize_extra_long"}), "step");
}

}  // namespace
}  // namespace accel::diag
