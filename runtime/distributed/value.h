#ifndef ACCEL_RUNTIME_DISTRIBUTED_VALUE_H_
#define ACCEL_RUNTIME_DISTRIBUTED_VALUE_H_

#include <cstdint>
#include <functional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <ATen/core/Tensor.h>

namespace accel::rt::distributed {

// A data operation was given something it cannot handle: a leaf of the wrong kind, a missing
// key, an empty container, structures that differ across ranks. The message says which leaf
// (by path, `[0]["labels"]`) and what was expected. Raised before any collective starts, or on
// every rank at once, so that it never leaves a peer waiting.
class OperationError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The nested data Accelerate's operations traverse (catalog §5.1): tensors inside lists,
// tuples, named tuples and ordered string-keyed dicts, with scalars, strings and none as other
// leaves. Containers keep their kind (and a named tuple its type and field names), so an
// operation returns the same shape of data it was given. Copying a Value copies the structure
// and shares the tensors, as Python references do.
class Value {
 public:
  enum class Kind : uint8_t {
    kNone,
    kBool,
    kInt,
    kFloat,
    kString,
    kTensor,
    kList,
    kTuple,
    kNamedTuple,
    kDict
  };

  Value() = default;  // none
  static Value Bool(bool value);
  static Value Int(int64_t value);
  static Value Float(double value);
  static Value String(std::string value);
  static Value Tensor(at::Tensor tensor);
  static Value List(std::vector<Value> items);
  static Value Tuple(std::vector<Value> items);
  // `fields` and `items` must have the same length.
  static Value NamedTuple(std::string type_name, std::vector<std::string> fields, std::vector<Value> items);
  // Insertion order is kept; duplicate keys are an OperationError.
  static Value Dict(std::vector<std::pair<std::string, Value>> entries);

  Kind kind() const { return kind_; }
  bool is_none() const { return kind_ == Kind::kNone; }
  bool is_tensor() const { return kind_ == Kind::kTensor; }
  // Lists, tuples and named tuples: ordered items without keys (a named tuple also has keys).
  bool is_sequence() const {
    return kind_ == Kind::kList || kind_ == Kind::kTuple || kind_ == Kind::kNamedTuple;
  }
  bool is_container() const { return is_sequence() || kind_ == Kind::kDict; }

  // Accessors; each throws OperationError when the kind is not the one asked for.
  bool as_bool() const;
  int64_t as_int() const;
  double as_float() const;
  const std::string& as_string() const;
  const at::Tensor& tensor() const;

  // A container's elements, in order (a dict's values).
  const std::vector<Value>& items() const { return items_; }
  std::vector<Value>& items() { return items_; }
  // A dict's keys or a named tuple's field names, parallel to items(); empty otherwise.
  const std::vector<std::string>& keys() const { return keys_; }
  // A named tuple's type name.
  const std::string& type_name() const { return text_; }
  // The element under `key` of a dict or named tuple, or null.
  const Value* Find(std::string_view key) const;

  // This container rebuilt around new elements (same kind, keys and type name). `items` must
  // have as many elements as this container.
  Value WithItems(std::vector<Value> items) const;

  static const char* KindName(Kind kind);

 private:
  Kind kind_ = Kind::kNone;
  bool bool_ = false;
  int64_t int_ = 0;
  double float_ = 0;
  std::string text_;  // a string's text, or a named tuple's type name
  at::Tensor tensor_;
  std::vector<Value> items_;
  std::vector<std::string> keys_;
};

// A leaf's position for messages: `[2]["labels"].start` style (named tuple fields with a dot).
std::string ChildPath(const std::string& parent, const Value& container, size_t index);

// Calls `visit(path, tensor)` for every tensor leaf, depth first in element order (the order
// every operation packs and unpacks leaves in).
void ForEachTensor(const Value& value,
                   const std::function<void(const std::string&, const at::Tensor&)>& visit);

// A short, readable rendering: `{"x": float32[4, 3], "n": 2}`. Tensors print dtype and shape.
std::string Describe(const Value& value);

// The layout of `value` for comparing across ranks: kinds, keys, and for each tensor its dtype
// and shape (or only its number of dimensions when `dims_only`).
std::string Layout(const Value& value, bool dims_only = false);

// Same structure, same scalars and strings, and tensors with equal dtype, shape and elements.
bool Identical(const Value& a, const Value& b);

}  // namespace accel::rt::distributed

#endif  // ACCEL_RUNTIME_DISTRIBUTED_VALUE_H_
