#include <gtest/gtest.h>

#include <set>

#include "compiler/diagnostics/diagnostic.h"
#include "compiler/diagnostics/render.h"

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

TEST(RenderText, ShowsLocationSourceLineCaretRangeAndFixIt) {
  source::SourceFile file("specs/bert.accel", "job j {\n    bucket_cap_mbb = 50\n}\n");
  DiagnosticEngine engine;
  Diagnostic& d = engine.Emit(Kind::UnknownField, &file, {12, 26}, "bucket_cap_mbb", "DistributedDataParallelKwargs",
                              "; did you mean `bucket_cap_mb`?");
  d.fixit = FixIt{{12, 26}, "bucket_cap_mb"};
  EXPECT_EQ(RenderText(engine.diagnostics()),
            "specs/bert.accel:2:5: error: unknown field `bucket_cap_mbb` in `DistributedDataParallelKwargs`; "
            "did you mean `bucket_cap_mb`? [A2003]\n"
            "    2 |     bucket_cap_mbb = 50\n"
            "      |     ^~~~~~~~~~~~~~\n"
            "      = help: replace with `bucket_cap_mb`\n");
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

TEST(ClosestMatch, SuggestsNearTyposAndNothingForUnrelatedWords) {
  std::vector<std::string> fields = {"bucket_cap_mb", "find_unused_parameters", "static_graph"};
  EXPECT_EQ(ClosestMatch("bucket_cap_mbb", fields), "bucket_cap_mb");
  EXPECT_EQ(ClosestMatch("statc_graph", fields), "static_graph");
  EXPECT_EQ(ClosestMatch("learning_rate", fields), "");
}

}  // namespace
}  // namespace accel::diag
