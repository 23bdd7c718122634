#ifndef ACCEL_RUNTIME_ENGINE_CHECKPOINT_LIMITS_H_
#define ACCEL_RUNTIME_ENGINE_CHECKPOINT_LIMITS_H_

#include <cstdint>

// Torch-free, so that the launcher's state import and export bound what the worker bounds.
namespace accel::rt::train {

// The most processes a checkpoint may say wrote it: far beyond any cluster, small enough that
// no count derived from it overflows (a world size edited to 2^32 once became 0 and a divisor).
inline constexpr int64_t kMaxCheckpointWorldSize = int64_t{1} << 20;

}  // namespace accel::rt::train

#endif  // ACCEL_RUNTIME_ENGINE_CHECKPOINT_LIMITS_H_
