#include "compiler/scalars/number_words.h"

namespace accel::scalars {
namespace {

bool IsDigit(char c) { return c >= '0' && c <= '9'; }
bool IsOctal(char c) { return c >= '0' && c <= '7'; }
bool IsBinary(char c) { return c == '0' || c == '1'; }
bool IsHex(char c) { return IsDigit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }

// True when `text` is not empty and every character is `_` or passes `digit`.
template <typename Digit>
bool AllDigitsOrUnderscores(std::string_view text, Digit digit) {
  if (text.empty()) return false;
  for (char c : text) {
    if (c != '_' && !digit(c)) return false;
  }
  return true;
}

// Drops one leading character of `signs` from `text`; returns whether there was one.
bool SkipSign(std::string_view& text, std::string_view signs) {
  if (text.empty() || signs.find(text[0]) == std::string_view::npos) return false;
  text.remove_prefix(1);
  return true;
}

// Consumes the longest prefix of `text` whose characters pass `keep`; returns it.
template <typename Keep>
std::string_view TakeWhile(std::string_view& text, Keep keep) {
  size_t n = 0;
  while (n < text.size() && keep(text[n])) ++n;
  std::string_view taken = text.substr(0, n);
  text.remove_prefix(n);
  return taken;
}

bool IsDigitOrUnderscore(char c) { return c == '_' || IsDigit(c); }

}  // namespace

bool IsYaml11Int(std::string_view text) {
  SkipSign(text, "+-");
  if (text == "0") return true;
  if (text.size() >= 2 && text[0] == '0' && text[1] == 'b') {
    if (AllDigitsOrUnderscores(text.substr(2), IsBinary)) return true;
  }
  if (text.size() >= 2 && text[0] == '0' && text[1] == 'x') {
    if (AllDigitsOrUnderscores(text.substr(2), IsHex)) return true;
  }
  if (!text.empty() && text[0] == '0') return AllDigitsOrUnderscores(text.substr(1), IsOctal);
  return !text.empty() && text[0] >= '1' && text[0] <= '9' &&
         (text.size() == 1 || AllDigitsOrUnderscores(text.substr(1), IsDigit));
}

bool IsYaml11Float(std::string_view text) {
  for (std::string_view nan : {".nan", ".NaN", ".NAN"}) {
    if (text == nan) return true;
  }
  SkipSign(text, "+-");
  for (std::string_view inf : {".inf", ".Inf", ".INF"}) {
    if (text == inf) return true;
  }
  // ([0-9][0-9_]*)? \. [0-9_]* ([eE][-+][0-9]+)?
  if (!text.empty() && IsDigit(text[0])) TakeWhile(text, IsDigitOrUnderscore);
  if (text.empty() || text[0] != '.') return false;
  text.remove_prefix(1);
  TakeWhile(text, IsDigitOrUnderscore);
  if (text.empty()) return true;
  if (text[0] != 'e' && text[0] != 'E') return false;
  text.remove_prefix(1);
  if (!SkipSign(text, "+-")) return false;
  return !TakeWhile(text, IsDigit).empty() && text.empty();
}

bool IsJsonNumber(std::string_view text) {
  SkipSign(text, "-");
  if (text.empty() || !IsDigit(text[0])) return false;
  if (text[0] == '0') {
    text.remove_prefix(1);
  } else {
    TakeWhile(text, IsDigit);
  }
  if (!text.empty() && text[0] == '.') {
    text.remove_prefix(1);
    if (TakeWhile(text, IsDigit).empty()) return false;
  }
  if (!text.empty() && (text[0] == 'e' || text[0] == 'E')) {
    text.remove_prefix(1);
    SkipSign(text, "+-");
    if (TakeWhile(text, IsDigit).empty()) return false;
  }
  return text.empty();
}

std::optional<QuantityWords> SplitQuantity(std::string_view text) {
  if (text.empty() || !IsDigit(text[0])) return std::nullopt;
  std::string_view rest = text;
  // No unit has a digit or `_`, so the digits end where the unit begins.
  std::string_view digits = TakeWhile(rest, IsDigitOrUnderscore);
  for (std::string_view unit :
       {"ms", "s", "m", "h", "B", "KB", "MB", "GB", "TB", "KiB", "MiB", "GiB", "TiB"}) {
    if (rest == unit) return QuantityWords{digits, rest};
  }
  return std::nullopt;
}

}  // namespace accel::scalars
