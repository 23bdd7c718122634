#ifndef ACCEL_RUNTIME_ENGINE_TRAIN_STATE_FORMAT_H_
#define ACCEL_RUNTIME_ENGINE_TRAIN_STATE_FORMAT_H_

#include <cstdint>

// Inside runtime/engine only: what the training state's writer (train_state.cpp) and its reader
// (train_state_restore.cpp) must agree on.
namespace accel::rt::train {

// Bumped when an older reader could misread a newer layout.
inline constexpr int64_t kStateVersion = 1;
// The tensor of each rank's random_states_<r>.safetensors.
inline constexpr const char* kRngTensor = "torch_manual_seed";

}  // namespace accel::rt::train

#endif  // ACCEL_RUNTIME_ENGINE_TRAIN_STATE_FORMAT_H_
