// The collectives of sharded data parallelism on any c10d process group: a reduce-scatter (the
// back end's own, or one all-to-all and a local reduction), a scatter and a gather, and
// subgroups over prefixes of the group's store.
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>

#include <algorithm>
#include <stdexcept>
#include <string>
#include <vector>

#include <ATen/ATen.h>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "runtime/distributed/c10d_group.h"

namespace accel::rt::distributed::internal {
namespace {

void CheckReduceScatterShapes(const at::Tensor& input, const at::Tensor& output, int world) {
  if (input.numel() != output.numel() * world) {
    throw std::invalid_argument(fmt::format(
        "reduce_scatter: the input has {} elements, and must have world_size ({}) × the output's {}",
        input.numel(), world, output.numel()));
  }
  if (input.scalar_type() != output.scalar_type()) {
    throw std::invalid_argument(
        fmt::format("reduce_scatter: the input is {} and the output {}; they must match",
                    c10::toString(input.scalar_type()), c10::toString(output.scalar_type())));
  }
  if (!input.is_contiguous() || !output.is_contiguous()) {
    throw std::invalid_argument("reduce_scatter: the input and the output must be contiguous");
  }
}

// Reduces the `world` chunks every rank sent this one (end to end in `received`) into `output`.
// Half-precision chunks are reduced in float32 and rounded once, so a sum over many ranks loses
// no more than one rounding.
void ReduceChunks(const at::Tensor& received, at::Tensor& output, ReduceOp op, int world) {
  at::Tensor chunks = received.view({world, -1});
  if (chunks.scalar_type() == at::kHalf || chunks.scalar_type() == at::kBFloat16)
    chunks = chunks.to(at::kFloat);
  at::Tensor reduced;
  switch (op) {
    case ReduceOp::kSum:
      reduced = chunks.sum(0, false, chunks.scalar_type());  // integers stay in their own type
      break;
    case ReduceOp::kMax:
      reduced = chunks.amax(0);
      break;
    case ReduceOp::kMin:
      reduced = chunks.amin(0);
      break;
    case ReduceOp::kProduct:
      reduced = chunks.prod(0, false, chunks.scalar_type());
      break;
  }
  output.view({-1}).copy_(reduced);
}

void CheckSubgroupRanks(const std::vector<int>& ranks, int rank, int world) {
  auto refuse = [&](const char* why) {
    throw std::invalid_argument(fmt::format("new_group of ranks [{}] on rank {} of {}: {}",
                                            fmt::join(ranks, ", "), rank, world, why));
  };
  if (ranks.empty()) refuse("the group has no ranks");
  for (size_t i = 0; i < ranks.size(); ++i) {
    if (ranks[i] < 0 || ranks[i] >= world) refuse("a rank is outside this group");
    if (i > 0 && ranks[i] <= ranks[i - 1]) refuse("the ranks must be ascending, each once");
  }
  if (std::find(ranks.begin(), ranks.end(), rank) == ranks.end()) refuse("this rank must be one of them");
}

}  // namespace

std::unique_ptr<PendingWork> C10dCollectives::ReduceScatterAsync(const at::Tensor& input, at::Tensor& output,
                                                                 ReduceOp op) {
  const int world = world_size();
  CheckReduceScatterShapes(input, output, world);
  Staging staging(device_);
  at::Tensor send, target, received;
  c10::intrusive_ptr<c10d::Work> work;
  Guard("reduce_scatter", [&] {
    send = staging.In(input.view({-1}), false);
    target = staging.In(output.view({-1}), true);  // the caller keeps `output` alive until Wait
    if (sharded_ == ShardedPath::kNative) {
      c10d::ReduceScatterOptions options;
      options.reduceOp = ToC10d(op);
      work = group_->_reduce_scatter_base(target, send, options);
      return;
    }
    received = at::empty_like(send);
    std::vector<int64_t> equal_splits;  // empty: world_size chunks of the same size
    std::vector<int64_t> same_splits;
    work = group_->alltoall_base(received, send, equal_splits, same_splits);
  });
  // The composed path reduces the chunks it received once they are there.
  return std::make_unique<C10dWork>("reduce_scatter", std::vector{work}, scope_,
                                    [received, target, op, world, staging]() mutable {
                                      if (received.defined()) ReduceChunks(received, target, op, world);
                                      staging.CopyBack();
                                    });
}

void C10dCollectives::ReduceScatter(const at::Tensor& input, at::Tensor& output, ReduceOp op) {
  ReduceScatterAsync(input, output, op)->Wait();
}

void C10dCollectives::Scatter(const std::vector<at::Tensor>& chunks, at::Tensor& output, int root) {
  CheckScatterChunks(chunks, output, rank() == root ? world_size() : 0);
  if (!output.is_contiguous()) throw std::invalid_argument("scatter: the output must be contiguous");
  Staging staging(device_);
  Guard("scatter", [&] {
    c10d::ScatterOptions scatter;
    scatter.rootRank = root;
    std::vector<at::Tensor> outputs{staging.In(output, true)};
    std::vector<std::vector<at::Tensor>> inputs;
    if (rank() == root) {
      inputs.emplace_back();
      for (const at::Tensor& chunk : chunks) inputs[0].push_back(staging.In(chunk.contiguous(), false));
    }
    group_->scatter(outputs, inputs, scatter)->wait(scope_.options.timeout);
  });
  staging.CopyBack();
}

void C10dCollectives::Gather(const at::Tensor& input, at::Tensor& output, int root) {
  CheckGatherOutput(input, output, rank() == root, world_size());
  Staging staging(device_);
  Guard("gather", [&] {
    c10d::GatherOptions gather;
    gather.rootRank = root;
    std::vector<at::Tensor> inputs{staging.In(input.contiguous().view({-1}), false)};
    std::vector<std::vector<at::Tensor>> outputs;
    if (rank() == root) {
      // One slot per rank, views into `output`, so the result lands in one flat buffer.
      const int64_t count = input.numel();
      at::Tensor flat = staging.In(output.view({-1}), true);
      outputs.emplace_back();
      for (int r = 0; r < world_size(); ++r) outputs[0].push_back(flat.narrow(0, r * count, count));
    }
    group_->gather(outputs, inputs, gather)->wait(scope_.options.timeout);
  });
  staging.CopyBack();
}

std::unique_ptr<Collectives> C10dCollectives::NewGroup(const std::vector<int>& ranks) {
  CheckSubgroupRanks(ranks, rank(), world_size());
  if (!subgroups_) return Collectives::NewGroup(ranks);
  // Every rank calls NewGroup in the same order, so the sequence number agrees across ranks;
  // the rank list tells apart the groups formed by the same call (a shard group per machine).
  ++groups_formed_;
  auto store = c10::make_intrusive<c10d::PrefixStore>(
      fmt::format("accel/group/{}/{}", groups_formed_, fmt::join(ranks, ",")), store_);
  RendezvousOptions options = scope_.options;
  options.rank = static_cast<int>(std::find(ranks.begin(), ranks.end(), rank()) - ranks.begin());
  options.world_size = static_cast<int>(ranks.size());
  std::vector<int> world_ranks;
  for (int member : ranks) world_ranks.push_back(world_ranks_.empty() ? member : world_ranks_[member]);
  c10::intrusive_ptr<GroupBase> group;
  Guard("new_group", [&] { group = subgroups_(store, options.rank, options.world_size); });
  return std::make_unique<C10dCollectives>(options, store, group, device_, sharded_, subgroups_,
                                           std::move(world_ranks));
}

}  // namespace accel::rt::distributed::internal
