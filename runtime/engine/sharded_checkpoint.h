#ifndef ACCEL_RUNTIME_ENGINE_SHARDED_CHECKPOINT_H_
#define ACCEL_RUNTIME_ENGINE_SHARDED_CHECKPOINT_H_

#include <deque>
#include <memory>
#include <string>
#include <vector>

#include <ATen/core/Tensor.h>

#include "runtime/checkpoint/sharded_state.h"
#include "runtime/engine/sharded_engine.h"
#include "runtime/engine/train_state.h"

// The sharded engine's side of `state_dict_type = sharded` checkpoints (docs/checkpoints.md,
// "Sharded checkpoints"): its slices as the ranks' files name them, the same state_dict names a
// full checkpoint uses (`0.weight`; `state.0.weight.exp_avg`), and a resume reading each rank's
// own ranges back from a checkpoint of any world size.
namespace accel::rt::train {

// One rank's slices, ready for checkpoint::WriteRankSlices. The views point into the engine's
// live shards and into this object: keep both, and do not step the optimizer, until the write
// returns.
class RankStateSlices {
 public:
  const checkpoint::RankSlices& slices() const { return slices_; }

 private:
  friend std::unique_ptr<RankStateSlices> EncodeRankSlices(const ShardedEngine& engine, bool with_buffers);
  checkpoint::RankSlices slices_;
  std::vector<at::Tensor> tensors_;  // contiguous copies, where a tensor was not contiguous
};

// This rank's slices of every parameter (`name`) and of its optimizer state
// (`state.<name>.<key>`), F32; none on a rank whose shards another machine's ranks also write
// (hybrid sharding, ShardedEngine::WritesShardSlices). With `with_buffers` (rank 0) also every
// buffer whole, and an empty slice of each tensor this rank holds nothing of, so that every
// tensor is in the index even when it has no elements. Throws std::invalid_argument for a
// buffer of a dtype checkpoints do not store.
std::unique_ptr<RankStateSlices> EncodeRankSlices(const ShardedEngine& engine, bool with_buffers);

// The engine reads its own ranges of the parameters and the optimizer state that
// RestoreTrainingState checked and left in `resume`. Collective at stages 1 and 2 (see
// ShardedEngine::ImportShardSlices).
void ImportShardedResume(const ShardedResume& resume, ShardedEngine& engine);

}  // namespace accel::rt::train

#endif  // ACCEL_RUNTIME_ENGINE_SHARDED_CHECKPOINT_H_
