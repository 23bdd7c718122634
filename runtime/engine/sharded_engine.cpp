#include "runtime/engine/sharded_engine.h"

#include <ATen/ATen.h>
#include <torch/csrc/autograd/custom_function.h>
#include <torch/csrc/autograd/function.h>
#include <torch/csrc/autograd/function_hook.h>
#include <torch/csrc/autograd/variable.h>
#include <torch/optim/optimizer.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <stdexcept>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "runtime/model/loss_scaler.h"
#include "runtime/model/optimizer_factory.h"
#include "runtime/model/optimizer_state.h"
#include "runtime/model/weight_storage.h"

namespace accel::rt::train {
namespace {

// An identity on a block's output whose backward runs before the block's own: there the engine
// gathers the block's units again (FSDP's pre-backward hook).
struct RegatherBeforeBackward : public torch::autograd::Function<RegatherBeforeBackward> {
  static at::Tensor forward(torch::autograd::AutogradContext* context, const at::Tensor& output,
                            ShardedEngine* engine, int64_t block) {
    context->saved_data["engine"] = reinterpret_cast<int64_t>(engine);
    context->saved_data["block"] = block;
    return output;
  }
  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* context,
                                                 torch::autograd::variable_list gradients) {
    auto* engine = reinterpret_cast<ShardedEngine*>(context->saved_data["engine"].toInt());
    engine->RegatherForBackward(static_cast<size_t>(context->saved_data["block"].toInt()));
    return {gradients[0], at::Tensor(), at::Tensor()};
  }
};

// Runs after a parameter's AccumulateGrad node, so `.grad` holds this backward's sum.
struct GradientReadyHook final : torch::autograd::FunctionPostHook {
  GradientReadyHook(ShardedEngine* engine, size_t index) : engine(engine), index(index) {}
  torch::autograd::variable_list operator()(const torch::autograd::variable_list& outputs,
                                            const torch::autograd::variable_list& /*inputs*/) override {
    engine->OnGradientReady(index);
    return outputs;
  }
  ShardedEngine* engine;
  size_t index;
};

void Announce(int rank, const std::string& line) {
  if (rank != 0) return;
  fmt::print("accelrun: {}\n", line);
  std::fflush(stdout);
}

std::string UnitName(size_t unit) { return fmt::format("unit{}", unit); }

void CollectModuleTypes(const ModuleNode& node, std::map<std::string, std::string>& types) {
  types[node.path] = node.type;
  for (const ModuleNode& child : node.children) CollectModuleTypes(child, types);
}

// The modules the wrap policy made units of, in unit order: `the root`, then each wrapped
// module's path with its class, so a run shows what transformer_layer_cls_to_wrap matched.
std::string DescribeUnits(const std::vector<FlatUnit>& units, const ModuleNode& root) {
  std::map<std::string, std::string> types;
  CollectModuleTypes(root, types);
  std::vector<std::string> names;
  for (const FlatUnit& unit : units)
    names.push_back(unit.module.empty() ? "the root"
                                        : fmt::format("{} ({})", unit.module, types[unit.module]));
  return fmt::format("{}", fmt::join(names, ", "));
}

}  // namespace

