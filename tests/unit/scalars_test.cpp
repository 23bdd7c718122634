#include "compiler/scalars/bool_words.h"

#include <functional>
#include <optional>
#include <regex>
#include <string>
#include <string_view>

#include "compiler/scalars/number_words.h"

#include <gtest/gtest.h>

namespace accel::scalars {
namespace {

// Accelerate's str_to_bool (accelerate/utils/environment.py): these twelve words, any case.
TEST(BoolWords, StrToBoolTakesEveryAccelerateWordInAnyCase) {
  for (const char* word : {"y", "yes", "t", "true", "on", "1"}) {
    EXPECT_EQ(StrToBool(word), std::optional<bool>(true)) << word;
  }
  for (const char* word : {"n", "no", "f", "false", "off", "0"}) {
    EXPECT_EQ(StrToBool(word), std::optional<bool>(false)) << word;
  }
  EXPECT_EQ(StrToBool("YES"), std::optional<bool>(true));
  EXPECT_EQ(StrToBool("yEs"), std::optional<bool>(true));
  EXPECT_EQ(StrToBool("Off"), std::optional<bool>(false));
  EXPECT_EQ(StrToBool("N"), std::optional<bool>(false));
}

TEST(BoolWords, StrToBoolRejectsOtherText) {
  for (const char* text : {"", "2", "yess", "ye", "none", "null", " yes", "true ", "+1", "00"}) {
    EXPECT_EQ(StrToBool(text), std::nullopt) << "`" << text << "`";
  }
}

// PyYAML's resolver (yaml/resolver.py): three spellings of six words, and not `y`/`n`, which
// the YAML 1.1 spec lists but PyYAML reads as strings.
TEST(BoolWords, Yaml11BoolTakesPyYamlsSpellings) {
  for (const char* word : {"yes", "Yes", "YES", "true", "True", "TRUE", "on", "On", "ON"}) {
    EXPECT_EQ(Yaml11Bool(word), std::optional<bool>(true)) << word;
  }
  for (const char* word : {"no", "No", "NO", "false", "False", "FALSE", "off", "Off", "OFF"}) {
    EXPECT_EQ(Yaml11Bool(word), std::optional<bool>(false)) << word;
  }
}

TEST(BoolWords, Yaml11BoolReadsOtherSpellingsAsNotBool) {
  for (const char* text : {"y", "Y", "n", "N", "t", "f", "1", "0", "yEs", "oN", "tRUE", "", "null", "~"}) {
    EXPECT_EQ(Yaml11Bool(text), std::nullopt) << "`" << text << "`";
  }
}

// The JSON Schema's pattern lists the words in this order; a reordering changes generated docs.
TEST(BoolWords, TableIsStrToBoolsTuplesInOrder) {
  std::string words;
  for (const BoolWord& word : BoolWords()) words += std::string(word.word) + (word.value ? "+ " : "- ");
  EXPECT_EQ(words, "y+ yes+ t+ true+ on+ 1+ n- no- f- false- off- 0- ");
}

// Calls `visit` with every string of up to `max_length` characters of `alphabet`.
void ForEachString(std::string_view alphabet, size_t max_length,
                   const std::function<void(const std::string&)>& visit) {
  std::string text;
  std::function<void()> extend = [&] {
    visit(text);
    if (text.size() == max_length) return;
    for (char c : alphabet) {
      text.push_back(c);
      extend();
      text.pop_back();
    }
  };
  extend();
}

// The characters the number patterns treat differently, and a few they do not know.
constexpr std::string_view kNumberAlphabet = "0178abxeE._+-";
// Words the patterns have that an exhaustive walk of short strings cannot reach.
const char* const kNumberWords[] = {".inf",    "-.inf",  "+.Inf", ".INF",    ".nan",    ".NaN", ".NAN",
                                    "-.nan",   ".inF",   "inf",   ".Nan",    "0x1F_a",  "0xg",  "1e+10",
                                    "1.5e-07", "-0.0e5", "1.e5",  "1_000.5", "0b",      "0x",   "00",
                                    "0o17",    "1E+",    "--1",   "1.2.3",   "12345678"};

// The matchers replace these patterns of the readers, taken as written in PyYAML's
// yaml/resolver.py (minus sexagesimal numbers) and the JSON grammar; std::regex is the oracle.
TEST(NumberWords, EachMatcherAcceptsExactlyWhatItsPatternMatches) {
  const std::regex yaml_int("[-+]?(0b[01_]+|0[0-7_]+|0|[1-9][0-9_]*|0x[0-9a-fA-F_]+)");
  const std::regex yaml_float(
      R"([-+]?([0-9][0-9_]*)?\.[0-9_]*([eE][-+][0-9]+)?|[-+]?\.(inf|Inf|INF)|\.(nan|NaN|NAN))");
  const std::regex json_number(R"(-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][-+]?[0-9]+)?)");
  int numbers = 0;
  auto compare = [&](const std::string& text) {
    ASSERT_EQ(IsYaml11Int(text), std::regex_match(text, yaml_int)) << "`" << text << "`";
    ASSERT_EQ(IsYaml11Float(text), std::regex_match(text, yaml_float)) << "`" << text << "`";
    ASSERT_EQ(IsJsonNumber(text), std::regex_match(text, json_number)) << "`" << text << "`";
    numbers += IsYaml11Int(text) || IsYaml11Float(text) || IsJsonNumber(text);
  };
  ForEachString(kNumberAlphabet, 5, compare);
  for (const char* word : kNumberWords) compare(word);
  // The walk reaches both sides of every pattern.
  EXPECT_GT(numbers, 1000);
}

TEST(NumberWords, SplitQuantityMatchesItsPatternAndItsGroups) {
  const std::regex quantity("([0-9][0-9_]*)(ms|s|m|h|B|KB|MB|GB|TB|KiB|MiB|GiB|TiB)");
  int quantities = 0;
  auto compare = [&](const std::string& text) {
    std::smatch m;
    bool matched = std::regex_match(text, m, quantity);
    std::optional<QuantityWords> split = SplitQuantity(text);
    ASSERT_EQ(split.has_value(), matched) << "`" << text << "`";
    if (!matched) return;
    ++quantities;
    EXPECT_EQ(split->digits, m[1].str()) << "`" << text << "`";
    EXPECT_EQ(split->unit, m[2].str()) << "`" << text << "`";
  };
  ForEachString("01_msBhKiGx", 4, compare);
  for (const char* word : {"512MiB", "10TiB", "1_000ms", "60s", "3h", "5GB", "5Gb", "5 s", "s", "5sm"})
    compare(word);
  EXPECT_GT(quantities, 100);
}

}  // namespace
}  // namespace accel::scalars
