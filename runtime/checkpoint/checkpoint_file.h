#ifndef ACCEL_RUNTIME_CHECKPOINT_CHECKPOINT_FILE_H_
#define ACCEL_RUNTIME_CHECKPOINT_CHECKPOINT_FILE_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace accel::rt::checkpoint {

// One file of a checkpoint as a named blob: `parts` written back to back make its content.
// The parts are views (tensor memory, an encoded header): whoever builds a CheckpointFile
// keeps that memory alive until the write returns. This is the whole interface between the
// torch side (which owns tensors) and the torch-free writers.
struct CheckpointFile {
  // A plain file name inside the checkpoint directory: no `/`, not `.` or `..`.
  std::string name;
  std::vector<std::string_view> parts;

  uint64_t size() const {
    uint64_t total = 0;
    for (std::string_view part : parts) total += part.size();
    return total;
  }
};

}  // namespace accel::rt::checkpoint

#endif  // ACCEL_RUNTIME_CHECKPOINT_CHECKPOINT_FILE_H_