ShardedEngine::ShardedEngine(std::unique_ptr<Trainer> model, const plan::TrainLoop& loop,
                             int processes_per_machine, distributed::Collectives& world, bool announce,
                             InitialWeights weights)
    : ForwardingTrainer(std::move(model)),
      sharding_(loop.sharding),
      world_(world),
      groups_(world, loop.sharding.hybrid, processes_per_machine),
      named_(inner_->NamedParameters()),
      device_(named_.empty() || named_.front().second.is_meta() ? c10::Device(c10::kCPU)
                                                                 : named_.front().second.device()),
      type_(OptimizerTypeOf(loop)),
      fault_(TestFaultFromEnvironment()) {
  for (const auto& [name, tensor] : named_) {
    shapes_.push_back(tensor.sizes().vec());
    numels_.push_back(tensor.numel());
  }
  units_ = WrapUnits(inner_->Modules(), numels_, sharding_);
  LayOut(units_, numels_, groups_.shard_count());

  // The model's optimizer state (a resumed checkpoint's, or none) moves to the shards.
  OptimizerState whole = inner_->ExportOptimizerState();
  const double lr = inner_->learning_rate();
  std::vector<at::Tensor> shards;
  const bool from_rank0 = weights == InitialWeights::kShapesOnly;
  {
    at::NoGradGuard no_grad;
    for (const FlatUnit& unit : units_) {
      UnitState state;
      at::Tensor full;
      if (from_rank0) {
        TakeFromRankZero(unit, full, state.shard);
      } else {
        full = FlatParameters(unit);
        state.shard = full.narrow(0, unit.shard_size * groups_.shard_rank(), unit.shard_size).clone();
      }
      state.shard.set_requires_grad(true);
      // The parameters become views into the unit's flat buffer for good; stage 3 frees and
      // refills the buffer's storage under them (as FSDP does), so every view autograd saved
      // sees the gathered values again and holds no memory while the unit is released. It
      // frees each unit at once, so building holds the model and one unit's copy at most.
      state.full = full;
      PointParametersInto(unit, full);
      state.persistent = sharding_.stage >= 3 && Persistent(unit);
      state.gathered = sharding_.stage < 3 || state.persistent;
      if (!state.gathered) ReleaseBytes(full);
      shards.push_back(state.shard);
      state_.push_back(std::move(state));
    }
  }
  optimizer_ = MakeOptimizer(loop, shards);
  ImportOptimizerState(whole);
  SetLearningRate(lr);
  // The model's own optimizer keeps no state: this rank's shard of it is all there is.
  OptimizerState none{whole.type, whole.hyperparameters, {}, false};
  for (const auto& [name, tensor] : named_) none.parameters.push_back({name, {}, {}});
  inner_->ImportOptimizerState(none);

  unit_of_.assign(named_.size(), 0);
  for (size_t u = 0; u < units_.size(); ++u)
    for (size_t index : units_[u].parameters) unit_of_[index] = u;
  if (sharding_.stage >= 3) {
    last_block_.assign(units_.size(), 0);
    for (const std::vector<size_t>& block : inner_->ForwardBlocks()) {
      std::vector<size_t>& units = block_units_.emplace_back();
      for (size_t index : block) {
        size_t u = unit_of_[index];
        if (std::find(units.begin(), units.end(), u) == units.end()) units.push_back(u);
        last_block_[u] = block_units_.size() - 1;
      }
    }
    inner_->SetForwardGate(this);
  }
  reductions_ =
      std::make_unique<ShardReductions>(units_, groups_, sharding_.stage == 1, sharding_.reduce_bucket_size);
  InstallGradientHooks();

  const int rank = announce ? world.rank() : -1;
  int64_t largest = 0;
  for (const FlatUnit& unit : units_) largest = std::max(largest, unit.numel);
  Announce(rank,
           fmt::format("sharded data parallel, stage {}: {} unit{} (largest {} parameters) over {} shard{}{}",
                       sharding_.stage, units_.size(), units_.size() == 1 ? "" : "s", largest,
                       groups_.shard_count(), groups_.shard_count() == 1 ? "" : "s",
                       sharding_.hybrid
                           ? fmt::format(", replicated {} times", world.world_size() / groups_.shard_count())
                           : ""));
  Announce(rank, "wrap units: " + DescribeUnits(units_, inner_->Modules()));
  if (groups_.emulated())
    Announce(rank,
             "hybrid sharding: this back end cannot form subgroups; the world group carries their "
             "collectives (same results, more traffic)");
  if (sharding_.offload_optimizer || sharding_.offload_params)
    Announce(rank, "offload to host memory has no effect: on a CPU run the state already lives there");
  const size_t persistent =
      std::count_if(state_.begin(), state_.end(), [](const UnitState& state) { return state.persistent; });
  Announce(rank, fmt::format("gradients reduced in {} bucket{}, {}{}", reductions_->buckets().size(),
                             reductions_->buckets().size() == 1 ? "" : "s",
                             sharding_.overlap_comm ? "overlapping backward" : "after backward",
                             persistent > 0 ? fmt::format("; {} unit{} kept gathered (below the persistence "
                                                          "threshold)",
                                                          persistent, persistent == 1 ? "" : "s")
                                            : ""));
}

