#include "compiler/scalars/bool_words.h"

#include <cctype>
#include <iterator>
#include <string>

namespace accel::scalars {
namespace {

// str_to_bool's two tuples, in order; `yaml11` marks the words PyYAML's bool resolver also
// has. Both readers' lists derive from this one table, so they cannot drift apart.
constexpr BoolWord kBoolWords[] = {
    {"y", true, false},  {"yes", true, true},    {"t", true, false},   {"true", true, true},
    {"on", true, true},  {"1", true, false},     {"n", false, false},  {"no", false, true},
    {"f", false, false}, {"false", false, true}, {"off", false, true}, {"0", false, false},
};

char Lower(char c) { return static_cast<char>(std::tolower(static_cast<unsigned char>(c))); }
char Upper(char c) { return static_cast<char>(std::toupper(static_cast<unsigned char>(c))); }

bool EqualsIgnoringCase(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (Lower(a[i]) != Lower(b[i])) return false;
  }
  return true;
}

// PyYAML's regex spells each word three ways, not case-insensitively: `yEs` is a string.
bool IsYaml11Spelling(std::string_view text, std::string_view word) {
  if (text == word) return true;
  std::string capitalized(word);
  std::string upper(word);
  for (char& c : upper) c = Upper(c);
  if (!capitalized.empty()) capitalized[0] = Upper(capitalized[0]);
  return text == capitalized || text == upper;
}

}  // namespace

const std::vector<BoolWord>& BoolWords() {
  static const std::vector<BoolWord> words(std::begin(kBoolWords), std::end(kBoolWords));
  return words;
}

std::optional<bool> StrToBool(std::string_view text) {
  for (const BoolWord& word : kBoolWords) {
    if (EqualsIgnoringCase(text, word.word)) return word.value;
  }
  return std::nullopt;
}

std::optional<bool> Yaml11Bool(std::string_view text) {
  for (const BoolWord& word : kBoolWords) {
    if (word.yaml11 && IsYaml11Spelling(text, word.word)) return word.value;
  }
  return std::nullopt;
}

}  // namespace accel::scalars
