#ifndef ACCEL_RUNTIME_ENGINE_SHARD_REDUCTIONS_H_
#define ACCEL_RUNTIME_ENGINE_SHARD_REDUCTIONS_H_

#include <cstdint>
#include <memory>
#include <vector>

#include <ATen/core/Tensor.h>

#include "runtime/distributed/collectives.h"
#include "runtime/engine/flat_units.h"
#include "runtime/engine/shard_groups.h"

// The gradient reductions of the sharded engine (sharded_engine.h), one synced backward at a
// time: each unit's flat gradient, already divided by the world size, becomes this rank's shard
// of the sum over every rank, by a reduce-scatter in the shard group and, with hybrid sharding,
// an all-reduce over the replicate group (ShardGroups). Stage 1 reduces the same way (as
// DeepSpeed's ZeRO-1 does with its default `reduce_scatter`: the rank that owns a partition
// receives its sum) and keeps the unit's whole gradient buffer until the step, as ZeRO-1 does not
// partition gradients; only the shard is read.
// Small units are coalesced into buckets of at most `bucket_elements` gradient elements
// (DeepSpeed's reduce_bucket_size); a unit of kAloneElements or more, or larger than the bucket,
// is a bucket of its own. Buckets are taken in launch order:
// the reverse of the units' order, the order backward produces them. A bucket starts as soon as
// its units are all ready and every earlier bucket has started, so every rank starts the same
// collectives in the same order whatever order its units become ready in; the engine calls
// Ready from backward's hooks to overlap the reductions with the rest of backward, or after it.
// The elementwise sums do not depend on the buckets: a reduce-scatter sums each element over the
// ranks in rank order whatever else travels with it.
namespace accel::rt::train {

// Coalescing pays for many small collectives' latency; a unit this large (4 MiB of fp32) already
// moves megabytes in one collective, and on Gloo one collective over several such units measured
// 2.5x slower than one per unit (docs/performance.md, "Overlapped reductions and prefetch").
inline constexpr int64_t kAloneElements = int64_t{1} << 20;

class ShardReductions {
 public:
  // `units` (laid out) and `groups` must outlive this. `whole_gradients`: stage 1, which keeps
  // each unit's whole gradient buffer (Reduced::whole).
  ShardReductions(const std::vector<FlatUnit>& units, ShardGroups& groups, bool whole_gradients,
                  int64_t bucket_elements);
  // Waits (ignoring failures) for reductions still in flight.
  ~ShardReductions();
  ShardReductions(const ShardReductions&) = delete;
  ShardReductions& operator=(const ShardReductions&) = delete;

  // Before a synced backward: forgets the last one's gradients.
  void Begin();
  // Unit `unit`'s flat gradient (padded, divided by the world size) is complete; it must stay
  // untouched until Finish. Starts every bucket that can start. Collective, in the order above.
  void Ready(size_t unit, at::Tensor flat);
  bool ready(size_t unit) const { return flats_[unit].defined(); }

  struct Reduced {
    at::Tensor shard;  // this rank's shard of the summed gradient
    // Stage 1: the unit's flat gradient buffer as Ready received it (padded), held until the step
    // as ZeRO-1 holds its unpartitioned gradients; the reduction may have used it as scratch.
    // Else undefined.
    at::Tensor whole;
  };
  // After backward, every unit Ready: waits for every bucket, in launch order. Throws
  // std::logic_error when a unit was not Ready, CollectiveError when a reduction failed.
  std::vector<Reduced> Finish();

  // The buckets, in launch order, each its units in launch order (for tests and the log).
  const std::vector<std::vector<size_t>>& buckets() const { return buckets_; }

 private:
  void Launch(size_t bucket);

  const std::vector<FlatUnit>& units_;
  ShardGroups& groups_;
  bool whole_gradients_;
  std::vector<std::vector<size_t>> buckets_;
  std::vector<at::Tensor> flats_;    // per unit, once Ready
  std::vector<at::Tensor> inputs_;   // per bucket, once launched: what it reduces
  std::vector<at::Tensor> outputs_;  // per bucket: the shards, end to end
  std::vector<std::unique_ptr<distributed::PendingWork>> pending_;  // per bucket
  size_t launched_ = 0;                                             // buckets started so far, in order
};

}  // namespace accel::rt::train

#endif  // ACCEL_RUNTIME_ENGINE_SHARD_REDUCTIONS_H_
