#ifndef ACCEL_RUNTIME_CHECKPOINT_SHARDED_READER_H_
#define ACCEL_RUNTIME_CHECKPOINT_SHARDED_READER_H_

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "llvm/ADT/ArrayRef.h"
#include "llvm/Support/Error.h"
#include "runtime/checkpoint/checkpoint_dir.h"
#include "runtime/checkpoint/safetensors.h"
#include "runtime/checkpoint/sharded_index.h"

// Reading a sharded checkpoint with any other sharding (resharding): a checkpoint saved by 4
// ranks loads on 2 or 1, each new rank asking for its own ranges. The bytes come straight from
// the verified, mapped rank files; nothing is read that the manifest did not vouch for.
namespace accel::rt::checkpoint {

// Whether `checkpoint` is a sharded one (has `sharded_state.index.json`).
bool IsShardedCheckpoint(const VerifiedCheckpoint& checkpoint);

class ShardedStateReader {
 public:
  // Reads and checks the index of `checkpoint` (VerifyCheckpointDirectory or the store's
  // loads verified every byte): every tensor's slices tile it, every file the index names is
  // one the manifest covers and is valid safetensors, and each slice is a 1-D tensor there of
  // the index's dtype and element count. Shares the checkpoint's mapped files, so the views it
  // returns stay valid while the reader (or a copy) lives. Fails naming the checkpoint and the
  // problem: no index (not a sharded checkpoint), an index that does not read, a missing file
  // or slice.
  static llvm::Expected<ShardedStateReader> Open(const VerifiedCheckpoint& checkpoint);

  // The world size that saved the checkpoint.
  uint32_t world_size() const { return index_.world_size; }
  // Every tensor of `kind` by name: dtype, full shape, and where its slices are.
  const std::map<std::string, ShardedTensor>& tensors(ShardedKind kind) const { return index_.tensors(kind); }

  // The bytes of elements [start, end) of tensor `name`, as views into the mapped files that,
  // written back to back, are the range (one view per saved slice it overlaps; none for an
  // empty range). No copy. Fails naming the tensor when there is none of that name or the
  // range is not inside it.
  llvm::Expected<std::vector<std::string_view>> Views(ShardedKind kind, const std::string& name,
                                                      uint64_t start, uint64_t end) const;
  // Copies elements [start, end) into `out`, which must be exactly (end - start) × element
  // size bytes (e.g. a tensor's storage). Fails as Views does, or on another `out` size.
  llvm::Error CopyRange(ShardedKind kind, const std::string& name, uint64_t start, uint64_t end,
                        llvm::MutableArrayRef<char> out) const;
  // The same into a new string.
  llvm::Expected<std::string> ReadRange(ShardedKind kind, const std::string& name, uint64_t start,
                                        uint64_t end) const;

 private:
  ShardedStateReader() = default;

  std::string path_;
  ShardedIndex index_;
  std::map<std::string, SafetensorsFile> files_;
};

}  // namespace accel::rt::checkpoint

#endif  // ACCEL_RUNTIME_CHECKPOINT_SHARDED_READER_H_
