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

// Every row of native_support.def, in table order.
llvm::ArrayRef<NativeField> NativeFields();

// The row of `record.field`, or null when the table has none (the coverage test fails then).
const NativeField* FindNativeField(std::string_view record, std::string_view field);

}  // namespace accel::lower

#endif  // ACCEL_COMPILER_LOWER_NATIVE_SUPPORT_H_