ShardedEngine::~ShardedEngine() {
  for (auto& [accumulator, key] : hooks_) accumulator->del_post_hook(key);
  for (UnitState& state : state_) {
    if (!state.gathering) continue;
    try {
      state.gathering->Wait();
    } catch (const std::exception&) {
      // Reported by the operation that saw it; a destructor must not throw.
    }
  }
  if (sharding_.stage >= 3) inner_->SetForwardGate(nullptr);
}

void ShardedEngine::InstallGradientHooks() {
  for (size_t index = 0; index < named_.size(); ++index) {
    const at::Tensor& parameter = named_[index].second;
    if (!parameter.requires_grad()) continue;
    ++state_[unit_of_[index]].gradients_expected;
    // The variable holds its accumulator weakly; holding it here keeps the hook in future graphs.
    std::shared_ptr<torch::autograd::Node> accumulator = torch::autograd::impl::grad_accumulator(parameter);
    uintptr_t key = accumulator->add_post_hook(std::make_unique<GradientReadyHook>(this, index));
    hooks_.emplace_back(std::move(accumulator), key);
  }
}

void ShardedEngine::PrepareForBackward(bool sync) {
  syncing_ = sync;
  for (UnitState& state : state_) state.gradients_waiting = state.gradients_expected;
  if (sync) reductions_->Begin();
}

void ShardedEngine::OnGradientReady(size_t index) {
  UnitState& state = state_[unit_of_[index]];
  // A parameter read twice gets one call per backward; a stray call (a backward the step loop
  // did not prepare) finds nothing waiting.
  if (state.gradients_waiting == 0) return;
  if (--state.gradients_waiting == 0) UnitGradientsReady(unit_of_[index]);
}

void ShardedEngine::UnitGradientsReady(size_t unit) {
  // Every node that reads the unit's parameters has run: its gathered copy is not needed again
  // in this backward.
  if (sharding_.stage >= 3 && !state_[unit].persistent) Release(unit);
  if (!syncing_ || !sharding_.overlap_comm) return;
  at::NoGradGuard no_grad;
  reductions_->Ready(unit, FlatGradient(units_[unit]));
  for (size_t index : units_[unit].parameters) named_[index].second.mutable_grad() = at::Tensor();
}

at::Tensor ShardedEngine::FlatParameters(const FlatUnit& unit) const {
  at::Tensor flat = at::zeros({unit.padded}, Floats());
  for (size_t i = 0; i < unit.parameters.size(); ++i) {
    size_t index = unit.parameters[i];
    flat.narrow(0, unit.offsets[i], numels_[index]).copy_(named_[index].second.detach().reshape({-1}));
  }
  return flat;
}

bool ShardedEngine::Persistent(const FlatUnit& unit) const {
  return std::all_of(unit.parameters.begin(), unit.parameters.end(),
                     [&](size_t index) { return numels_[index] < sharding_.param_persistence_threshold; });
}

