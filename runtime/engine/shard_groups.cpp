#include "runtime/engine/shard_groups.h"

#include <ATen/ATen.h>

#include <stdexcept>

#include <fmt/format.h>

namespace accel::rt::train {
namespace {

// A shard group's reduce-scatter, then the replicate group's all-reduce of its result.
class ThenReplicate final : public distributed::PendingWork {
 public:
  ThenReplicate(std::unique_ptr<distributed::PendingWork> scatter, distributed::Collectives& replicate,
                at::Tensor shard)
      : scatter_(std::move(scatter)), replicate_(replicate), shard_(std::move(shard)) {}
  void Wait() override {
    scatter_->Wait();
    std::vector<at::Tensor> tensors{shard_};
    replicate_.AllReduceSum(tensors);
  }

 private:
  std::unique_ptr<distributed::PendingWork> scatter_;
  distributed::Collectives& replicate_;
  at::Tensor shard_;
};

}  // namespace

ShardGroups::ShardGroups(distributed::Collectives& world, bool hybrid, int processes_per_machine)
    : world_(world) {
  const int world_size = world.world_size();
  if (!hybrid || processes_per_machine >= world_size) {
    shard_ = &world;
    shard_rank_ = world.rank();
    shard_count_ = world_size;
    return;
  }
  if (processes_per_machine < 1 || world_size % processes_per_machine != 0) {
    throw std::invalid_argument(
        fmt::format("hybrid sharding shards within each machine, but the world of {} processes is not whole "
                    "machines of {}",
                    world_size, processes_per_machine));
  }
  shard_count_ = processes_per_machine;
  machines_ = world_size / processes_per_machine;
  machine_ = world.rank() / processes_per_machine;
  shard_rank_ = world.rank() % processes_per_machine;
  std::vector<int> same_machine;
  for (int local = 0; local < shard_count_; ++local) same_machine.push_back(machine_ * shard_count_ + local);
  std::vector<int> same_shard;
  for (int machine = 0; machine < machines_; ++machine)
    same_shard.push_back(machine * shard_count_ + shard_rank_);
  try {
    shard_owned_ = world.NewGroup(same_machine);
    replicate_owned_ = world.NewGroup(same_shard);
    shard_ = shard_owned_.get();
    replicate_ = replicate_owned_.get();
  } catch (const std::logic_error&) {
    // Every rank's back end refuses alike, before any subgroup exists.
    shard_owned_.reset();
    emulated_ = true;
  }
}

void ShardGroups::ReduceScatterSum(const at::Tensor& flat, at::Tensor& shard) {
  const int64_t size = shard.numel();
  if (emulated_) {
    std::vector<at::Tensor> whole{flat.clone()};
    world_.AllReduceSum(whole);
    shard.copy_(whole[0].narrow(0, size * shard_rank_, size));
    return;
  }
  shard_->ReduceScatter(flat, shard, distributed::ReduceOp::kSum);
  if (replicate_ != nullptr) {
    std::vector<at::Tensor> tensors{shard};
    replicate_->AllReduceSum(tensors);
  }
}

std::unique_ptr<distributed::PendingWork> ShardGroups::ReduceScatterSumAsync(const at::Tensor& flat,
                                                                             at::Tensor& shard) {
  if (emulated_) {
    ReduceScatterSum(flat, shard);
    return std::make_unique<distributed::CompletedWork>();
  }
  std::unique_ptr<distributed::PendingWork> scatter =
      shard_->ReduceScatterAsync(flat, shard, distributed::ReduceOp::kSum);
  if (replicate_ == nullptr) return scatter;
  return std::make_unique<ThenReplicate>(std::move(scatter), *replicate_, shard);
}

std::unique_ptr<distributed::PendingWork> ShardGroups::AllGatherAsync(const at::Tensor& shard,
                                                                      at::Tensor& full) {
  if (emulated_) {
    AllGather(shard, full);
    return std::make_unique<distributed::CompletedWork>();
  }
  return shard_->AllGatherAsync(shard, full);
}

void ShardGroups::AllGather(const at::Tensor& shard, at::Tensor& full) {
  if (emulated_) {
    at::Tensor everyone = at::empty({shard.numel() * world_.world_size()}, shard.options());
    world_.AllGather(shard, everyone);
    full.copy_(everyone.narrow(0, shard.numel() * shard_count_ * machine_, full.numel()));
    return;
  }
  shard_->AllGather(shard, full);
}

void ShardGroups::GatherToFirst(const at::Tensor& shard, at::Tensor& full) {
  if (emulated_) throw std::logic_error("GatherToFirst: the world stands in for the shard groups");
  shard_->Gather(shard, full, 0);
}

double ShardGroups::SumOverShardGroup(double value) {
  std::vector<at::Tensor> sum{at::full({1}, value, at::kDouble)};
  if (emulated_) {
    world_.AllReduceSum(sum);
    return sum[0].item<double>() / machines_;
  }
  shard_->AllReduceSum(sum);
  return sum[0].item<double>();
}

}  // namespace accel::rt::train
