#ifndef ACCEL_RUNTIME_CHECKPOINT_ATOMIC_FILE_H_
#define ACCEL_RUNTIME_CHECKPOINT_ATOMIC_FILE_H_

#include <string>
#include <string_view>
#include <vector>

#include "llvm/Support/Error.h"

namespace accel::rt::checkpoint {

class ChunkedSha256;

// Creates or truncates `path`, writes `parts` back to back, fsyncs and closes it. If `hasher`
// is set, every byte written is also fed to it (chunk by chunk, while still in cache). Not
// atomic by itself: use it for files inside a directory that is renamed into place later.
llvm::Error WriteAndSync(const std::string& path, const std::vector<std::string_view>& parts,
                         ChunkedSha256* hasher = nullptr);

// Writes `parts` (concatenated) to `path` so that a crash at any moment leaves either the old
// file or the complete new one: write a temporary file in the same directory, fsync it,
// rename it over `path`, fsync the directory. Creates missing parent directories.
llvm::Error WriteFileAtomically(const std::string& path, const std::vector<std::string_view>& parts);

// Removes what WriteFileAtomically(path) left when its writer was killed: `path.tmp.<pid>`
// files whose process no longer runs on this machine. Returns the removed paths. A file of a
// writer on another machine sharing the folder would look stale too: call it only where one
// writer per output is the rule (`accelrun consolidate`).
std::vector<std::string> RemoveStaleTemporaries(const std::string& path);

// fsyncs the directory `path`, so that entries created, renamed or removed in it survive a
// power loss. Errors name the directory.
llvm::Error SyncDirectory(const std::string& path);

// Renames `from` to `to` in one step, failing (EEXIST) instead of replacing an existing `to`.
llvm::Error RenameNoReplace(const std::string& from, const std::string& to);

// Swaps the directory entries `a` and `b` in one step (renameat2 RENAME_EXCHANGE): a crash
// leaves either both old entries or both new ones, never a moment without `b`.
llvm::Error ExchangePaths(const std::string& a, const std::string& b);

}  // namespace accel::rt::checkpoint

#endif  // ACCEL_RUNTIME_CHECKPOINT_ATOMIC_FILE_H_