// Stage 3 scatters: each rank receives only its shard (rank r of the world the shard r mod
// shard_count, so every replica of a hybrid layout gets its copy), and `full` holds no bytes
// until the unit is first gathered. Otherwise every rank keeps the whole unit (stages 1-2, and
// stage 3's persistent units), so rank 0 broadcasts it, straight into `full`.
void ShardedEngine::TakeFromRankZero(const FlatUnit& unit, at::Tensor& full, at::Tensor& shard) {
  const bool root = world_.rank() == 0;
  const bool scatter = sharding_.stage >= 3 && !Persistent(unit);
  full = root      ? FlatParameters(unit)
         : scatter ? ShapeOnly({unit.padded}, at::kFloat, device_)
                   : at::empty({unit.padded}, Floats());
  if (!scatter) {
    std::vector<at::Tensor> whole{full};
    world_.Broadcast(whole, 0);
    shard = full.narrow(0, unit.shard_size * groups_.shard_rank(), unit.shard_size).clone();
    return;
  }
  std::vector<at::Tensor> chunks;
  for (int r = 0; root && r < world_.world_size(); ++r)
    chunks.push_back(full.narrow(0, unit.shard_size * (r % groups_.shard_count()), unit.shard_size));
  shard = at::empty({unit.shard_size}, Floats());
  world_.Scatter(chunks, shard, 0);
}

at::Tensor ShardedEngine::FlatGradient(const FlatUnit& unit) const {
  at::Tensor flat = at::zeros({unit.padded}, Floats());
  // Divided before the sum, as DDP's reducer does, so the averages round alike.
  const double world_size = world_.world_size();
  for (size_t i = 0; i < unit.parameters.size(); ++i) {
    const at::Tensor& grad = named_[unit.parameters[i]].second.grad();
    if (!grad.defined()) continue;
    flat.narrow(0, unit.offsets[i], numels_[unit.parameters[i]]).copy_(grad.reshape({-1}));
  }
  return flat.div_(world_size);
}

void ShardedEngine::PointParametersInto(const FlatUnit& unit, const at::Tensor& full) {
  for (size_t i = 0; i < unit.parameters.size(); ++i) {
    size_t index = unit.parameters[i];
    named_[index].second.set_data(ViewOfStorage(full, unit.offsets[i], shapes_[index]));
  }
}

void ShardedEngine::AllGatherInto(size_t unit, at::Tensor& full) {
  groups_.AllGather(state_[unit].shard.detach(), full);
  if (fault_ == TestFault::kShardOffset) full.copy_(full.roll(units_[unit].shard_size));
}

void ShardedEngine::Gather(size_t unit) {
  UnitState& state = state_[unit];
  at::NoGradGuard no_grad;
  if (state.gathering) {
    std::unique_ptr<distributed::PendingWork> work = std::move(state.gathering);
    work->Wait();
    if (fault_ == TestFault::kShardOffset) state.full.copy_(state.full.roll(units_[unit].shard_size));
    state.gathered = true;
    return;
  }
  if (state.gathered) return;
  AllocateBytes(state.full);
  AllGatherInto(unit, state.full);
  state.gathered = true;
}

void ShardedEngine::Prefetch(size_t unit) {
  UnitState& state = state_[unit];
  if (state.gathered || state.gathering) return;
  at::NoGradGuard no_grad;
  AllocateBytes(state.full);
  state.gathering = groups_.AllGatherAsync(state.shard.detach(), state.full);
}

void ShardedEngine::PrefetchBlock(size_t block) {
  int64_t live = 0;
  for (size_t u = 0; u < units_.size(); ++u)
    if (state_[u].gathered || state_[u].gathering) live += units_[u].padded;
  int64_t ahead = 0;
  for (size_t unit : block_units_.at(block)) {
    const UnitState& state = state_[unit];
    if (state.gathered || state.gathering) continue;
    const int64_t size = units_[unit].padded;
    if (live + size > sharding_.max_live_parameters) return;
    // DeepSpeed fetches ahead until a bucket's worth is on its way (at least one unit).
    if (sharding_.engine == plan::ShardingEngine::deepspeed && ahead > 0 &&
        ahead + size > sharding_.prefetch_bucket_size)
      return;
    Prefetch(unit);
    live += size;
    ahead += size;
  }
}

void ShardedEngine::Release(size_t unit) {
  UnitState& state = state_[unit];
  if (state.gathering) {
    // Gloo still writes into the storage: let it finish first.
    std::unique_ptr<distributed::PendingWork> work = std::move(state.gathering);
    work->Wait();
  }
  ReleaseBytes(state.full);
  state.gathered = false;
}

