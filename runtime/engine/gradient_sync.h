#ifndef ACCEL_RUNTIME_ENGINE_GRADIENT_SYNC_H_
#define ACCEL_RUNTIME_ENGINE_GRADIENT_SYNC_H_

#include <memory>
#include <string>

#include "runtime/engine/reducer.h"
#include "runtime/model/test_fault.h"

// What the worker's step loop calls around each backward, the same for DDP (Reducer) and the
// sharded engine (ShardedEngine): PrepareForBackward(sync), backward, Finalize(). Clipping and
// the optimizer step are the trainer's (the sharded engine is itself a Trainer).
namespace accel::rt::train {

// What a save reads whole: the final weights need the parameters; a checkpoint also the
// optimizer state.
enum class FullState { kWeights, kWeightsAndOptimizer };

// Which ranks read the whole state a save gathers.
enum class FullStateReaders {
  kEveryRank,
  // Only the first rank of each shard group (rank 0; with hybrid sharding the first rank of
  // each machine), as FSDP's rank0_only state dicts: the others take part in the gathers and
  // hold nothing whole. For a save only those ranks write.
  kFirstRanks,
};

class GradientSync {
 public:
  virtual ~GradientSync() = default;
  // Before each backward; `sync` false accumulates gradients locally (no_sync).
  virtual void PrepareForBackward(bool sync) = 0;
  // After each backward (synced or not). Collective on a synced one: the gradients are then
  // averaged over the ranks.
  virtual void Finalize() = 0;
  // Collective, on every rank, before a save that reads the trainer: the sharded engine gathers
  // the whole parameters, and the whole optimizer state if asked, for `readers`; EndFullState
  // lets them go again. The other ranks must not read the trainer's state in between.
  virtual void BeginFullState(FullState /*what*/ = FullState::kWeightsAndOptimizer,
                              FullStateReaders /*readers*/ = FullStateReaders::kEveryRank) {}
  virtual void EndFullState() {}
};

// DDP: the Reducer.
std::unique_ptr<GradientSync> MakeDdpSync(std::unique_ptr<Reducer> reducer,
                                          std::vector<std::pair<std::string, at::Tensor>> named_parameters);

}  // namespace accel::rt::train

#endif  // ACCEL_RUNTIME_ENGINE_GRADIENT_SYNC_H_
