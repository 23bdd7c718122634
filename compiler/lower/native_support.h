#ifndef ACCEL_COMPILER_LOWER_NATIVE_SUPPORT_H_
#define ACCEL_COMPILER_LOWER_NATIVE_SUPPORT_H_

#include <string_view>
#include "llvm/ADT/ArrayRef.h"

#include "compiler/diagnostics/diagnostic.h"

// What the native runtime does with each field a job can reach (native_support.def).
namespace accel::lower {

struct NativeField {
  enum class How { Lowered, NoEffect, Refused };
  // When a Refused field is refused.
  enum class When { Never, WhenSet, WhenSetInSpec, WhenTrue, Unless };
  std::string_view record;
  std::string_view field;
  How how;
  When when = When::Never;
  std::string_view allowed;  // Unless: the one value accepted, as compact JSON
  diag::Kind kind{};         // Refused: its diagnostic
  std::string_view note;     // NoEffect: why; Refused: the hint after `;`
};

// Every row of native_support.def, in table order; a constant, so that lowering's static_asserts
// can read it too.
inline constexpr NativeField kNativeFields[] = {
#define NATIVE_LOWERED(Record, field) \
  {#Record, #field, NativeField::How::Lowered, NativeField::When::Never, "", diag::Kind{}, ""},
#define NATIVE_NO_EFFECT(Record, field, why) \
  {#Record, #field, NativeField::How::NoEffect, NativeField::When::Never, "", diag::Kind{}, why},
#define NATIVE_REFUSED(Record, field, when, diagnostic, hint) \
  {#Record, #field, NativeField::How::Refused, NativeField::When::when, "", diag::Kind::diagnostic, hint},
#define NATIVE_REFUSED_UNLESS(Record, field, allowed, diagnostic, hint) \
  {#Record, #field, NativeField::How::Refused, NativeField::When::Unless, allowed, diag::Kind::diagnostic, hint},
#include "compiler/lower/native_support.def"
};

inline llvm::ArrayRef<NativeField> NativeFields() { return kNativeFields; }

// The row of `record.field`, or null when the table has none.
constexpr const NativeField* FindNativeField(std::string_view record, std::string_view field) {
  for (const NativeField& row : kNativeFields) {
    if (row.record == record && row.field == field) return &row;
  }
  return nullptr;
}

}  // namespace accel::lower

#endif  // ACCEL_COMPILER_LOWER_NATIVE_SUPPORT_H_