void ShardedEngine::ReleaseAll() {
  for (size_t u = 0; u < units_.size(); ++u)
    if ((state_[u].gathered || state_[u].gathering) && !state_[u].persistent) Release(u);
}

void ShardedEngine::Enter(size_t block) {
  for (size_t unit : block_units_.at(block)) Gather(unit);
  if (sharding_.forward_prefetch && block + 1 < block_units_.size()) PrefetchBlock(block + 1);
}

void ShardedEngine::RegatherForBackward(size_t block) {
  for (size_t unit : block_units_.at(block)) Gather(unit);
  if (sharding_.backward_prefetch != plan::BackwardPrefetch::none && block > 0) PrefetchBlock(block - 1);
}

at::Tensor ShardedEngine::Leave(size_t block, const at::Tensor& output) {
  at::Tensor result = output;
  if (at::GradMode::is_enabled() && output.requires_grad())
    result = RegatherBeforeBackward::apply(output, this, static_cast<int64_t>(block));
  // The last block's units stay: backward starts with them (FSDP keeps its root gathered).
  if (sharding_.reshard_after_forward && block + 1 < block_units_.size()) {
    for (size_t unit : block_units_[block])
      if (last_block_[unit] == block && !state_[unit].persistent) Release(unit);
  }
  return result;
}

void ShardedEngine::Finalize() {
  if (sharding_.stage >= 3) ReleaseAll();
  if (!syncing_) return;
  at::NoGradGuard no_grad;
  // What backward's hooks did not start (without overlap_comm, all of it; with it, the units
  // with a parameter that got no gradient), in launch order.
  for (size_t u = units_.size(); u-- > 0;)
    if (!reductions_->ready(u)) reductions_->Ready(u, FlatGradient(units_[u]));
  std::vector<ShardReductions::Reduced> reduced = reductions_->Finish();
  for (size_t u = 0; u < units_.size(); ++u) {
    at::Tensor shard = reduced[u].shard;
    if (fault_ == TestFault::kGradScale) shard.mul_(kFaultGradScale);
    state_[u].shard.mutable_grad() = shard;
    state_[u].full_grad = reduced[u].whole;
  }
  // The whole gradients are freed (stage 1 keeps each unit's flat buffer until the step).
  for (auto& [name, parameter] : named_) parameter.mutable_grad() = at::Tensor();
}

double ShardedEngine::ClipGradNorm(double max_norm) {
  at::NoGradGuard no_grad;
  double squares = 0;
  for (const UnitState& state : state_) {
    const at::Tensor& grad = state.shard.grad();
    if (grad.defined()) squares += grad.to(at::kDouble).pow(2).sum().item<double>();
  }
  // Padding is zero, so the shards' squares add up to the whole model's.
  const double total = std::sqrt(groups_.SumOverShardGroup(squares));
  // clip_grad_norm_'s coefficient, in its float32.
  const float coefficient =
      std::min(1.0f, static_cast<float>(max_norm) / (static_cast<float>(total) + 1e-6f));
  for (UnitState& state : state_)
    if (state.shard.grad().defined()) state.shard.mutable_grad().mul_(coefficient);
  return total;
}

bool ShardedEngine::UnscaleGradients(double inv_scale) {
  std::vector<at::Tensor> gradients;
  for (UnitState& state : state_)
    if (state.shard.grad().defined()) gradients.push_back(state.shard.grad());
  const bool overflow = UnscaleAndFindNonFinite(gradients, inv_scale);
  return groups_.SumOverShardGroup(overflow ? 1.0 : 0.0) > 0;
}

void ShardedEngine::SetLearningRate(double lr) {
  for (torch::optim::OptimizerParamGroup& group : optimizer_->param_groups()) group.options().set_lr(lr);
  inner_->SetLearningRate(lr);
}

