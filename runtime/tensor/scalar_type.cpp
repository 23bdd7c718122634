#include "runtime/tensor/scalar_type.h"

#include <iterator>

namespace accel::rt::tensor {
namespace {

// The same rows as checkpoint::AllDtypes(), in the same order, keeping only the Torch column.
constexpr c10::ScalarType kScalarTypes[] = {
#define ACCEL_DTYPE(Id, safetensors, file_bits, estimate_bytes, integral, name, aliases, Torch) \
  c10::ScalarType::Torch,
#include "runtime/checkpoint/dtypes.def"
};

}  // namespace

std::optional<c10::ScalarType> ScalarTypeOf(checkpoint::Dtype dtype) {
  // checkpoint::Info rejects a value outside the enum before it indexes anything here.
  size_t index = static_cast<size_t>(checkpoint::Info(dtype).dtype);
  c10::ScalarType type = kScalarTypes[index];
  if (type == c10::ScalarType::Undefined) return std::nullopt;
  return type;
}

std::optional<checkpoint::Dtype> DtypeOf(c10::ScalarType type) {
  if (type == c10::ScalarType::Undefined) return std::nullopt;
  for (size_t i = 0; i < std::size(kScalarTypes); ++i) {
    if (kScalarTypes[i] == type) return checkpoint::AllDtypes()[i].dtype;
  }
  return std::nullopt;
}

const char* SafetensorsName(c10::ScalarType type) {
  std::optional<checkpoint::Dtype> dtype = DtypeOf(type);
  if (!dtype) return nullptr;
  std::string_view name = checkpoint::Info(*dtype).safetensors;
  // A literal from dtypes.def, so null-terminated.
  return name.empty() ? nullptr : name.data();
}

std::string TorchName(c10::ScalarType type) {
  // c10 names `Float`, `BFloat16`; torch prints `float32`, `bfloat16`, which users read.
  if (std::optional<checkpoint::Dtype> dtype = DtypeOf(type))
    return std::string(checkpoint::Info(*dtype).name);
  return c10::toString(type);
}

}  // namespace accel::rt::tensor
