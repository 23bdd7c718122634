#ifndef ACCEL_RUNTIME_ENGINE_TENSOR_PARALLEL_H_
#define ACCEL_RUNTIME_ENGINE_TENSOR_PARALLEL_H_

#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <ATen/core/Tensor.h>

#include "compiler/plan/plan.h"
#include "runtime/distributed/collectives.h"
#include "runtime/engine/gradient_sync.h"
#include "runtime/model/forwarding_trainer.h"
#include "runtime/model/tensor_parallel_ops.h"

// Tensor parallelism composed with data parallelism, as Accelerate's ParallelismConfig lays out
// its device mesh (dp_replicate, dp_shard, tp; tp innermost): docs/sharding.md.
namespace accel::rt::train {

// Where one rank sits in the mesh. World rank = dp_rank * tensor_parallel + tp_rank, and
// dp_rank = replica * shard + position in its shard group.
struct MeshPlace {
  int tensor_parallel = 1;  // ranks per tensor-parallel group
  int shard = 1;            // data-parallel ranks per shard group
  int replicate = 1;        // shard groups holding the same shards (HSDP)
  int tp_rank = 0;          // position in its tensor-parallel group
  int dp_rank = 0;          // rank among the data-parallel ranks of its tensor-parallel position
  int dp_size = 1;          // shard x replicate

  // The world ranks of `rank`'s tensor-parallel group (consecutive) and of its data-parallel
  // group (every tensor_parallel-th rank from its tp_rank), ascending.
  std::vector<int> TensorParallelRanks(int rank) const;
  std::vector<int> DataParallelRanks(int rank) const;
};

// Places `rank` of `world_size` by the plan's sharding: `tensor_parallel` consecutive ranks
// per group, and data-parallel shard groups of `dp_shard_size` ranks (0: every
// data-parallel rank, or with hybrid sharding the data-parallel ranks of one machine of
// `processes_per_machine` processes). Throws std::invalid_argument, saying what to change,
// when the sizes do not divide the world.
MeshPlace PlaceInMesh(int rank, int world_size, const plan::Sharding& sharding, int processes_per_machine);

// The groups of a mesh with tensor parallelism: this rank's tensor-parallel group and its
// data-parallel group, formed with Collectives::NewGroup (collective over the world, every rank
// forming its tensor-parallel group first). Throws std::invalid_argument when the back end
// cannot form subgroups.
struct MeshGroups {
  std::unique_ptr<distributed::Collectives> tensor_parallel;
  std::unique_ptr<distributed::Collectives> data_parallel;
};
MeshGroups FormMeshGroups(distributed::Collectives& world, const MeshPlace& place);

// The worker's view of a tensor-parallel model: it wraps the trainer the step loop drives (the
// model, or the sharded engine over it) and the gradient synchronisation of the data-parallel
// group. Between BeginFullState and EndFullState its parameters and optimizer state are whole
// (every slice gathered over the tensor-parallel group, named and shaped as a run without
// tensor parallelism): a save reads them, a load writes them, and EndFullState puts this rank's
// slices back. Everything else passes through.
class TensorParallelTrainer final : public ForwardingTrainer, public GradientSync {
 public:
  // `dims`: per NamedParameters() entry, the dimension it is split along, -1 when replicated.
  TensorParallelTrainer(std::unique_ptr<Trainer> inner, std::vector<int> dims,
                        distributed::Collectives& group);

  // The wrapped trainer, to be replaced (the sharded engine takes it over), and its sync.
  std::unique_ptr<Trainer> Release() { return std::move(inner_); }
  void Adopt(std::unique_ptr<Trainer> inner, GradientSync* sync) {
    inner_ = std::move(inner);
    sync_ = sync;
  }
  void set_sync(GradientSync* sync) { sync_ = sync; }

  // GradientSync.
  // Without a sync (a test's single data-parallel rank), gradients are left as backward made them.
  void PrepareForBackward(bool sync) override {
    if (sync_ != nullptr) sync_->PrepareForBackward(sync);
  }
  void Finalize() override {
    if (sync_ != nullptr) sync_->Finalize();
  }
  // Every rank reads: each gathers its slices' whole tensors.
  void BeginFullState(FullState what = FullState::kWeightsAndOptimizer,
                      FullStateReaders readers = FullStateReaders::kEveryRank) override;
  void EndFullState() override;

  // Trainer: the rest passes through (ForwardingTrainer).
  double ClipGradNorm(double max_norm) override;
  // The inner trainer's answer for this rank's slices, shared over the tensor-parallel group.
  bool UnscaleGradients(double inv_scale) override;
  std::vector<std::pair<std::string, at::Tensor>> NamedParameters() const override;
  OptimizerState ExportOptimizerState() const override;
  // Takes this rank's slices of a whole state (a checkpoint of a run with or without tensor
  // parallelism).
  void ImportOptimizerState(const OptimizerState& state) override;
  std::vector<int> TensorParallelDims() const override { return dims_; }

 private:
  at::Tensor Gather(const at::Tensor& slice, int dim) const;
  std::map<std::string, int> DimsByName() const;

  GradientSync* sync_ = nullptr;
  std::vector<int> dims_;
  distributed::Collectives& group_;
  bool full_ = false;
  // Between BeginFullState and EndFullState: the whole parameters by name, and the whole
  // optimizer state (gathered there, since only the ranks that write read it).
  std::vector<std::pair<std::string, at::Tensor>> whole_;
  OptimizerState whole_state_;
};

}  // namespace accel::rt::train

#endif  // ACCEL_RUNTIME_ENGINE_TENSOR_PARALLEL_H_
