#ifndef ACCEL_COMPILER_SEMA_VALUE_H_
#define ACCEL_COMPILER_SEMA_VALUE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "compiler/source/source_file.h"

namespace accel::sema {

// Where a resolved value came from; the plan records it for every field.
struct Provenance {
  enum class Kind { Spec, SchemaDefault, Environment };
  Kind kind = Kind::SchemaDefault;
  const source::SourceFile* file = nullptr;  // set for Spec and SchemaDefault
  source::Span span;
  std::string env_var;  // set for Environment

  // `specs/q.accel:3:5`, `default`, or `env ACCELERATE_MIXED_PRECISION`.
  std::string Describe() const;
};

// A fully resolved value: every field of a record is present, defaults applied.
struct Value {
  enum class Kind { None, Bool, Int, Float, String, Duration, Bytes, Enum, Record, List, Map };
  Kind kind = Kind::None;
  bool bool_value = false;
  int64_t int_value = 0;  // Int; Duration in milliseconds; Bytes in bytes
  double float_value = 0;
  std::string text;        // String and path text; Enum member name
  std::string enum_value;  // Enum serialized value (`fp16`)
  std::string type_name;   // Enum or Record type
  // Record fields in schema order, and map entries in spec order: keys[i] names items[i].
  // List elements: items only.
  std::vector<std::string> keys;
  std::vector<Value> items;
  Provenance provenance;

  // The field `name` of a record, or null.
  const Value* Field(std::string_view name) const;
  // How the value reads in messages: `25`, `"runs/x"`, `fp16`, `800s`, `MLP {...}`.
  std::string Describe() const;
};

}  // namespace accel::sema

#endif  // ACCEL_COMPILER_SEMA_VALUE_H_
