#ifndef ACCEL_RUNTIME_ENGINE_SHARD_GROUPS_H_
#define ACCEL_RUNTIME_ENGINE_SHARD_GROUPS_H_

#include <memory>
#include <vector>

#include <ATen/core/Tensor.h>

#include "runtime/distributed/collectives.h"

// The groups a sharded engine talks to: the shard group (every rank, or with hybrid sharding
// the ranks of one machine) and, with hybrid sharding, the replicate group (the ranks holding
// the same shard on every machine). Every method is collective over the whole world.
namespace accel::rt::train {

class ShardGroups {
 public:
  // `hybrid`: shard within consecutive blocks of `processes_per_machine` ranks. Throws
  // std::invalid_argument when the world is not whole machines.
  ShardGroups(distributed::Collectives& world, bool hybrid, int processes_per_machine);

  int shard_rank() const { return shard_rank_; }
  int shard_count() const { return shard_count_; }
  // Whether the back end could not form subgroups, so the world group stands in for them
  // (same results, more traffic).
  bool emulated() const { return emulated_; }

  // `shard` = chunk shard_rank() of `flat` (shard_count() chunks), summed over every rank of
  // the world: reduce-scatter in the shard group, then all-reduce over the replicate group.
  void ReduceScatterSum(const at::Tensor& flat, at::Tensor& shard);
  // ReduceScatterSum, started: the shard group's reduce-scatter runs while the caller goes on;
  // the replicate group's all-reduce (hybrid) runs in the returned work's Wait, so the caller
  // must wait in the same order on every rank. Both tensors stay untouched until then.
  std::unique_ptr<distributed::PendingWork> ReduceScatterSumAsync(const at::Tensor& flat, at::Tensor& shard);
  // `full` = every shard of the shard group, end to end.
  void AllGather(const at::Tensor& shard, at::Tensor& full);
  // AllGather, started; `full` is written until the returned work's Wait returns.
  std::unique_ptr<distributed::PendingWork> AllGatherAsync(const at::Tensor& shard, at::Tensor& full);
  // Whether GatherToFirst gives the whole to the first rank of each shard group alone: not when
  // the world stands in for several machines' shard groups (emulated).
  bool GathersToFirstRanks() const { return !emulated_; }
  // `full` (on the shard group's first rank only; undefined on the others) = every shard of the
  // shard group, end to end. Only where GathersToFirstRanks().
  void GatherToFirst(const at::Tensor& shard, at::Tensor& full);
  // Sums `value` over the shard group (the shards of one copy of the model).
  double SumOverShardGroup(double value);

 private:
  distributed::Collectives& world_;
  std::unique_ptr<distributed::Collectives> shard_owned_;
  std::unique_ptr<distributed::Collectives> replicate_owned_;
  distributed::Collectives* shard_ = nullptr;      // null when emulated
  distributed::Collectives* replicate_ = nullptr;  // null without hybrid sharding
  int shard_rank_ = 0;
  int shard_count_ = 1;
  int machine_ = 0;
  int machines_ = 1;
  bool emulated_ = false;
};

}  // namespace accel::rt::train

#endif  // ACCEL_RUNTIME_ENGINE_SHARD_GROUPS_H_
