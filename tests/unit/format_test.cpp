#include "compiler/format/format.h"

#include <gtest/gtest.h>

#include <string>

#include "compiler/format/line_diff.h"
#include "compiler/format/meaning.h"
#include "compiler/parse/parse.h"

namespace accel::format {
namespace {

// The canonical layout of `text`; fails the test when it does not format.
std::string Fmt(const std::string& text, size_t line_limit = kLineLimit) {
  source::SourceFile source("t.accel", text);
  diag::DiagnosticEngine diagnostics;
  Formatted formatted = Format(source, diagnostics, line_limit);
  EXPECT_EQ(formatted.outcome, Formatted::Outcome::kFormatted) << formatted.problem;
  EXPECT_FALSE(diagnostics.has_errors());
  // Every layout is a fixed point.
  if (formatted.outcome == Formatted::Outcome::kFormatted) {
    source::SourceFile again("t.accel", formatted.text);
    diag::DiagnosticEngine again_diagnostics;
    EXPECT_EQ(Format(again, again_diagnostics, line_limit).text, formatted.text) << "not idempotent";
  }
  return formatted.text;
}

TEST(Format, PutsOneStatementPerLineAndDropsSemicolons) {
  EXPECT_EQ(Fmt("job j{a=1;b =  2;c{d=3}}"),
            "job j {\n"
            "  a = 1\n"
            "  b = 2\n"
            "  c { d = 3 }\n"
            "}\n");
}

// A file saved with a UTF-8 byte-order mark was "an internal error: the formatted text does not
// parse"; its canonical form has no mark.
TEST(Format, DropsAByteOrderMark) {
  EXPECT_EQ(Fmt("\xEF\xBB\xBFjob j {\n  model = MLP { inputs = 4 }\n}\n"),
            "job j {\n  model = MLP { inputs = 4 }\n}\n");
}

TEST(Format, KeepsAOneAssignmentBlockOnOneLineOnlyWhenItFits) {
  EXPECT_EQ(Fmt("job j { output { dir = \"runs/x\" } }"), "job j {\n  output { dir = \"runs/x\" }\n}\n");
  EXPECT_EQ(Fmt("job j { output { dir = \"runs/x\" } }", 20),
            "job j {\n  output {\n    dir = \"runs/x\"\n  }\n}\n");
}

TEST(Format, KeepsEveryCommentWhereItWas) {
  std::string text =
      "// head\n"
      "job j { // after the brace\n"
      "  a = /* before the value */ 1 // end of line\n"
      "  // own line\n"
      "  b = [1, // inside a list\n"
      "    2]\n"
      "  // before the brace\n"
      "}\n"
      "// end of file\n";
  EXPECT_EQ(Fmt(text),
            "// head\n"
            "job j { // after the brace\n"
            "  a = /* before the value */ 1 // end of line\n"
            "  // own line\n"
            "  b = [\n"
            "    1, // inside a list\n"
            "    2,\n"
            "  ]\n"
            "  // before the brace\n"
            "}\n"
            "// end of file\n");
}

TEST(Format, KeepsOneOfSeveralBlankLinesAndNoneAfterABrace) {
  EXPECT_EQ(Fmt("job j {\n\n  a = 1\n\n\n\n  b = 2\n\n}\n"), "job j {\n  a = 1\n\n  b = 2\n}\n");
}

TEST(Format, BreaksAListThatDoesNotFitOneElementPerLine) {
  EXPECT_EQ(Fmt("job j { xs = [\"aaaa\", \"bbbb\"] }", 20),
            "job j {\n  xs = [\n    \"aaaa\",\n    \"bbbb\",\n  ]\n}\n");
  // And joins one that does, dropping its trailing comma.
  EXPECT_EQ(Fmt("job j { xs = [\n 1,\n 2,\n] }"), "job j {\n  xs = [1, 2]\n}\n");
}

TEST(Format, KeepsNumbersAndStringsAsWritten) {
  EXPECT_EQ(Fmt("job j { a = 1_000; b = 2e-5; c = 800s; d = 512MiB; e = \"\\t \\\"q\\\" é\" }"),
            "job j {\n  a = 1_000\n  b = 2e-5\n  c = 800s\n  d = 512MiB\n  e = \"\\t \\\"q\\\" é\"\n}\n");
}

TEST(Format, LaysOutSchemaDeclarations) {
  EXPECT_EQ(
      Fmt("/// doc\nkwargs K{\n/// field doc\nx:int=25 where x>0 from env A,B;y : list< map<string,int> >?\n"
          "rule K-1 error \"m\" for a,b : x>1}\nenum E{a=\"a\",b}"),
      "/// doc\n"
      "kwargs K {\n"
      "  /// field doc\n"
      "  x: int = 25  where x > 0  from env A, B\n"
      "  y: list<map<string, int>>?\n"
      "  rule K-1 error \"m\" for a, b:\n"
      "    x > 1\n"
      "}\n"
      "enum E { a = \"a\", b }\n");
}

TEST(Format, KeepsTheAuthorsLineBreaksInsideAnExpression) {
  EXPECT_EQ(Fmt("record R {\n  x: int\n  rule R-1 error \"m\":\n    x > 1 and\n  x < 5\n}\n"),
            "record R {\n  x: int\n  rule R-1 error \"m\":\n    x > 1 and\n      x < 5\n}\n");
}

TEST(Format, IndentsACommentInsideAnExpressionLikeAContinuationLine) {
  EXPECT_EQ(Fmt("record R {\n  x: int\n  rule R-1 error \"m\":\n    x > 1 and\n /* why */ x < 5 and\n  // "
                "note\n  x < 9\n}\n"),
            "record R {\n  x: int\n  rule R-1 error \"m\":\n    x > 1 and\n      /* why */ x < 5 and\n      "
            "// note\n"
            "      x < 9\n}\n");
}

TEST(Format, NormalizesCrlfTabsAndTrailingBlanks) {
  EXPECT_EQ(Fmt("job j {\r\n\ta = 1   // c   \r\n}\r\n"), "job j {\n  a = 1 // c\n}\n");
}

TEST(Format, LeavesAFileWithSyntaxErrorsAndReportsThem) {
  source::SourceFile source("t.accel", "job j { a = }\n");
  diag::DiagnosticEngine diagnostics;
  Formatted formatted = Format(source, diagnostics);
  EXPECT_EQ(formatted.outcome, Formatted::Outcome::kSyntaxErrors);
  EXPECT_TRUE(formatted.text.empty());
  EXPECT_TRUE(diagnostics.has_errors());
}

TEST(Format, FormatsAnEmptyFileAsEmpty) {
  EXPECT_EQ(Fmt(""), "");
  EXPECT_EQ(Fmt("\n\n  \n"), "");
  EXPECT_EQ(Fmt("// only a comment"), "// only a comment\n");
}

TEST(SyntaxTree, HoldsCommentsAndIsOnlyGivenForAFileWithoutErrors) {
  source::SourceFile good("t.accel", "job j { a = 1 } // c\n/* d */");
  diag::DiagnosticEngine diagnostics;
  parse::SyntaxTree syntax;
  parse::Parse(good, diagnostics, &syntax);
  ASSERT_TRUE(syntax.root);
  ASSERT_GE(syntax.tokens.size(), 2u);
  EXPECT_EQ(syntax.tokens[syntax.tokens.size() - 2].kind, parse::TokenKind::kLineComment);
  EXPECT_EQ(syntax.tokens.back().kind, parse::TokenKind::kBlockComment);

  source::SourceFile bad("t.accel", "job j { a = }");
  parse::SyntaxTree none;
  parse::Parse(bad, diagnostics, &none);
  EXPECT_FALSE(none.root);
}

// The meaning key of `text`, which must parse.
std::string KeyOf(const std::string& text) {
  source::SourceFile source("t.accel", text);
  diag::DiagnosticEngine diagnostics;
  parse::SyntaxTree syntax;
  ast::File file = parse::Parse(source, diagnostics, &syntax);
  EXPECT_FALSE(diagnostics.has_errors());
  return MeaningKey(source, syntax, file);
}

TEST(MeaningKey, IgnoresLayoutSeparatorsAndTrailingBlanksInComments) {
  EXPECT_EQ(KeyOf("job j { a = [1, 2,]; b = 2 } // c  "), KeyOf("job j {\n  a = [1, 2]\n  b = 2\n} // c\n"));
}

TEST(MeaningKey, SeesALostMovedOrChangedComment) {
  std::string key = KeyOf("job j { a = 1 // c\n b = 2 }");
  EXPECT_NE(key, KeyOf("job j { a = 1\n b = 2 }"));
  EXPECT_NE(key, KeyOf("job j { a = 1\n b = 2 // c\n }"));
  EXPECT_NE(key, KeyOf("job j { a = 1 // d\n b = 2 }"));
}

TEST(MeaningKey, SeesAChangedValueOrSpelling) {
  EXPECT_NE(KeyOf("job j { a = 1 }"), KeyOf("job j { a = 2 }"));
  EXPECT_NE(KeyOf("job j { a = 1000 }"), KeyOf("job j { a = 1_000 }"));
}

TEST(UnifiedDiff, IsEmptyForEqualTexts) { EXPECT_EQ(UnifiedDiff("a\nb\n", "a\nb\n", "f"), ""); }

TEST(UnifiedDiff, ShowsAChangeWithThreeLinesOfContext) {
  EXPECT_EQ(UnifiedDiff("1\n2\n3\n4\n5\n6\n7\n8\n", "1\n2\n3\n4\nfive\n6\n7\n8\n", "f"),
            "--- f\n+++ f\n"
            "@@ -2,7 +2,7 @@\n"
            " 2\n 3\n 4\n-5\n+five\n 6\n 7\n 8\n");
}

TEST(UnifiedDiff, SplitsChangesFarApartIntoHunks) {
  std::string before;
  std::string after;
  for (int i = 1; i <= 20; ++i) {
    before += std::to_string(i) + "\n";
    after += (i == 2 || i == 18 ? "x" : std::to_string(i)) + "\n";
  }
  std::string diff = UnifiedDiff(before, after, "f");
  EXPECT_NE(diff.find("@@ -1,5 +1,5 @@\n 1\n-2\n+x\n"), std::string::npos) << diff;
  EXPECT_NE(diff.find("@@ -15,6 +15,6 @@\n"), std::string::npos) << diff;
}

TEST(UnifiedDiff, MarksAMissingNewlineAtTheEnd) {
  EXPECT_EQ(UnifiedDiff("a\nb", "a\nb\n", "f"),
            "--- f\n+++ f\n@@ -1,2 +1,2 @@\n a\n-b\n\\ No newline at end of file\n+b\n");
}

TEST(UnifiedDiff, NamesAnEmptyRangeByTheLineBeforeIt) {
  EXPECT_EQ(UnifiedDiff("", "a\n", "f"), "--- f\n+++ f\n@@ -0,0 +1 @@\n+a\n");
  EXPECT_EQ(UnifiedDiff("a\nb\n", "a\n", "f"), "--- f\n+++ f\n@@ -1,2 +1 @@\n a\n-b\n");
}

TEST(UnifiedDiff, StaysCorrectWhenAlmostEveryLineDiffers) {
  std::string before;
  std::string after;
  for (int i = 0; i < 5000; ++i) {
    before += "a" + std::to_string(i) + "\n";
    after += "b" + std::to_string(i) + "\n";
  }
  std::string diff = UnifiedDiff(before, after, "f");
  EXPECT_EQ(diff.rfind("--- f\n+++ f\n@@ -1,5000 +1,5000 @@\n-a0\n", 0), 0u);
}

}  // namespace
}  // namespace accel::format
