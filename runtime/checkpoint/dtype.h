#ifndef ACCEL_RUNTIME_CHECKPOINT_DTYPE_H_
#define ACCEL_RUNTIME_CHECKPOINT_DTYPE_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

#include "llvm/ADT/ArrayRef.h"

// The runtime's dtypes (dtypes.def): one row each, read here without LibTorch. The safetensors
// writer and reader, the memory estimates (runtime/memory/dtype.h) and the at::ScalarType view
// (runtime/tensor/scalar_type.h) are all views of these rows.
namespace accel::rt::checkpoint {

enum class Dtype : uint8_t {
#define ACCEL_DTYPE(Id, safetensors, file_bits, estimate_bytes, integral, name, aliases, Torch) Id,
#include "runtime/checkpoint/dtypes.def"
};

// One row of dtypes.def; the columns are described there. The strings are literals, so
// `data()` of a non-empty one is null-terminated.
struct DtypeInfo {
  Dtype dtype;
  std::string_view safetensors;  // empty for Accelerate's CustomDtype sizes
  unsigned file_bits;            // per element in a safetensors file; 0 when no file stores it
  double estimate_bytes;         // per element in Accelerate's memory estimates (bool: 1/8)
  bool integral;
  std::string_view name;     // torch's name (`bfloat16`), or the CustomDtype's (`int4`)
  std::string_view aliases;  // other spellings, lower case, space-separated
};

// Every row, in table order: safetensors dtypes by the reference writer's alignment ranking
// (ascending), then the CustomDtype sizes. Static storage.
llvm::ArrayRef<DtypeInfo> AllDtypes();

// The row of `dtype`; static storage.
const DtypeInfo& Info(Dtype dtype);

// The dtype whose safetensors string is exactly `text` (`BF16`, case-sensitive, as the format
// requires); unset for anything else, the empty string included.
std::optional<Dtype> DtypeOfSafetensors(std::string_view text);

}  // namespace accel::rt::checkpoint

#endif  // ACCEL_RUNTIME_CHECKPOINT_DTYPE_H_
