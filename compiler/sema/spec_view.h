#ifndef ACCEL_COMPILER_SEMA_SPEC_VIEW_H_
#define ACCEL_COMPILER_SEMA_SPEC_VIEW_H_

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <string_view>
#include <variant>

#include "compiler/sema/value.h"

// What the generated typed views of the stdlib (`stdlib/spec_views.h`, written at build time
// from stdlib/*.accel) stand on. A view reads a checked `sema::Value` through accessors named
// and typed after the schema, so code that reads a spec (lowering) names no field and no enum
// member as a string: a field renamed in the stdlib, or a member added to an enum a `switch`
// handles, is a compile error there. The Value stays reachable for provenance and diagnostics.
namespace accel::sema::views {

// EnumTable<E>: the stdlib enum's name, and its members' names and serialized values in
// declaration order, which is the generated `enum class`'s order. Specialized by the
// generated header only.
template <typename E>
struct EnumTable;

// The checker guarantees what a view reads; a miss is a compiler bug, reported as one.
[[noreturn]] inline void InternalError(std::string_view what, std::string_view name, std::string_view in) {
  std::fprintf(stderr, "internal error: a typed view found no %.*s `%.*s` in `%.*s`\n",
               static_cast<int>(what.size()), what.data(), static_cast<int>(name.size()), name.data(),
               static_cast<int>(in.size()), in.data());
  std::abort();
}

// Whether `value` holds a member of enum E (a union's alternative may be an enum).
template <typename E>
bool Holds(const Value& value) {
  return value.kind == Value::Kind::Enum && value.type_name == EnumTable<E>::kName;
}

// The member of E that `value` holds; `value` must hold one.
template <typename E>
E EnumOf(const Value& value) {
  if (Holds<E>(value)) {
    const auto& names = EnumTable<E>::kNames;
    for (size_t i = 0; i < names.size(); ++i)
      if (names[i] == value.text) return static_cast<E>(i);
  }
  InternalError("member", value.text, EnumTable<E>::kName);
}

// The member's value as files write it (`fp16` for PrecisionType::FP16).
template <typename E>
constexpr std::string_view SerializedValue(E member) {
  return EnumTable<E>::kValues[static_cast<size_t>(member)];
}

// The member's name as a spec writes it (`FP16`).
template <typename E>
constexpr std::string_view MemberName(E member) {
  return EnumTable<E>::kNames[static_cast<size_t>(member)];
}

// A float field reads an integer literal as its number (`lr = 1`).
inline double NumberOf(const Value& value) {
  return value.kind == Value::Kind::Int ? static_cast<double>(value.int_value) : value.float_value;
}

// The base of every generated record view: the record's Value and its fields by name.
class RecordView {
 public:
  explicit RecordView(const Value& record) : record_(&record) {}
  // The record itself, for its provenance and for code that walks it generically.
  const Value& value() const { return *record_; }

 protected:
  const Value& FieldNamed(std::string_view name) const {
    const Value* field = record_->Field(name);
    if (field == nullptr) InternalError("field", name, record_->type_name);
    return *field;
  }

 private:
  const Value* record_;
};

// The alternative of the generated view variant V whose record the value holds.
template <typename V, size_t I = 0>
V VariantOf(const Value& value) {
  if constexpr (I == std::variant_size_v<V>) {
    InternalError("alternative", value.type_name, "a union");
  } else {
    using Alternative = std::variant_alternative_t<I, V>;
    if (value.kind == Value::Kind::Record && value.type_name == Alternative::kName) return V(Alternative(value));
    return VariantOf<V, I + 1>(value);
  }
}

}  // namespace accel::sema::views

#endif  // ACCEL_COMPILER_SEMA_SPEC_VIEW_H_
