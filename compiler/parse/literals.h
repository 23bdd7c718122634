#ifndef ACCEL_COMPILER_PARSE_LITERALS_H_
#define ACCEL_COMPILER_PARSE_LITERALS_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

// Conversions of literal token text to values. Internal to compiler/parse.
namespace accel::parse {

// `1_000` -> 1000. Empty when the value does not fit in int64.
std::optional<int64_t> ParseIntLiteral(std::string_view text);
double ParseFloatLiteral(std::string_view text);
// `800s` -> 800000, `30m` -> 1800000, `250ms` -> 250. Empty on overflow.
std::optional<int64_t> ParseDurationMs(std::string_view text);
// `512MiB` -> 536870912, `1GB` -> 1000000000. Empty on overflow.
std::optional<int64_t> ParseByteSize(std::string_view text);

struct UnescapeResult {
  std::string value;
  // Offset within the quoted text of the backslash of the first invalid escape, if any.
  std::optional<size_t> bad_escape_at;
};
// Strips the quotes of a STRING token and resolves \\ \" \n \t.
UnescapeResult UnescapeString(std::string_view quoted);

}  // namespace accel::parse

#endif  // ACCEL_COMPILER_PARSE_LITERALS_H_
