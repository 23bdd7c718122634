#ifndef ACCEL_RUNTIME_CHECKPOINT_CHECKPOINT_STORE_H_
#define ACCEL_RUNTIME_CHECKPOINT_CHECKPOINT_STORE_H_

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "llvm/Support/Error.h"
#include "runtime/checkpoint/checkpoint_dir.h"
#include "runtime/checkpoint/checkpoint_file.h"

// Crash-safe checkpoint directories with Accelerate's ProjectConfiguration semantics (catalog
// §7.1): `{project_dir}/checkpoints/checkpoint_{iteration}`, `total_limit`, `iteration`. What
// differs from Accelerate, on purpose (catalog §10 #23, §9 #24): a checkpoint is written under
// a temporary name and renamed into place complete; old checkpoints are rotated away only after
// the new one is on disk; only `checkpoint_<digits>` folders with a valid manifest count; and
// loading restores `iteration`. The layout is in docs/checkpoints.md.
namespace accel::rt::checkpoint {

// The fields of Accelerate's ProjectConfiguration that decide where checkpoints go.
struct ProjectOptions {
  std::string project_dir;
  // On: Save() writes `{project_dir}/checkpoints/checkpoint_{iteration}`. Off: SaveTo(dir).
  bool automatic_checkpoint_naming = true;
  // If set (≥ 1), keep at most this many complete checkpoints; unset keeps all.
  std::optional<uint64_t> total_limit;
  // The number of the next checkpoint.
  uint64_t iteration = 0;
};

struct SaveResult {
  std::string path;
  uint64_t iteration = 0;
  std::vector<std::string> removed;   // checkpoints rotated away after this save was durable
  std::vector<std::string> warnings;  // problems that did not fail the save (e.g. a rotation)
};

// Not thread-safe, and one writer per project: two processes saving into the same
// `checkpoints/` would remove each other's temporary directories. In a multi-rank run only the
// designated writer rank saves; the others wait at a barrier.
class CheckpointStore {
 public:
  // Checks the options (a project dir for automatic naming, total_limit ≥ 1). Touches no file.
  static llvm::Expected<CheckpointStore> Open(ProjectOptions options);

  // `{project_dir}/checkpoints`.
  std::string checkpoints_dir() const;
  // The number the next Save() uses.
  uint64_t iteration() const { return options_.iteration; }

  // Writes `files` as checkpoint `iteration()` (automatic naming only):
  //   1. removes temporary directories a crashed save left (`*.tmp`);
  //   2. writes every file into `checkpoint_N.tmp/`, fsyncs them, writes the manifest last and
  //      fsyncs the directory;
  //   3. renames it to `checkpoint_N` (never over an existing entry) and fsyncs `checkpoints/`;
  //   4. increments iteration(), then rotates: with total_limit, deletes the oldest complete
  //      checkpoints beyond the limit (never the one just written).
  // A crash at any moment leaves every earlier complete checkpoint loadable. Fails, and
  // changes nothing visible, when `checkpoint_N` exists or a newer complete checkpoint does
  // (resume with LoadLatest(), which sets iteration()), on an invalid file name, or on I/O.
  llvm::Expected<SaveResult> Save(const std::vector<CheckpointFile>& files);

  // Manual naming: writes `files` as the checkpoint `directory` through `directory.tmp`; an
  // existing `directory` is swapped out in one atomic step and then removed. Increments
  // iteration(). Same failures as Save().
  llvm::Expected<SaveResult> SaveTo(const std::string& directory, const std::vector<CheckpointFile>& files);

  // Sharded saves (sharded_state.h), where every rank writes its own slices:
  //   every rank: WriteRankSlices(store.ShardedStagingDir(), rank, world, slices);
  //   a barrier (with a timeout);
  //   rank 0: store.FinishSharded(world, files); a barrier; other ranks: AdvanceIteration().
  // The unfinished directory of checkpoint `iteration()` (`checkpoint_N.tmp`, automatic naming)
  // that every rank writes into. Every rank's store must have the same iteration().
  std::string ShardedStagingDir() const;
  // The same for manual naming: `directory.tmp`, the folder FinishShardedTo(directory) renames.
  static std::string ShardedStagingDirFor(const std::string& directory);

