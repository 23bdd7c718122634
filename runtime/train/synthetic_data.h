#ifndef ACCEL_RUNTIME_TRAIN_SYNTHETIC_DATA_H_
#define ACCEL_RUNTIME_TRAIN_SYNTHETIC_DATA_H_

#include <cstdint>
#include <utility>
#include <vector>

#include <ATen/core/Tensor.h>

#include "compiler/plan/plan.h"

namespace accel::rt::train {

// A regression set y = X·W + noise, generated identically on every rank from the plan's seed,
// and this rank's stream of batches over it. Sharding follows DistributedSampler: each epoch
// draws one permutation (seeded by seed and epoch when shuffling), pads it by wrapping around
// to a multiple of the world size, and rank r takes every world_size-th index from r. Every
// rank therefore gets the same number of equally sized batches (even_batches).
class SyntheticRegression {
 public:
  SyntheticRegression(const plan::BuildDataloader& spec, int rank, int world_size);

  // The next (features, targets) batch of this rank; wraps into the next epoch. The returned
  // tensors are reused by the following call: copy them to keep them.
  std::pair<at::Tensor, at::Tensor> Next();

  // The epoch of the last batch drawn (-1 before the first) and how many of this rank's samples
  // of it were drawn: with the seed, all a checkpoint needs to continue the stream exactly.
  int64_t epoch() const { return epoch_; }
  int64_t position() const { return position_; }
  // Continues the stream where epoch() and position() were taken: the next Next() returns the
  // batch that followed them. Throws std::invalid_argument for a position outside the epoch.
  void Restore(int64_t epoch, int64_t position);
  int64_t batches_per_epoch() const;
  const at::Tensor& features() const { return features_; }
  const at::Tensor& targets() const { return targets_; }
  // This rank's sample indices for `epoch`, in order.
  std::vector<int64_t> ShardIndices(int64_t epoch) const;

 private:
  void StartEpoch();

  plan::BuildDataloader spec_;
  int rank_;
  int world_size_;
  at::Tensor features_;
  at::Tensor targets_;
  at::Tensor shard_;  // int64 indices of this rank for the current epoch
  int64_t epoch_ = -1;
  int64_t position_ = 0;
  at::Tensor batch_features_;
  at::Tensor batch_targets_;
};

}  // namespace accel::rt::train

#endif  // ACCEL_RUNTIME_TRAIN_SYNTHETIC_DATA_H_
