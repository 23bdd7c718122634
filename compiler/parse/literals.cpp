#include "compiler/parse/literals.h"

#include <cstdlib>
#include <utility>

namespace accel::parse {
namespace {

// Splits `800MiB` into the digits `800` and the unit `MiB`.
std::pair<std::string_view, std::string_view> SplitUnit(std::string_view text) {
  size_t i = 0;
  while (i < text.size() && (std::isdigit(static_cast<unsigned char>(text[i])) || text[i] == '_')) ++i;
  return {text.substr(0, i), text.substr(i)};
}

std::optional<int64_t> Scale(std::optional<int64_t> value, int64_t factor) {
  if (!value || *value > INT64_MAX / factor) return std::nullopt;
  return *value * factor;
}

}  // namespace

std::optional<int64_t> ParseIntLiteral(std::string_view text) {
  int64_t value = 0;
  for (char c : text) {
    if (c == '_') continue;
    int digit = c - '0';
    if (value > (INT64_MAX - digit) / 10) return std::nullopt;
    value = value * 10 + digit;
  }
  return value;
}

double ParseFloatLiteral(std::string_view text) {
  std::string digits;
  for (char c : text) {
    if (c != '_') digits += c;
  }
  return std::strtod(digits.c_str(), nullptr);
}

std::optional<int64_t> ParseDurationMs(std::string_view text) {
  auto [digits, unit] = SplitUnit(text);
  std::optional<int64_t> value = ParseIntLiteral(digits);
  if (unit == "ms") return value;
  if (unit == "s") return Scale(value, 1000);
  if (unit == "m") return Scale(value, 60 * 1000);
  if (unit == "h") return Scale(value, 60 * 60 * 1000);
  return std::nullopt;
}

std::optional<int64_t> ParseByteSize(std::string_view text) {
  auto [digits, unit] = SplitUnit(text);
  std::optional<int64_t> value = ParseIntLiteral(digits);
  constexpr int64_t kKi = 1024;
  if (unit == "B") return value;
  if (unit == "KB") return Scale(value, 1000);
  if (unit == "MB") return Scale(value, 1000 * 1000);
  if (unit == "GB") return Scale(value, 1000 * 1000 * 1000);
  if (unit == "TB") return Scale(value, 1000LL * 1000 * 1000 * 1000);
  if (unit == "KiB") return Scale(value, kKi);
  if (unit == "MiB") return Scale(value, kKi * kKi);
  if (unit == "GiB") return Scale(value, kKi * kKi * kKi);
  if (unit == "TiB") return Scale(value, kKi * kKi * kKi * kKi);
  return std::nullopt;
}

UnescapeResult UnescapeString(std::string_view quoted) {
  UnescapeResult result;
  std::string_view body = quoted.substr(1, quoted.size() >= 2 ? quoted.size() - 2 : 0);
  for (size_t i = 0; i < body.size(); ++i) {
    if (body[i] != '\\' || i + 1 == body.size()) {
      result.value += body[i];
      continue;
    }
    char next = body[++i];
    switch (next) {
      case '\\':
      case '"':
        result.value += next;
        break;
      case 'n':
        result.value += '\n';
        break;
      case 't':
        result.value += '\t';
        break;
      default:
        // body[i - 1] is the backslash; it sits at offset i of the quoted text.
        if (!result.bad_escape_at) result.bad_escape_at = i;
        result.value += next;
    }
  }
  return result;
}

}  // namespace accel::parse
