#ifndef ACCEL_COMPILER_SCALARS_NUMBER_WORDS_H_
#define ACCEL_COMPILER_SCALARS_NUMBER_WORDS_H_

#include <optional>
#include <string_view>

// Which plain scalars Accelerate's readers take for numbers, as hand-written matchers of the
// readers' own patterns. Each matches exactly the strings its pattern matches (a test compares
// them with std::regex over every short string); they exist because compiling those patterns
// with std::regex cost every `accelc check` process more than checking a config does.
namespace accel::scalars {

// PyYAML's YAML 1.1 int resolver (yaml/resolver.py) minus sexagesimal numbers, which no config
// uses: `[-+]?(0b[01_]+|0[0-7_]+|0|[1-9][0-9_]*|0x[0-9a-fA-F_]+)`.
bool IsYaml11Int(std::string_view text);

// PyYAML's YAML 1.1 float resolver minus sexagesimal numbers:
// `[-+]?([0-9][0-9_]*)?\.[0-9_]*([eE][-+][0-9]+)?|[-+]?\.(inf|Inf|INF)|\.(nan|NaN|NAN)`.
bool IsYaml11Float(std::string_view text);

// A number in Python's json module (RFC 8259): `-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][-+]?[0-9]+)?`.
bool IsJsonNumber(std::string_view text);

// A quantity as the `.accel` language writes it, `60s` or `512MiB`:
// `([0-9][0-9_]*)(ms|s|m|h|B|KB|MB|GB|TB|KiB|MiB|GiB|TiB)`. Both views point into `text`.
struct QuantityWords {
  std::string_view digits;  // may hold `_` separators
  std::string_view unit;
};
// The digits and the unit of `text`, or empty when `text` is not a quantity.
std::optional<QuantityWords> SplitQuantity(std::string_view text);

}  // namespace accel::scalars

#endif  // ACCEL_COMPILER_SCALARS_NUMBER_WORDS_H_
