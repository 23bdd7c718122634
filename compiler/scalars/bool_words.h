#ifndef ACCEL_COMPILER_SCALARS_BOOL_WORDS_H_
#define ACCEL_COMPILER_SCALARS_BOOL_WORDS_H_

#include <optional>
#include <string_view>
#include <vector>

// The words that Accelerate's Python readers take for a boolean, in one table with two views:
// they model two different readers, which disagree (`y` and `1` are booleans to str_to_bool
// but strings to PyYAML; `yEs` is one to str_to_bool only).
namespace accel::scalars {

// One boolean word, lower case.
struct BoolWord {
  std::string_view word;
  bool value;
  // PyYAML's YAML 1.1 resolver also reads the plain scalar as a bool, in its lower-case,
  // Capitalized and UPPER-CASE spellings (`on`, `On`, `ON`).
  bool yaml11;
};

// Every word of Accelerate's `str_to_bool` (accelerate/utils/environment.py), in its order:
// `y yes t true on 1`, then `n no f false off 0`. The table lives for the whole program.
const std::vector<BoolWord>& BoolWords();

// Python's `str_to_bool`, which Accelerate uses for every boolean environment variable and
// which the checker applies to a string in a config file's boolean field: case-insensitive,
// any word of BoolWords(). Empty when `text` is none of them (Python raises ValueError).
std::optional<bool> StrToBool(std::string_view text);

// The bool a plain YAML scalar `text` resolves to in PyYAML (yaml/resolver.py, YAML 1.1):
// `yes|Yes|YES|no|No|NO|true|...|off|Off|OFF`. Empty when PyYAML reads it as something else
// (`y`, `n`, `1` and `yEs` are strings or ints to PyYAML, though the YAML 1.1 spec lists `y`).
std::optional<bool> Yaml11Bool(std::string_view text);

}  // namespace accel::scalars

#endif  // ACCEL_COMPILER_SCALARS_BOOL_WORDS_H_
