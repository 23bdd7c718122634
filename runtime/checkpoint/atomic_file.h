#ifndef ACCEL_RUNTIME_CHECKPOINT_ATOMIC_FILE_H_
#define ACCEL_RUNTIME_CHECKPOINT_ATOMIC_FILE_H_

#include <string>
#include <string_view>
#include <vector>

#include "llvm/Support/Error.h"

namespace accel::rt::checkpoint {

// Writes `parts` (concatenated) to `path` so that a crash at any moment leaves either the old
// file or the complete new one: write a temporary file in the same directory, fsync it,
// rename it over `path`, fsync the directory. Creates missing parent directories.
llvm::Error WriteFileAtomically(const std::string& path, const std::vector<std::string_view>& parts);

}  // namespace accel::rt::checkpoint

#endif  // ACCEL_RUNTIME_CHECKPOINT_ATOMIC_FILE_H_
