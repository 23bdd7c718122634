#include "runtime/engine/tensor_parallel.h"

#include <ATen/ATen.h>
#include <ATen/core/grad_mode.h>

#include <cstdint>
#include <map>
#include <stdexcept>

#include <fmt/format.h>

namespace accel::rt::train {

std::vector<int> MeshPlace::TensorParallelRanks(int rank) const {
  std::vector<int> ranks;
  const int first = rank - rank % tensor_parallel;
  for (int i = 0; i < tensor_parallel; ++i) ranks.push_back(first + i);
  return ranks;
}

std::vector<int> MeshPlace::DataParallelRanks(int rank) const {
  std::vector<int> ranks;
  for (int i = 0; i < dp_size; ++i) ranks.push_back(i * tensor_parallel + rank % tensor_parallel);
  return ranks;
}

MeshPlace PlaceInMesh(int rank, int world_size, const plan::Sharding& sharding, int processes_per_machine) {
  MeshPlace place;
  const int64_t tp = sharding.tensor_parallel;
  if (tp < 1 || world_size % tp != 0) {
    throw std::invalid_argument(fmt::format(
        "tensor parallelism of degree {} needs a number of processes it divides, and this run has {}: set "
        "`num_processes` to dp_replicate_size x dp_shard_size x tp_size",
        tp, world_size));
  }
  place.tensor_parallel = static_cast<int>(tp);
  place.dp_size = world_size / place.tensor_parallel;
  place.tp_rank = rank % place.tensor_parallel;
  place.dp_rank = rank / place.tensor_parallel;
  int64_t shard = sharding.dp_shard_size;
  if (shard == 0 && sharding.hybrid && processes_per_machine < world_size) {
    if (processes_per_machine % tp != 0) {
      throw std::invalid_argument(fmt::format(
          "hybrid sharding shards within each machine, but a machine's {} processes do not hold whole "
          "tensor-parallel groups of {}",
          processes_per_machine, tp));
    }
    shard = processes_per_machine / tp;
  }
  if (shard == 0) shard = place.dp_size;
  // Without a mesh of its own, hybrid sharding's machines are checked by ShardGroups.
  const bool mesh = sharding.dp_shard_size > 0 || tp > 1;
  if (mesh && (place.dp_size % shard != 0 || (!sharding.hybrid && shard != place.dp_size))) {
    throw std::invalid_argument(
        fmt::format("the plan's mesh ({} tensor-parallel x shard groups of {}{}) does not fit the {} "
                    "processes of this run: "
                    "launch dp_replicate_size x dp_shard_size x tp_size processes",
                    tp, shard, sharding.hybrid ? ", replicated" : "", world_size));
  }
  place.shard = static_cast<int>(shard);
  place.replicate = place.dp_size / place.shard;
  return place;
}

MeshGroups FormMeshGroups(distributed::Collectives& world, const MeshPlace& place) {
  MeshGroups groups;
  if (place.tensor_parallel == 1) return groups;
  try {
    groups.tensor_parallel = world.NewGroup(place.TensorParallelRanks(world.rank()));
    groups.data_parallel = world.NewGroup(place.DataParallelRanks(world.rank()));
  } catch (const std::logic_error& error) {
    if (dynamic_cast<const std::invalid_argument*>(&error) != nullptr) throw;
    throw std::invalid_argument(fmt::format(
        "tensor parallelism needs a back end that forms subgroups, and this one cannot ({})", error.what()));
  }
  return groups;
}

TensorParallelTrainer::TensorParallelTrainer(std::unique_ptr<Trainer> inner, std::vector<int> dims,
                                             distributed::Collectives& group)
    : ForwardingTrainer(std::move(inner)), dims_(std::move(dims)), group_(group) {}

at::Tensor TensorParallelTrainer::Gather(const at::Tensor& slice, int dim) const {
  const int count = group_.world_size();
  at::Tensor local = slice.detach().contiguous();
  at::Tensor gathered = at::empty({count * local.numel()}, local.options());
  group_.AllGather(local, gathered);
  std::vector<int64_t> stacked = local.sizes().vec();
  stacked.insert(stacked.begin(), count);
  std::vector<int64_t> whole = local.sizes().vec();
  whole[dim] *= count;
  return gathered.view(stacked).movedim(0, dim).reshape(whole).contiguous();
}

std::map<std::string, int> TensorParallelTrainer::DimsByName() const {
  std::map<std::string, int> dims;
  std::vector<std::pair<std::string, at::Tensor>> named = inner_->NamedParameters();
  for (size_t i = 0; i < named.size(); ++i) dims[named[i].first] = dims_[i];
  return dims;
}

void TensorParallelTrainer::BeginFullState(FullState what, FullStateReaders /*readers*/) {
  if (sync_ != nullptr) sync_->BeginFullState(what, FullStateReaders::kEveryRank);
  at::NoGradGuard no_grad;
  whole_.clear();
  std::vector<std::pair<std::string, at::Tensor>> named = inner_->NamedParameters();
  for (size_t i = 0; i < named.size(); ++i) {
    at::Tensor tensor = dims_[i] < 0 ? named[i].second.detach().clone() : Gather(named[i].second, dims_[i]);
    whole_.emplace_back(named[i].first, tensor);
  }
  full_ = true;
  if (what == FullState::kWeights) {
    whole_state_ = {};
    return;
  }
  // Every rank gathers, in parameter order; a parameter without state has none on every rank.
  whole_state_ = inner_->ExportOptimizerState();
  std::map<std::string, int> dims = DimsByName();
  for (OptimizerState::Parameter& parameter : whole_state_.parameters) {
    const int dim = dims.count(parameter.name) != 0 ? dims.at(parameter.name) : -1;
    for (auto& [key, tensor] : parameter.tensors)
      tensor = dim < 0 ? tensor.detach().clone() : Gather(tensor, dim);
  }
  whole_state_.tensors_owned = true;
}

void TensorParallelTrainer::EndFullState() {
  {
    at::NoGradGuard no_grad;
    std::vector<std::pair<std::string, at::Tensor>> named = inner_->NamedParameters();
    for (size_t i = 0; i < named.size() && i < whole_.size(); ++i) {
      const at::Tensor& whole = whole_[i].second;
      named[i].second.copy_(
          dims_[i] < 0 ? whole : TensorParallelSlice(whole, dims_[i], group_.rank(), group_.world_size()));
    }
  }
  whole_.clear();
  whole_state_ = OptimizerState();
  full_ = false;
  if (sync_ != nullptr) sync_->EndFullState();
}

std::vector<std::pair<std::string, at::Tensor>> TensorParallelTrainer::NamedParameters() const {
  return full_ ? whole_ : inner_->NamedParameters();
}

double TensorParallelTrainer::ClipGradNorm(double) {
  throw std::invalid_argument(
      "gradient clipping (`max_grad_norm`) is not computed over tensor-parallel slices yet: drop it, or run "
      "without tensor parallelism");
}

bool TensorParallelTrainer::UnscaleGradients(double inv_scale) {
  std::vector<at::Tensor> overflow{at::full({1}, inner_->UnscaleGradients(inv_scale) ? 1.0f : 0.0f, at::kFloat)};
  group_.AllReduce(overflow, distributed::ReduceOp::kMax);
  return overflow[0].item<float>() > 0;
}

OptimizerState TensorParallelTrainer::ExportOptimizerState() const {
  return full_ ? whole_state_ : inner_->ExportOptimizerState();
}

void TensorParallelTrainer::ImportOptimizerState(const OptimizerState& whole) {
  OptimizerState state = whole;
  std::map<std::string, int> dims = DimsByName();
  for (OptimizerState::Parameter& parameter : state.parameters) {
    const int dim = dims.count(parameter.name) != 0 ? dims.at(parameter.name) : -1;
    if (dim < 0) continue;
    for (auto& [key, tensor] : parameter.tensors)
      tensor = TensorParallelSlice(tensor, dim, group_.rank(), group_.world_size());
  }
  inner_->ImportOptimizerState(state);
}

}  // namespace accel::rt::train
