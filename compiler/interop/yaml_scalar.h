#ifndef ACCEL_COMPILER_INTEROP_YAML_SCALAR_H_
#define ACCEL_COMPILER_INTEROP_YAML_SCALAR_H_

#include <string>
#include <string_view>

// Scalars as PyYAML's safe_dump writes them in a block mapping, so that Accelerate's loader
// (PyYAML, YAML 1.1) reads back exactly what was written.
namespace accel::interop {

// `text` as a YAML string scalar: plain when every common YAML reader takes the plain text as
// this string (`FSDP`, `127.0.0.1`, `0,1`); single-quoted when plain text would read as a bool,
// null, number or timestamp in YAML 1.1 or 1.2 (`'NO'`, `'1e5'`, `'null'`, `'1234'`) or holds
// YAML syntax (`'a: b'`, `'x #y'`, a leading `-` or `[`); double-quoted with escapes when it
// holds anything beyond printable ASCII (`"caf\xE9"`, `"tab\there"`), as PyYAML does without
// `allow_unicode`. `text` is UTF-8.
std::string YamlString(std::string_view text);

// `value` as a YAML float that PyYAML reads back as the same float: shortest form with a dot,
// and a signed exponent (`0.5`, `100.0`, `1.0e-08`), `.inf`, `-.inf`, `.nan`.
std::string YamlFloat(double value);

}  // namespace accel::interop

#endif  // ACCEL_COMPILER_INTEROP_YAML_SCALAR_H_