  // Rank 0, once every rank's WriteRankSlices returned: the steps of Save() around
  // FinishShardedDirectory (world ranks, `files` being rank 0's unsharded files) instead of
  // writing the folder itself: removes other temporary folders (never the staging one), refuses
  // as Save() does, finishes and renames ShardedStagingDir() into place, increments iteration()
  // and rotates. On failure the staging folder is removed, so a retry starts clean. A crash at
  // any moment, of any rank, leaves every earlier complete checkpoint loadable.
  llvm::Expected<SaveResult> FinishSharded(uint32_t world, const std::vector<CheckpointFile>& files);
  // Manual naming: finishes ShardedStagingDirFor(directory) and swaps it in as SaveTo() does.
  llvm::Expected<SaveResult> FinishShardedTo(const std::string& directory, uint32_t world,
                                             const std::vector<CheckpointFile>& files);
  // For the ranks that did not call FinishSharded: the next save's number, as rank 0's.
  void AdvanceIteration() { ++options_.iteration; }

  // What rotation must leave alone, asked of each complete checkpoint it would remove: nullopt
  // lets it go; a reason keeps it (said as a warning of the save, unless empty), and the next
  // older one goes in its place; when none is left to go, more than total_limit remain. The worker keeps the checkpoint its run resumed from and
  // any whose step is beyond the newest it has written, so that a run gone wrong never rotates
  // away the state it came from.
  using RotationGuard = std::function<std::optional<std::string>(const std::string& checkpoint)>;
  void GuardRotation(RotationGuard guard) { rotation_guard_ = std::move(guard); }

  // The newest checkpoint whose files all match its manifest: the `checkpoint_N` folders are
  // tried from the highest N down; each one skipped adds a warning naming it and what was wrong
  // (no manifest, a file missing, a size or digest mismatch). Sets iteration() to N + 1. Fails
  // when no checkpoint verifies, listing why each was rejected. `taken`: the files whose bytes
  // the caller makes its own (see VerifyCheckpointDirectory).
  llvm::Expected<VerifiedCheckpoint> LoadLatest(const std::vector<std::string>& taken = {});

  // Verifies an explicit checkpoint directory (Accelerate's `load_state(input_dir)`) and sets
  // iteration() to the manifest's iteration + 1.
  llvm::Expected<VerifiedCheckpoint> Load(const std::string& directory,
                                          const std::vector<std::string>& taken = {});

 private:
  explicit CheckpointStore(ProjectOptions options) : options_(std::move(options)) {}
  void Rotate(const std::string& keep, SaveResult& result) const;
  // Save() and SaveTo() around `write`, which fills the temporary folder. With `staged`, ranks
  // have written into that folder already: it is neither removed as stale nor created afresh.
  using WriteFolder = std::function<llvm::Error(const std::string& temporary, uint64_t number)>;
  llvm::Expected<SaveResult> SaveAutomatic(const WriteFolder& write, bool staged);
  llvm::Expected<SaveResult> SaveManual(const std::string& directory, const WriteFolder& write, bool staged);

  ProjectOptions options_;
  RotationGuard rotation_guard_;
};

// The `checkpoint_<digits>` folders of `checkpoints_dir` as (number, path), lowest first.
// Other entries (temporary folders, files, foreign names) are not checkpoints and are skipped.
std::vector<std::pair<uint64_t, std::string>> ListCheckpoints(const std::string& checkpoints_dir);

}  // namespace accel::rt::checkpoint

#endif  // ACCEL_RUNTIME_CHECKPOINT_CHECKPOINT_STORE_H_
