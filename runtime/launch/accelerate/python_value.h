#ifndef ACCEL_RUNTIME_LAUNCH_ACCELERATE_PYTHON_VALUE_H_
#define ACCEL_RUNTIME_LAUNCH_ACCELERATE_PYTHON_VALUE_H_

#include <cstdint>
#include <string>
#include <utility>
#include <variant>
#include <vector>

namespace accel::rt::launch::accelerate {

// A value as Accelerate's launcher holds it: what `yaml.safe_load` or argparse made of a
// setting. Accelerate writes most of its worker variables with Python's `str()` of such a value
// (`True`, `1e-05`, `['BertLayer']`), so the launcher must know the Python type, not only text.
struct PyValue;
using PyList = std::vector<PyValue>;
// Insertion-ordered, as Python's dict.
using PyDict = std::vector<std::pair<std::string, PyValue>>;

struct PyValue {
  // A tuple is a list that prints with parentheses (argparse's fp8 precision triple).
  struct Tuple {
    PyList items;
  };
  std::variant<std::monostate, bool, int64_t, double, std::string, PyList, PyDict, Tuple> value;

  bool IsNone() const { return std::holds_alternative<std::monostate>(value); }
  const std::string* String() const { return std::get_if<std::string>(&value); }
};

// Python's `str(value)`: `None`, `True`, `3`, `1e-05`, `text`, `['a', 1]`, `{'k': 'v'}`, `(1, 0)`.
std::string Str(const PyValue& value);

// Python's `repr(value)`: `str` except that strings are quoted as Python quotes them.
std::string Repr(const PyValue& value);

// Python's `bool(value)`: false for None, False, 0, 0.0, and empty strings, lists and dicts.
bool Truthy(const PyValue& value);

// Python's `repr(float)`: the shortest digits that read back to `value`, in fixed notation
// with a `.0` when the decimal exponent is in [-4, 16), else `1e-05`, `1e+16`; `inf`, `nan`.
std::string FloatRepr(double value);

}  // namespace accel::rt::launch::accelerate

#endif  // ACCEL_RUNTIME_LAUNCH_ACCELERATE_PYTHON_VALUE_H_