double ShardedEngine::learning_rate() const { return optimizer_->param_groups().at(0).options().get_lr(); }

void ShardedEngine::OptimizerStep(bool skip) {
  if (!skip) optimizer_->step();
  at::NoGradGuard no_grad;
  for (UnitState& state : state_) {
    state.shard.mutable_grad() = at::Tensor();
    state.full_grad = at::Tensor();
  }
  for (auto& [name, parameter] : named_) parameter.mutable_grad() = at::Tensor();
  if (sharding_.stage >= 3) {
    ReleaseAll();  // a unit gathered for evaluation is stale now
    for (size_t u = 0; u < units_.size(); ++u)
      if (state_[u].persistent) AllGatherInto(u, state_[u].full);
    return;
  }
  AllGatherAfterStep();
}

void ShardedEngine::AllGatherAfterStep() {
  // Small units coalesce into buckets of at most allgather_bucket_size elements (one all-gather
  // each), in unit order; a larger unit, or one of kAloneElements or more, is gathered alone,
  // straight into its buffer.
  at::NoGradGuard no_grad;
  const int64_t shards = groups_.shard_count();
  size_t first = 0;
  while (first < units_.size()) {
    size_t end = first + 1;
    int64_t elements = units_[first].padded;
    while (end < units_.size() && elements < kAloneElements && units_[end].padded < kAloneElements &&
           elements + units_[end].padded <= sharding_.allgather_bucket_size)
      elements += units_[end++].padded;
    if (end == first + 1) {
      AllGatherInto(first, state_[first].full);
    } else {
      std::vector<at::Tensor> pieces;
      for (size_t u = first; u < end; ++u) pieces.push_back(state_[u].shard.detach());
      at::Tensor gathered = at::empty({elements}, Floats());
      groups_.AllGather(at::cat(pieces), gathered);
      // Rank r's part of `gathered` is its shard of every unit, end to end.
      at::Tensor by_rank = gathered.view({shards, elements / shards});
      int64_t offset = 0;
      for (size_t u = first; u < end; ++u) {
        const int64_t size = units_[u].shard_size;
        state_[u].full.view({shards, size}).copy_(by_rank.narrow(1, offset, size));
        if (fault_ == TestFault::kShardOffset) state_[u].full.copy_(state_[u].full.roll(size));
        offset += size;
      }
    }
    first = end;
  }
}

std::vector<std::pair<std::string, at::Tensor>> ShardedEngine::NamedShards() const {
  std::vector<std::pair<std::string, at::Tensor>> named;
  for (size_t u = 0; u < units_.size(); ++u) named.emplace_back(UnitName(u), state_[u].shard);
  return named;
}

void ShardedEngine::BeginFullState(FullState what, FullStateReaders readers) {
  const bool first_only = readers == FullStateReaders::kFirstRanks && groups_.GathersToFirstRanks();
  const bool reads = !first_only || groups_.shard_rank() == 0;
  if (sharding_.stage >= 3) {
    at::NoGradGuard no_grad;
    for (size_t u = 0; u < units_.size(); ++u) {
      UnitState& state = state_[u];
      // A unit gathered (persistent) or on its way is so on every rank alike.
      if (!first_only || state.gathered || state.gathering) {
        Gather(u);
      } else {
        at::Tensor none;
        if (reads) AllocateBytes(state.full);
        groups_.GatherToFirst(state.shard.detach(), reads ? state.full : none);
        state.gathered = reads;
      }
    }
  }
  if (what == FullState::kWeightsAndOptimizer) {
    OptimizerState whole = GatherOptimizerState(first_only);
    if (reads) full_state_ = std::move(whole);
  }
}

void ShardedEngine::EndFullState() {
  full_state_.reset();
  if (sharding_.stage >= 3) ReleaseAll();
}

