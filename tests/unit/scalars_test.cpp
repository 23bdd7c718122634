#include "compiler/scalars/bool_words.h"

#include <optional>
#include <string>

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

}  // namespace
}  // namespace accel::scalars
