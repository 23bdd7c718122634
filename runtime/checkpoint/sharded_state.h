#ifndef ACCEL_RUNTIME_CHECKPOINT_SHARDED_STATE_H_
#define ACCEL_RUNTIME_CHECKPOINT_SHARDED_STATE_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "llvm/Support/Error.h"
#include "runtime/checkpoint/checkpoint_file.h"
#include "runtime/checkpoint/sharded_index.h"

// Writing a sharded checkpoint (SHARDED_STATE_DICT): every rank writes the slices it holds of
// every tensor into its own files of one unfinished checkpoint directory, then, after a
// barrier, rank 0 checks that the slices tile every tensor, writes the index and the manifest
// last. The protocol and what a crash at each step leaves: docs/checkpoints.md, "Sharded
// checkpoints". CheckpointStore::FinishSharded wraps FinishShardedDirectory with the store's
// naming, renaming and rotation; ShardedStateReader (sharded_reader.h) reads any range back.
namespace accel::rt::checkpoint {

// One rank's contiguous part of one tensor: elements [start, end) of the tensor flattened in
// row-major order. Empty (start == end) and whole (0, element count) ranges are both fine.
struct TensorSlice {
  std::string name;            // the state_dict name, e.g. `0.weight`, or `state.0.weight.exp_avg`
  std::string dtype;           // a byte-sized safetensors dtype: F32, BF16, I64, ...
  std::vector<int64_t> shape;  // the whole tensor's shape
  uint64_t start = 0;
  uint64_t end = 0;
  // The (end - start) elements, little-endian; must stay valid until WriteRankSlices returns.
  std::string_view bytes;
};

// Everything one rank holds.
struct RankSlices {
  std::vector<TensorSlice> model;
  std::vector<TensorSlice> optimizer;

  const std::vector<TensorSlice>& of(ShardedKind kind) const {
    return kind == ShardedKind::kModel ? model : optimizer;
  }
};

// `model_shard-00001-of-00004.safetensors` for kind kModel, rank 0, world 4.
std::string RankShardFileName(ShardedKind kind, uint32_t rank, uint32_t world);
// `sharded_state.rank-00001-of-00004.json`: what rank 0 of 4 wrote, with sizes and SHA-256s.
std::string RankRecordName(uint32_t rank, uint32_t world);

// Called by every rank, each with its own `rank`, on the same `directory` (for a store,
// CheckpointStore::ShardedStagingDir()): creates the directory if needed, writes the rank's
// model and optimizer files (one 1-D safetensors tensor per non-empty slice, named as the
// tensor; both files are written even when empty) hashed while written and fsynced, then the
// rank's record (every slice's full shape, dtype and range; each file's size and SHA-256 per
// manifest piece), fsynced, last. Files an earlier crashed attempt left under the same names are
// replaced. Not collective itself: the caller's barrier after it is what lets rank 0 finish.
// Fails, naming the rank and the tensor, on rank ≥ world, a dtype that is not byte-sized, a
// range outside the shape, a byte count ≠ (end - start) × element size, a name given twice in
// one kind, or an I/O error.
llvm::Error WriteRankSlices(const std::string& directory, uint32_t rank, uint32_t world,
                            const RankSlices& slices);

// Rank 0, after every rank's WriteRankSlices returned (a barrier): reads the `world` rank
// records, checks each rank file's size against its record and that all ranks agree on every
// tensor's dtype and shape, and that the slices tile every tensor exactly; removes whatever
// else the directory holds (an earlier crashed attempt's files), writes `files` (rank 0's
// unsharded files: optimizer.json, RNG states, ...), the index, then the manifest (every file,
// the rank files included, with SHA-256 per piece) last, and fsyncs the directory. Does not
// rename it: CheckpointStore::FinishSharded does. Fails, naming the rank, file or tensor, on
// a missing or invalid record (a rank that did not finish), a file of another size, ranges
// that do not tile, a name in `files` that is invalid or taken by the sharded files, or I/O.
llvm::Error FinishShardedDirectory(const std::string& directory, uint32_t world,
                                   const std::vector<CheckpointFile>& files, uint64_t iteration);

}  // namespace accel::rt::checkpoint

#endif  // ACCEL_RUNTIME_CHECKPOINT_SHARDED_STATE_H_
