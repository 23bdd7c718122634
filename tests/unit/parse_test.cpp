#include "compiler/parse/parse.h"

#include <gtest/gtest.h>

#include "compiler/parse/guards.h"
#include "compiler/parse/literals.h"

namespace accel::parse {
namespace {

struct Parsed {
  std::unique_ptr<source::SourceFile> source;
  diag::DiagnosticEngine diagnostics;
  ast::File file;
};

std::unique_ptr<Parsed> ParseText(const std::string& text) {
  auto parsed = std::make_unique<Parsed>();
  parsed->source = std::make_unique<source::SourceFile>("t.accel", text);
  parsed->file = Parse(*parsed->source, parsed->diagnostics);
  return parsed;
}

TEST(Parse, SchemaDeclarationsKeepDocsDefaultsEnvAndConstraints) {
  auto p = ParseText(R"(
/// Buckets.
kwargs K {
  /// Size in MiB.
  bucket_cap_mb: int = 25  where bucket_cap_mb > 0
  stage: int = 2 from env A_STAGE, B_STAGE
  names: list<string>?
  rule K001 error "needs stage 3": stage == 3
}
enum E { a = "x", b }
)");
  ASSERT_FALSE(p->diagnostics.has_errors()) << p->diagnostics.diagnostics()[0].message;
  ASSERT_EQ(p->file.records.size(), 1u);
  const ast::RecordDecl& k = p->file.records[0];
  EXPECT_EQ(k.kind, "kwargs");
  EXPECT_EQ(k.doc, "Buckets.");
  ASSERT_EQ(k.fields.size(), 3u);
  EXPECT_EQ(k.fields[0].doc, "Size in MiB.");
  EXPECT_EQ(k.fields[0].default_value->int_value, 25);
  ASSERT_NE(k.fields[0].constraint, nullptr);
  EXPECT_EQ(k.fields[0].constraint->text, ">");
  ASSERT_EQ(k.fields[1].env_vars.size(), 2u);
  EXPECT_EQ(k.fields[1].env_vars[1].text, "B_STAGE");
  EXPECT_TRUE(k.fields[2].type.alternatives[0].optional);
  EXPECT_EQ(k.fields[2].type.alternatives[0].arguments[0].alternatives[0].name.text, "string");
  ASSERT_EQ(k.rules.size(), 1u);
  EXPECT_EQ(k.rules[0].code.text, "K001");
  EXPECT_EQ(k.rules[0].message, "needs stage 3");
  ASSERT_EQ(p->file.enums.size(), 1u);
  EXPECT_EQ(p->file.enums[0].members[0].value, "x");
  EXPECT_EQ(p->file.enums[0].members[1].value, "b");
}

TEST(Parse, JobStatementsLiteralsAndSpans) {
  auto p =
      ParseText("job j {\n  a.b = 800s\n  c { d = 1_000; e = 2GiB }\n  f = T { g = [1, -2.5, \"s\"] }\n}\n");
  ASSERT_FALSE(p->diagnostics.has_errors());
  ASSERT_EQ(p->file.jobs.size(), 1u);
  const ast::Block& body = p->file.jobs[0].body;
  ASSERT_EQ(body.statements.size(), 3u);
  const ast::Statement& first = body.statements[0];
  ASSERT_EQ(first.path.size(), 2u);
  EXPECT_EQ(first.value->kind, ast::ExprKind::Duration);
  EXPECT_EQ(first.value->int_value, 800000);
  EXPECT_EQ(p->source->Slice(first.value->span), "800s");
  const ast::Block& c = *body.statements[1].block;
  EXPECT_EQ(c.statements[0].value->int_value, 1000);
  EXPECT_EQ(c.statements[1].value->int_value, 2LL << 30);
  const ast::Expr& record = *body.statements[2].value;
  EXPECT_EQ(record.kind, ast::ExprKind::Record);
  EXPECT_EQ(record.text, "T");
  const ast::Expr& list = *record.block->statements[0].value;
  ASSERT_EQ(list.operands.size(), 3u);
  EXPECT_DOUBLE_EQ(list.operands[1]->float_value, -2.5);
  EXPECT_EQ(p->source->Slice(list.operands[1]->span), "-2.5");
  EXPECT_EQ(list.operands[2]->text, "s");
}

TEST(Parse, SpansAreBytesEvenAfterMultiByteCharacters) {
  auto p = ParseText("// héllo wörld\njob j { x = \"ü\"; y = 1 }\n");
  ASSERT_FALSE(p->diagnostics.has_errors());
  const ast::Statement& y = p->file.jobs[0].body.statements[1];
  EXPECT_EQ(p->source->Slice(y.path[0].span), "y");
  EXPECT_EQ(p->source->Slice(y.value->span), "1");
}

TEST(Parse, SoftKeywordsCanNameFields) {
  auto p = ParseText("record R { config: int = 1  env: string = \"x\" }\njob j { config = 2 }\n");
  ASSERT_FALSE(p->diagnostics.has_errors());
  EXPECT_EQ(p->file.records[0].fields[0].name.text, "config");
  EXPECT_EQ(p->file.records[0].fields[1].name.text, "env");
}

TEST(Parse, ReportsEverySyntaxErrorWithLocationAndExpectation) {
  auto p = ParseText("job j {\n  a = \n}\njob k { b = 1 $ }\n");
  const auto& diagnostics = p->diagnostics.diagnostics();
  ASSERT_GE(diagnostics.size(), 2u);
  EXPECT_EQ(diagnostics[0].code, "A1001");
  EXPECT_EQ(p->source->Locate(diagnostics[0].span.begin).line, 3u);
  EXPECT_NE(diagnostics[0].message.find("unexpected `}`"), std::string::npos) << diagnostics[0].message;
  bool saw_character = false;
  for (const diag::Diagnostic& d : diagnostics) {
    if (d.code == "A1002") {
      saw_character = true;
      EXPECT_EQ(p->source->Slice(d.span), "$");
    }
  }
  EXPECT_TRUE(saw_character);
}

TEST(Parse, RecoveryDropsBrokenStatementsAndMarksTheirBlock) {
  auto p = ParseText("job j {\n  a = 1\n  b { c = 2; d = = 3 }\n  e = 4\n}\n");
  ASSERT_TRUE(p->diagnostics.has_errors());
  const ast::Block& body = p->file.jobs[0].body;
  EXPECT_FALSE(body.recovered);
  ASSERT_EQ(body.statements.size(), 3u);  // a, b, e survive
  const ast::Block& b = *body.statements[1].block;
  EXPECT_TRUE(b.recovered);
  ASSERT_EQ(b.statements.size(), 1u);  // c survives, d is dropped
  EXPECT_EQ(b.statements[0].path[0].text, "c");
  EXPECT_EQ(body.statements[2].value->int_value, 4);
}

TEST(Parse, UnterminatedInputReportsEndOfFile) {
  auto p = ParseText("job j { a = 1");
  ASSERT_TRUE(p->diagnostics.has_errors());
  EXPECT_NE(p->diagnostics.diagnostics().back().message.find("end of file"), std::string::npos);
}

TEST(Parse, IntegerOverflowIsADiagnosticNotACrash) {
  auto p = ParseText("job j { a = 99999999999999999999 }");
  ASSERT_EQ(p->diagnostics.diagnostics().size(), 1u);
  EXPECT_EQ(p->diagnostics.diagnostics()[0].code, "A1003");
}

TEST(Parse, BadEscapeIsReportedAtTheBackslash) {
  auto p = ParseText("job j { a = \"x\\qy\" }");
  ASSERT_EQ(p->diagnostics.diagnostics().size(), 1u);
  const diag::Diagnostic& d = p->diagnostics.diagnostics()[0];
  EXPECT_EQ(d.code, "A1004");
  EXPECT_EQ(p->source->Slice(d.span), "\\q");
}

TEST(Parse, LetImportMapAndFieldModifiers) {
  auto p = ParseText(R"(import "a.accel" as a
let n: int = 3
record R { x: int = 1  alias old  deprecated "gone"  where x in [1, 2] }
job j { m = { "k": 1, v: 2 } }
)");
  ASSERT_FALSE(p->diagnostics.has_errors()) << p->diagnostics.diagnostics()[0].message;
  ASSERT_EQ(p->file.imports.size(), 1u);
  EXPECT_EQ(p->file.imports[0].path, "a.accel");
  EXPECT_EQ(p->file.imports[0].alias->text, "a");
  ASSERT_EQ(p->file.lets.size(), 1u);
  EXPECT_EQ(p->file.lets[0].value->int_value, 3);
  const ast::FieldDecl& x = p->file.records[0].fields[0];
  EXPECT_EQ(x.aliases[0].text, "old");
  EXPECT_EQ(*x.deprecated, "gone");
  EXPECT_EQ(x.constraint->text, "in");
  const ast::Expr& map = *p->file.jobs[0].body.statements[0].value;
  EXPECT_EQ(map.kind, ast::ExprKind::Map);
  EXPECT_EQ(map.path[0].text, "k");
  EXPECT_EQ(map.path[1].text, "v");
}

TEST(Parse, InvalidUtf8StopsWithOneDiagnosticAtTheByte) {
  auto p = ParseText("job j {}\n// \xe2\x28\xa1\n");
  ASSERT_EQ(p->diagnostics.diagnostics().size(), 1u);
  EXPECT_EQ(p->diagnostics.diagnostics()[0].code, "A1005");
  EXPECT_EQ(p->diagnostics.diagnostics()[0].span.begin, 12u);
}

TEST(Parse, DeepNestingIsRejectedWithoutRecursingIntoIt) {
  auto p = ParseText("job j { a = " + std::string(5000, '(') + "1" + std::string(5000, ')') + " }");
  ASSERT_EQ(p->diagnostics.diagnostics().size(), 1u);
  EXPECT_EQ(p->diagnostics.diagnostics()[0].code, "A1006");
  std::string chain = "job j { a = 1";
  for (int i = 0; i < 20000; ++i) chain += "+1";
  auto q = ParseText(chain + " }");
  ASSERT_EQ(q->diagnostics.diagnostics().size(), 1u);
  EXPECT_EQ(q->diagnostics.diagnostics()[0].code, "A1006");
}

TEST(Parse, NestingJustUnderTheLimitParses) {
  auto p = ParseText("job j { a = " + std::string(200, '[') + std::string(200, ']') + " }");
  EXPECT_FALSE(p->diagnostics.has_errors());
}

TEST(Guards, FirstInvalidUtf8FindsEveryKindOfBadSequence) {
  EXPECT_FALSE(FirstInvalidUtf8("plain ascii, é, 日本, 😀").has_value());
  EXPECT_EQ(FirstInvalidUtf8("ab\xff"), 2u);            // never valid
  EXPECT_EQ(FirstInvalidUtf8("a\xc3"), 1u);             // truncated
  EXPECT_EQ(FirstInvalidUtf8("\xc0\xaf"), 0u);          // overlong `/`
  EXPECT_EQ(FirstInvalidUtf8("x\xed\xa0\x80"), 1u);     // UTF-16 surrogate
  EXPECT_EQ(FirstInvalidUtf8("\xf4\x90\x80\x80"), 0u);  // above U+10FFFF
}

TEST(Literals, UnitsScale) {
  EXPECT_EQ(*ParseDurationMs("250ms"), 250);
  EXPECT_EQ(*ParseDurationMs("30m"), 1800000);
  EXPECT_EQ(*ParseDurationMs("2h"), 7200000);
  EXPECT_EQ(*ParseByteSize("1GB"), 1000000000);
  EXPECT_EQ(*ParseByteSize("512MiB"), 536870912);
  EXPECT_FALSE(ParseByteSize("99999999999TiB").has_value());
  EXPECT_FALSE(ParseIntLiteral("9223372036854775808").has_value());
  EXPECT_EQ(*ParseIntLiteral("9223372036854775807"), INT64_MAX);
}

}  // namespace
}  // namespace accel::parse
