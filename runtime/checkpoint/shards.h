#ifndef ACCEL_RUNTIME_CHECKPOINT_SHARDS_H_
#define ACCEL_RUNTIME_CHECKPOINT_SHARDS_H_

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "llvm/Support/Error.h"
#include "runtime/checkpoint/checkpoint_file.h"
#include "runtime/checkpoint/safetensors.h"

// Sharded weights as Accelerate's save_model writes them (catalog §7.4): with one shard,
// `model.safetensors` and no index; with n > 1, `model-0000k-of-0000n.safetensors` files and
// `model.safetensors.index.json` ({"metadata": {"total_size": N}, "weight_map": {...}}).
namespace accel::rt::checkpoint {

// Accelerate's default `max_shard_size` ("10GB"). A spec writes sizes as `.accel` size literals
// (`500MB` is decimal, `512MiB` binary), the units save_model's strings take.
inline constexpr uint64_t kDefaultMaxShardSize = 10'000'000'000;

// One planned shard: its file name and the indices (into the given tensors) it holds.
struct ShardPlan {
  std::string file_name;
  std::vector<size_t> tensors;
  uint64_t bytes = 0;
};

// Splits `tensors` as huggingface_hub's split_state_dict_into_shards does: walk them in the
// given order; a tensor larger than `max_shard_size` gets a shard of its own (placed before
// the shard being filled); otherwise a new shard starts when adding the tensor would exceed
// the limit. Names shards `{stem}.safetensors` when there is one (also for no tensors at all)
// and `{stem}-0000k-of-0000n.safetensors` otherwise.
std::vector<ShardPlan> PlanShards(const std::vector<TensorRef>& tensors, uint64_t max_shard_size,
                                  std::string_view stem = "model");

// The index file's name for `stem`: `model.safetensors.index.json`.
std::string IndexFileName(std::string_view stem = "model");

// The index JSON as Python's `json.dumps(index, indent=2, sort_keys=True) + "\n"` writes it
// (non-ASCII names as \u escapes), so files are byte-identical to Accelerate's.
std::string EncodeShardIndex(const std::vector<TensorRef>& tensors, const std::vector<ShardPlan>& shards);

// Encoded shards, ready to write. Tensor bytes are views into the `TensorRef`s' memory.
struct EncodedShards {
  std::vector<std::pair<std::string, EncodedSafetensors>> shards;
  std::string index_name;  // empty when there is a single shard
  std::string index;

  // Every file (shards, then the index if any); views into this object and the tensors.
  std::vector<CheckpointFile> Files() const;
};

// Plans and encodes the shards; every shard carries `metadata`. Fails as EncodeHeader does.
llvm::Expected<EncodedShards> EncodeShards(const std::vector<TensorRef>& tensors, uint64_t max_shard_size,
                                           std::string_view stem = "model",
                                           const std::map<std::string, std::string>& metadata = {
                                               {"format", "pt"}});

// Writes the shards and the index into `directory` (created if missing), each file crash-
// safely, then removes what a previous save left that the new set does not use: shards
// `{stem}-NNNNN-of-NNNNN.safetensors`, and `{stem}.safetensors` or the index when the layout
// changed between one file and shards. The set as a whole is replaced atomically only inside
// a CheckpointStore; here a crash between files can leave old and new files side by side.
llvm::Error SaveShardedSafetensors(const std::string& directory, const std::vector<TensorRef>& tensors,
                                   uint64_t max_shard_size = kDefaultMaxShardSize,
                                   std::string_view stem = "model");

}  // namespace accel::rt::checkpoint

#endif  // ACCEL_RUNTIME_CHECKPOINT_SHARDS_H_
