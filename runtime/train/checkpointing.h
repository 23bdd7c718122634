#ifndef ACCEL_RUNTIME_TRAIN_CHECKPOINTING_H_
#define ACCEL_RUNTIME_TRAIN_CHECKPOINTING_H_

#include <filesystem>
#include <optional>
#include <string>

#include "compiler/plan/plan.h"
#include "llvm/Support/Error.h"
#include "runtime/checkpoint/checkpoint_store.h"
#include "runtime/distributed/collectives.h"
#include "runtime/engine/sharded_engine.h"
#include "runtime/engine/train_state.h"
#include "runtime/model/trainer.h"

// The worker's checkpoint phase: where a plan's `checkpoint` step saves, what `--resume` loads,
// and save_state at a trigger point (docs/checkpoints.md).
namespace accel::rt::train {

// The checkpoint store of a `checkpoint` step: its project dir, or else the run's output dir.
// A fresh run (`resume` empty) whose automatic naming would collide with a checkpoint of an
// earlier run fails now, before any step is spent (the store never overwrites one).
llvm::Expected<checkpoint::CheckpointStore> OpenCheckpointStore(const plan::Checkpoint& spec,
                                                                const std::filesystem::path& output_dir,
                                                                const std::string& resume);

// The checkpoint `--resume` asks for, verified; nullopt when `auto` finds none (a fresh run).
// A checkpoint that exists but does not verify is an error, never a silent fresh start.
// With `report`, the store's warnings go to stderr.
llvm::Expected<std::optional<checkpoint::VerifiedCheckpoint>> FindResumePoint(
    checkpoint::CheckpointStore& store, const plan::Checkpoint& spec, const std::filesystem::path& output_dir,
    const std::string& resume, bool report);

// After an automatic resume fell back past newer checkpoints that did not verify, their numbers
// would collide with the resumed run's next saves: they are renamed `checkpoint_N.rejected`,
// kept for inspection, no longer loaded.
llvm::Error SetAsideRejected(const checkpoint::CheckpointStore& store);

// Guards `store`'s rotation for a run (CheckpointStore::GuardRotation): it never removes
// `resumed_from` (empty for a fresh run), nor a checkpoint whose step is beyond `progress.step`
// at the save (the newest step this run has written), nor one whose step it cannot read. A
// tampered or mistaken run can then write checkpoints, but not destroy the ones it came from.
// `progress` must outlive the store's saves.
void GuardRotation(checkpoint::CheckpointStore& store, const std::string& resumed_from, const Progress& progress);

// Whether this rank writes checkpoints: rank 0, or with save_on_each_node every machine's
// local rank 0.
bool WritesCheckpoints(const plan::Checkpoint& spec, const plan::InitProcessGroup& init, int rank);

// save_state. Collective: every rank's RNG state travels to the writers, which save while the
// others wait at a barrier. `data_seed` identifies the data stream the position belongs to.
llvm::Error SaveCheckpoint(checkpoint::CheckpointStore& store, const plan::Checkpoint& spec,
                           const plan::InitProcessGroup& init, const std::filesystem::path& output_dir,
                           const Trainer& trainer, const Progress& progress, int64_t data_seed, int rank,
                           distributed::Collectives& collectives);

// save_state of a `state_dict_type = sharded` checkpoint (docs/checkpoints.md, "Sharded
// checkpoints"). Collective: every rank's RNG state travels to rank 0; every rank writes its
// slices into the store's unfinished folder (EncodeRankSlices); a barrier (an all-reduce,
// bounded by the group's timeout) tells every rank who failed; rank 0 writes its files
// (EncodeShardedTrainingState), the index and the manifest last, and renames the folder into
// place; a last all-reduce tells the others, which then advance their store's iteration. A
// rank's failure fails the save on every rank (naming it), and leaves the earlier checkpoints
// as they were.
llvm::Error SaveShardedCheckpoint(checkpoint::CheckpointStore& store, const plan::Checkpoint& spec,
                                  const std::filesystem::path& output_dir, const ShardedEngine& engine,
                                  const Progress& progress, int64_t data_seed, int rank,
                                  distributed::Collectives& collectives);

}  // namespace accel::rt::train

#endif  // ACCEL_RUNTIME_TRAIN_CHECKPOINTING_H_
