#ifndef ACCEL_RUNTIME_MEMORY_DTYPE_H_
#define ACCEL_RUNTIME_MEMORY_DTYPE_H_

#include <optional>
#include <string>
#include <string_view>

#include "llvm/Support/Error.h"

// Element sizes as Accelerate counts them (`dtype_byte_size`, catalog §6.4): the estimate_bytes
// view of the runtime's one dtype table (runtime/checkpoint/dtypes.def).
namespace accel::rt::memory {

struct Dtype {
  std::string name;       // torch's name (float32, bfloat16, int64, bool, float8_e4m3fn) or int4, int2, fp8
  double bytes = 0;       // per element; fractional for bool (1/8), int2 (1/4), int4 and F4 (1/2)
  bool integral = false;  // integer and bool tensors keep their own size under a dtype override
};

// The dtype of a safetensors dtype string (`F32`, `BF16`, `BOOL`, `F8_E4M3`, ...); unset when
// unknown. `BOOL` counts 1/8 byte per element as Accelerate counts it, though torch stores a
// byte; every float8 counts 1 byte.
std::optional<Dtype> DtypeOfSafetensors(std::string_view dtype);

// A dtype as a user names it: `bf16`, `bfloat16`, `torch.bfloat16`, `fp16`, `half`, `fp32`,
// `float`, `fp64`, `int8`, a safetensors string (`BF16`), or one of Accelerate's CustomDtype
// sizes `fp8` (1 byte), `int4` (1/2) and `int2` (1/4). Case-insensitive. Fails naming the
// accepted spellings.
llvm::Expected<Dtype> ParseDtype(std::string_view text);

}  // namespace accel::rt::memory

#endif  // ACCEL_RUNTIME_MEMORY_DTYPE_H_
