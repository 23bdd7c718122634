// The strict JSON reader under checkpoint files: what llvm::json lets through and the
// safetensors and index rules must not (duplicate keys, `2.0` as an integer, lone surrogates),
// and the two string escapings writers need (serde_json's and Python's json.dumps').
#include <gtest/gtest.h>

#include <string>

#include "runtime/checkpoint/json.h"

namespace accel::rt::checkpoint {
namespace {

std::string ErrorOf(std::string_view text, JsonProblem* problem = nullptr) {
  llvm::Expected<JsonValue> value = ParseJson(text, problem);
  if (value) return "";
  return llvm::toString(value.takeError());
}

TEST(StrictJson, ReadsObjectsInDocumentOrder) {
  llvm::Expected<JsonValue> value = ParseJson(R"( {"b": [1, -2, 3.5e1, true, null], "a": "x\u00e9\n"} )");
  ASSERT_TRUE(static_cast<bool>(value)) << llvm::toString(value.takeError());
  ASSERT_EQ(value->members.size(), 2u);
  EXPECT_EQ(value->members[0].first, "b");
  EXPECT_EQ(value->Find("a")->text, "x\xc3\xa9\n");
  const JsonValue& items = *value->Find("b");
  EXPECT_EQ(items.items[0].AsUnsigned(), std::optional<uint64_t>(1));
  EXPECT_EQ(items.items[1].AsUnsigned(), std::nullopt);
  EXPECT_EQ(items.items[2].text, "3.5e1");
  EXPECT_TRUE(items.items[3].boolean);
  EXPECT_EQ(items.items[4].kind, JsonValue::Kind::kNull);
}

TEST(StrictJson, RejectsDuplicateKeysAtAnyDepth) {
  JsonProblem problem = JsonProblem::kSyntax;
  EXPECT_NE(ErrorOf(R"({"a":1,"a":1})", &problem).find("duplicate key \"a\""), std::string::npos);
  EXPECT_EQ(problem, JsonProblem::kDuplicateKey);
  EXPECT_NE(ErrorOf(R"({"x":[{"k":1,"j":2,"k":3}]})"), "");
  // Equal after unescaping is equal.
  EXPECT_NE(ErrorOf(R"({"a":1,"\u0061":2})"), "");
}

TEST(StrictJson, AsUnsignedTakesOnlyPlainIntegersThatFit) {
  for (const char* text : {"2.0", "2e0", "-0", "-1", "18446744073709551616", "\"2\""}) {
    llvm::Expected<JsonValue> value = ParseJson(text);
    ASSERT_TRUE(static_cast<bool>(value)) << text;
    EXPECT_EQ(value->AsUnsigned(), std::nullopt) << text;
  }
  EXPECT_EQ(ParseJson("18446744073709551615")->AsUnsigned(), std::optional<uint64_t>(UINT64_MAX));
}

TEST(StrictJson, RejectsInvalidUtf8AndLoneSurrogates) {
  for (std::string text : {"\"\xff\"", "\"\xc0\xaf\"", "\"\xed\xa0\x80\"", "\"\xf4\x90\x80\x80\"",
                           "\"\xe2\x82\"", R"("\ud800")", R"("\udc00")", R"("\ud800\u0041")"}) {
    JsonProblem problem = JsonProblem::kSyntax;
    EXPECT_NE(ErrorOf(text, &problem), "") << text;
    EXPECT_EQ(problem, JsonProblem::kEncoding) << text;
  }
  EXPECT_EQ(ParseJson(R"("\ud83d\ude00")")->text, "\xf0\x9f\x98\x80");
}

TEST(StrictJson, RejectsWhatRfc8259Rejects) {
  for (const char* text : {"", "{", "[1,]", "{\"a\" 1}", "01", "1.", ".5", "+1", "tru", "\"a\tb\"", "\"\\x\"",
                           "{} x", "[1] [2]", "'a'", "{a:1}"}) {
    EXPECT_NE(ErrorOf(text), "") << text;
  }
}

TEST(StrictJson, ErrorsGiveTheByteOffset) { EXPECT_EQ(ErrorOf("[1, 2, x]"), "byte 7: expected a value"); }

TEST(StrictJson, LimitsNestingInsteadOfOverflowingTheStack) {
  EXPECT_EQ(ErrorOf(std::string(64, '[') + std::string(64, ']')), "");
  EXPECT_NE(ErrorOf(std::string(65, '[') + std::string(65, ']')).find("nested deeper than 64"),
            std::string::npos);
  EXPECT_NE(ErrorOf(std::string(1000000, '{')), "");
}

TEST(StrictJson, EscapesStringsAsSerdeAndAsPythonDo) {
  std::string serde, python;
  std::string text = "a\"\\\n\x01\x7f\xc3\xa9\xf0\x9f\x98\x80";
  AppendJsonString(serde, text);
  AppendJsonString(python, text, /*ascii_only=*/true);
  EXPECT_EQ(serde, "\"a\\\"\\\\\\n\\u0001\x7f\xc3\xa9\xf0\x9f\x98\x80\"");
  EXPECT_EQ(python, R"("a\"\\\n\u0001\u007f\u00e9\ud83d\ude00")");
  EXPECT_EQ(ParseJson(serde)->text, text);
  EXPECT_EQ(ParseJson(python)->text, text);
}

}  // namespace
}  // namespace accel::rt::checkpoint
