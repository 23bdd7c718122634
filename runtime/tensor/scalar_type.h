#ifndef ACCEL_RUNTIME_TENSOR_SCALAR_TYPE_H_
#define ACCEL_RUNTIME_TENSOR_SCALAR_TYPE_H_

#include <c10/core/ScalarType.h>

#include <optional>
#include <string>

#include "runtime/checkpoint/dtype.h"

// The at::ScalarType view of the runtime's one dtype table (runtime/checkpoint/dtypes.def, its
// Torch column): the torch side names dtypes through these, never through a table of its own.
namespace accel::rt::tensor {

// The ScalarType of `dtype`; unset where the LibTorch we build against has none (float8,
// uint16/32/64, F4, F6 and Accelerate's CustomDtype sizes).
std::optional<c10::ScalarType> ScalarTypeOf(checkpoint::Dtype dtype);

// The dtype whose row names `type`; unset for a type without one (complex128, quantized types,
// Undefined).
std::optional<checkpoint::Dtype> DtypeOf(c10::ScalarType type);

// The safetensors string of `type` (`F32`, `BF16`) as a literal; null when no row names `type`
// or its row has no safetensors string.
const char* SafetensorsName(c10::ScalarType type);

// What torch prints for `type` (`float32`, `bfloat16`, `bool`): its row's name, or c10's own
// (`ComplexDouble`) for a type without a row.
std::string TorchName(c10::ScalarType type);

}  // namespace accel::rt::tensor

#endif  // ACCEL_RUNTIME_TENSOR_SCALAR_TYPE_H_