OptimizerState ShardedEngine::GatherOptimizerState(bool first_only) {
  at::NoGradGuard no_grad;
  OptimizerState shards = train::ExportOptimizerState(*optimizer_, type_, NamedShards());
  OptimizerState whole{type_, shards.hyperparameters, {}, true};
  for (const auto& [name, tensor] : named_) whole.parameters.push_back({name, {}, {}});
  for (size_t u = 0; u < units_.size(); ++u) {
    const FlatUnit& unit = units_[u];
    const OptimizerState::Parameter& shard = shards.parameters[u];
    for (const auto& [key, tensor] : shard.tensors) {
      if (first_only && groups_.shard_rank() != 0) {
        at::Tensor none;
        groups_.GatherToFirst(tensor.contiguous(), none);
        continue;
      }
      at::Tensor full = at::empty({unit.padded}, Floats());
      if (first_only) {
        groups_.GatherToFirst(tensor.contiguous(), full);
      } else {
        groups_.AllGather(tensor.contiguous(), full);
      }
      for (size_t i = 0; i < unit.parameters.size(); ++i) {
        size_t index = unit.parameters[i];
        whole.parameters[index].tensors.emplace_back(
            key, full.narrow(0, unit.offsets[i], numels_[index]).view(shapes_[index]));
      }
    }
    for (size_t index : unit.parameters) whole.parameters[index].counters = shard.counters;
  }
  return whole;
}

OptimizerState ShardedEngine::ExportOptimizerState() const {
  if (!full_state_)
    throw std::logic_error(
        "the sharded engine's whole optimizer state is only gathered between BeginFullState "
        "and EndFullState");
  return *full_state_;
}

void ShardedEngine::ImportOptimizerState(const OptimizerState& state) {
  if (state.type != type_) {
    throw std::invalid_argument(
        fmt::format("the optimizer state is {}'s, this optimizer is {}", state.type, type_));
  }
  std::map<std::string, const OptimizerState::Parameter*> by_name;
  for (const OptimizerState::Parameter& parameter : state.parameters) by_name[parameter.name] = &parameter;
  OptimizerState shards{type_, state.hyperparameters, {}, true};
  at::NoGradGuard no_grad;
  for (size_t u = 0; u < units_.size(); ++u) {
    const FlatUnit& unit = units_[u];
    OptimizerState::Parameter& shard = shards.parameters.emplace_back();
    shard.name = UnitName(u);
    const OptimizerState::Parameter* first = nullptr;
    for (size_t index : unit.parameters) {
      auto found = by_name.find(named_[index].first);
      if (found == by_name.end())
        throw std::invalid_argument(
            fmt::format("the optimizer state has no parameter `{}`", named_[index].first));
      if (first == nullptr && !found->second->tensors.empty()) first = found->second;
    }
    if (first == nullptr) continue;  // not stepped yet
    shard.counters = first->counters;
    for (const auto& [key, unused] : first->tensors) {
      at::Tensor flat = at::zeros({unit.padded}, Floats());
      for (size_t i = 0; i < unit.parameters.size(); ++i) {
        size_t index = unit.parameters[i];
        const OptimizerState::Parameter& parameter = *by_name.at(named_[index].first);
        auto tensor = std::find_if(parameter.tensors.begin(), parameter.tensors.end(),
                                   [&](const auto& entry) { return entry.first == key; });
        if (tensor == parameter.tensors.end() || tensor->second.numel() != numels_[index]) {
          throw std::invalid_argument(fmt::format(
              "the optimizer state `{}` of `{}` is missing or has another size", key, parameter.name));
        }
        flat.narrow(0, unit.offsets[i], numels_[index]).copy_(tensor->second.reshape({-1}));
      }
      shard.tensors.emplace_back(
          key, flat.narrow(0, unit.shard_size * groups_.shard_rank(), unit.shard_size).clone());
    }
  }
  train::ImportOptimizerState(shards, type_, NamedShards(), *optimizer_);
}

