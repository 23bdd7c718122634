#ifndef ACCEL_RUNTIME_ENGINE_SHARDED_ENGINE_H_
#define ACCEL_RUNTIME_ENGINE_SHARDED_ENGINE_H_

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <ATen/core/Tensor.h>
#include <c10/core/TensorOptions.h>

#include "compiler/plan/plan.h"
#include "runtime/distributed/collectives.h"
#include "runtime/engine/flat_units.h"
#include "runtime/engine/gradient_sync.h"
#include "runtime/engine/shard_groups.h"
#include "runtime/engine/shard_reductions.h"
#include "runtime/model/forwarding_trainer.h"

namespace torch::autograd {
struct Node;
}  // namespace torch::autograd
namespace torch::optim {
class Optimizer;
}  // namespace torch::optim

namespace accel::rt::train {

// Data parallelism over sharded model state, as DeepSpeed ZeRO stages 1-3 and FSDP run it
// (docs/sharding.md). The model's parameters are grouped into units (flat_units.h); each unit's
// parameters are laid end to end in one flat fp32 buffer, and each rank of the shard group owns
// one contiguous shard of it. The optimizer (the loop's, built over the shards) holds state for
// this rank's shards only.
//   stage 1: after a synced backward the flat gradients are reduce-scattered (the whole
//            gradient buffers are kept until the step); the optimizer steps this rank's shard;
//            the shards are all-gathered back into the parameters.
//   stage 2: as stage 1, but only the shard's gradient is kept.
//   stage 3: as stage 2, and the parameters live sharded: a unit is gathered before the first
//            forward block that reads it, freed after the last one (reshard_after_forward,
//            except the units of the last block), gathered again before the backward of a
//            block that reads it, and freed after backward.
// Gradients are the mean over the world (divided by the world size before summing, as DDP's
// reducer does). With hybrid sharding, shards are reduced over the whole world. A post-hook on
// each parameter's gradient accumulator sees a unit's gradients complete during backward: stage 3
// frees the unit's gathered parameters there (FSDP's post-backward reshard), and with
// `overlap_comm` the unit's reduction starts there, in buckets (shard_reductions.h), while
// backward goes on; otherwise the reductions start after backward.
// Stage 3 gathers ahead of use: the next block's units during a block's forward
// (`forward_prefetch`) and the previous block's during a block's backward (`backward_prefetch`),
// never more than one block ahead nor past `max_live_parameters` gathered elements, and for
// DeepSpeed no more than `prefetch_bucket_size` elements at once. A unit whose parameters are
// each smaller than `param_persistence_threshold` stays gathered (DeepSpeed's persistent
// parameters).
//
// It is the Trainer the worker drives: forward and evaluation pass through to the model it
// wraps; clipping, the learning rate, the optimizer step and optimizer state are its own.
class ShardedEngine final : public ForwardingTrainer, public GradientSync, private ForwardGate {
 public:
  // Takes `model` over, with its parameters already equal on every rank and its optimizer
  // state (a resumed checkpoint's) resharded onto this world. Collective. Throws
  // std::invalid_argument for a sharding this runtime cannot run (see WrapUnits, ShardGroups).
  // `world` is the data-parallel group (the world, or with tensor parallelism the ranks of one
  // tensor-parallel position); with hybrid sharding, shard groups are `processes_per_machine`
  // of its consecutive ranks. `announce`: its rank 0 prints the layout (one group of several
  // prints it). `weights` kShapesOnly (cpu_ram_efficient_loading): only rank 0 of `world` holds
  // the values, the other ranks' parameters may be shapes only (weight_storage.h), and each
  // unit reaches them from rank 0: at stage 3 as their shards alone (a scatter), so no rank
  // but 0 ever holds the whole model; at stages 1-2, which keep whole parameters, broadcast.
  ShardedEngine(std::unique_ptr<Trainer> model, const plan::TrainLoop& loop, int processes_per_machine,
                distributed::Collectives& world, bool announce = true,
                InitialWeights weights = InitialWeights::kValues);
  ~ShardedEngine() override;
  ShardedEngine(const ShardedEngine&) = delete;
  ShardedEngine& operator=(const ShardedEngine&) = delete;

  const std::vector<FlatUnit>& units() const { return units_; }
  const ShardGroups& groups() const { return groups_; }

  // GradientSync.
  void PrepareForBackward(bool sync) override;
  void Finalize() override;
  // kFirstRanks where the groups cannot gather to them alone (emulated) reads on every rank.
  void BeginFullState(FullState what = FullState::kWeightsAndOptimizer,
                      FullStateReaders readers = FullStateReaders::kEveryRank) override;
  void EndFullState() override;

  // Trainer: the optimizer is the engine's, over the shards; the rest is the model's
  // (ForwardingTrainer).
  double ClipGradNorm(double max_norm) override;
  // This rank's gradient shards; an overflow anywhere in the shard group counts for all.
  bool UnscaleGradients(double inv_scale) override;
  void SetLearningRate(double lr) override;
  double learning_rate() const override;
  // Steps the shards, then (stages 1, 2) all-gathers them into the parameters.
  void OptimizerStep(bool skip) override;
  // The whole optimizer state by parameter name, as an unsharded run's: only between
  // BeginFullState and EndFullState (throws std::logic_error otherwise).
  OptimizerState ExportOptimizerState() const override;
  // Takes this rank's shard of a whole state (any world size's checkpoint).
  void ImportOptimizerState(const OptimizerState& state) override;