std::vector<ShardedEngine::ShardSlice> ShardedEngine::ExportShardSlices() const {
  OptimizerState shards = train::ExportOptimizerState(*optimizer_, type_, NamedShards());
  std::vector<ShardSlice> slices;
  for (size_t u = 0; u < units_.size(); ++u) {
    const FlatUnit& unit = units_[u];
    const int64_t begin = unit.shard_size * groups_.shard_rank();
    const int64_t end = begin + unit.shard_size;
    for (size_t i = 0; i < unit.parameters.size(); ++i) {
      size_t index = unit.parameters[i];
      const int64_t start = std::max(begin, unit.offsets[i]);
      const int64_t stop = std::min(end, unit.offsets[i] + numels_[index]);
      if (start >= stop) continue;
      ShardSlice slice{named_[index].first,
                       shapes_[index],
                       start - unit.offsets[i],
                       stop - unit.offsets[i],
                       state_[u].shard.detach().narrow(0, start - begin, stop - start),
                       {},
                       {}};
      for (const auto& [key, tensor] : shards.parameters[u].tensors)
        slice.state.emplace_back(key, tensor.narrow(0, start - begin, stop - start));
      slice.counters = shards.parameters[u].counters;
      slices.push_back(std::move(slice));
    }
  }
  return slices;
}

OptimizerState ShardedEngine::ExportOptimizerLayout() const {
  OptimizerState shards = train::ExportOptimizerState(*optimizer_, type_, NamedShards());
  OptimizerState layout{type_, shards.hyperparameters, {}, false};
  for (const auto& [name, tensor] : named_) layout.parameters.push_back({name, {}, {}});
  // Every parameter of a unit shares the unit's counters, as GatherOptimizerState says.
  for (size_t u = 0; u < units_.size(); ++u)
    for (size_t index : units_[u].parameters)
      layout.parameters[index].counters = shards.parameters[u].counters;
  return layout;
}

void ShardedEngine::ImportShardSlices(const SliceReader& read, const std::vector<std::string>& state_keys,
                                      const std::vector<std::pair<std::string, int64_t>>& counters) {
  at::NoGradGuard no_grad;
  OptimizerState shards{
      type_, train::ExportOptimizerState(*optimizer_, type_, NamedShards()).hyperparameters, {}, true};
  for (size_t u = 0; u < units_.size(); ++u) {
    const FlatUnit& unit = units_[u];
    const int64_t begin = unit.shard_size * groups_.shard_rank();
    const int64_t end = begin + unit.shard_size;
    OptimizerState::Parameter& shard = shards.parameters.emplace_back();
    shard.name = UnitName(u);
    shard.counters = counters;
    std::vector<std::string> keys{""};
    keys.insert(keys.end(), state_keys.begin(), state_keys.end());
    for (const std::string& key : keys) {
      at::Tensor values = at::zeros({unit.shard_size}, Floats());
      for (size_t i = 0; i < unit.parameters.size(); ++i) {
        size_t index = unit.parameters[i];
        const int64_t start = std::max(begin, unit.offsets[i]);
        const int64_t stop = std::min(end, unit.offsets[i] + numels_[index]);
        if (start >= stop) continue;
        at::Tensor range =
            read(named_[index].first, key, start - unit.offsets[i], stop - unit.offsets[i]).reshape({-1});
        // The test hook's wrong offset: each range lands one element off.
        if (fault_ == TestFault::kSliceOffset) range = range.roll(1);
        values.narrow(0, start - begin, stop - start).copy_(range);
      }
      if (key.empty()) {
        state_[u].shard.detach().copy_(values);
      } else {
        shard.tensors.emplace_back(key, values);
      }
    }
  }
  if (!state_keys.empty()) train::ImportOptimizerState(shards, type_, NamedShards(), *optimizer_);
  // Stages 1 and 2 keep whole parameters: rebuild them from the shards.
  if (sharding_.stage < 3) {
    AllGatherAfterStep();
  } else {
    for (size_t u = 0; u < units_.size(); ++u)
      if (state_[u].persistent) AllGatherInto(u, state_[u].full);
  }
}

}  // namespace accel::rt::train