  // For `state_dict_type = sharded` checkpoints (runtime/engine/sharded_checkpoint.h writes and
  // reads them through these): what this rank holds of each parameter.
  struct ShardSlice {
    std::string name;
    std::vector<int64_t> shape;
    // [start, end) of the parameter's flattened elements this rank holds, and those elements.
    int64_t start = 0;
    int64_t end = 0;
    at::Tensor data;
    // The optimizer state's tensors over the same range, by key; counters whole.
    std::vector<std::pair<std::string, at::Tensor>> state;
    std::vector<std::pair<std::string, int64_t>> counters;
  };
  // Every parameter this rank's shards overlap, in parameter order: views of the live shards
  // and optimizer state, valid until the next optimizer step. Not collective.
  std::vector<ShardSlice> ExportShardSlices() const;
  // Whether this rank's slices belong in a sharded checkpoint: with hybrid sharding only the
  // first machine's ranks do (the other machines hold copies of the same shards).
  bool WritesShardSlices() const { return world_.rank() < groups_.shard_count(); }
  // The whole optimizer state's layout as an unsharded run exports it (type, hyper-parameters,
  // every parameter by name with its counters) but without tensors: what `optimizer.json`
  // records. Not collective.
  OptimizerState ExportOptimizerLayout() const;
  // The inverse of ExportShardSlices: `read(name, key, start, end)` returns elements
  // [start, end) of the named parameter's flattened tensor (`key` empty) or of its optimizer
  // state `key`, from a sharded checkpoint of any world size; `counters` gives every
  // parameter's counters (`step`). Writes this rank's shards and optimizer state; collective at
  // stages 1 and 2, which gather the whole parameters again. `read` must not fail (check the
  // checkpoint first): a throw leaves the other ranks in the gather.
  using SliceReader =
      std::function<at::Tensor(const std::string& name, const std::string& key, int64_t start, int64_t end)>;
  void ImportShardSlices(const SliceReader& read, const std::vector<std::string>& state_keys,
                         const std::vector<std::pair<std::string, int64_t>>& counters);

  // Stage 3: regathers the units block `block` reads (the autograd node before its backward),
  // and prefetches the previous block's.
  void RegatherForBackward(size_t block);
  // The accumulator hook: parameter `index` has its gradient for this backward.
  void OnGradientReady(size_t index);

 private:
  struct UnitState {
    at::Tensor shard;      // this rank's shard of the parameters: the optimizer's tensor
    at::Tensor full;       // the flat parameters, which the model's parameters view
    bool gathered = true;  // stage 3: whether `full` has storage (else 0 bytes)
    at::Tensor full_grad;  // stage 1: the unit's whole gradient buffer, held until the step
    // Stage 3: a prefetch writing into `full`; Gather waits for it.
    std::unique_ptr<distributed::PendingWork> gathering;
    bool persistent = false;        // stage 3: never released
    size_t gradients_expected = 0;  // parameters that get a gradient (require one)
    size_t gradients_waiting = 0;   // of those, still without one in this backward
  };

  // ForwardGate (stage 3).
  void Enter(size_t block) override;
  at::Tensor Leave(size_t block, const at::Tensor& output) override;

  at::Tensor FlatParameters(const FlatUnit& unit) const;
  // Stage 3 keeps the unit gathered: each of its parameters is below param_persistence_threshold.
  bool Persistent(const FlatUnit& unit) const;
  // InitialWeights::kShapesOnly: the unit's flat parameters and this rank's shard, from rank 0.
  void TakeFromRankZero(const FlatUnit& unit, at::Tensor& full, at::Tensor& shard);
  at::Tensor FlatGradient(const FlatUnit& unit) const;
  void PointParametersInto(const FlatUnit& unit, const at::Tensor& full);
  void Gather(size_t unit);
  void Prefetch(size_t unit);
  void PrefetchBlock(size_t block);
  void Release(size_t unit);
  void ReleaseAll();
  void AllGatherInto(size_t unit, at::Tensor& full);
  void AllGatherAfterStep();
  void InstallGradientHooks();
  void UnitGradientsReady(size_t unit);
  // `first_only`: only the first rank of each shard group receives it (the others return none).
  OptimizerState GatherOptimizerState(bool first_only);
  std::vector<std::pair<std::string, at::Tensor>> NamedShards() const;

  plan::Sharding sharding_;
  distributed::Collectives& world_;
  ShardGroups groups_;
  std::vector<std::pair<std::string, at::Tensor>> named_;
  // Where the model computes (its parameters' device): the flat buffers and shards live there.
  c10::Device device_;
  at::TensorOptions Floats() const { return at::TensorOptions().dtype(at::kFloat).device(device_); }
  std::vector<std::vector<int64_t>> shapes_;
  std::vector<int64_t> numels_;
  std::vector<FlatUnit> units_;
  std::vector<UnitState> state_;
  std::string type_;
  std::unique_ptr<torch::optim::Optimizer> optimizer_;
  // Stage 3: the units each forward block reads, and each unit's last block.
  std::vector<std::vector<size_t>> block_units_;
  std::vector<size_t> last_block_;
  std::vector<size_t> unit_of_;  // parameter index -> its unit
  std::unique_ptr<ShardReductions> reductions_;
  std::vector<std::pair<std::shared_ptr<torch::autograd::Node>, uintptr_t>> hooks_;
  std::optional<OptimizerState> full_state_;
  TestFault fault_;
  bool syncing_ = false;
};

}  // namespace accel::rt::train

#endif  // ACCEL_RUNTIME_ENGINE_SHARDED_ENGINE_H_
