#include "runtime/train/checkpointing.h"

#include <ATen/ATen.h>

#include <chrono>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "runtime/engine/sharded_checkpoint.h"
#include "runtime/support/error.h"
#include "runtime/train/save_faults.h"
#include "runtime/train/worker_context.h"

namespace accel::rt::train {
namespace {

// Without automatic naming every save replaces this one folder.
std::string ManualCheckpointDir(const plan::Checkpoint& spec, const std::filesystem::path& output_dir) {
  return ((spec.project_dir.empty() ? output_dir : std::filesystem::path(spec.project_dir)) / "checkpoint")
      .string();
}

void PrintWarnings(const std::vector<std::string>& warnings) {
  for (const std::string& warning : warnings) fmt::print(stderr, "accelrun: warning: {}\n", warning);
}

// The writer's half of save_state: every rank's RNG state (`rows`, one per rank) and this
// trainer's state, saved as the next checkpoint (automatic naming) or over the one folder.
llvm::Error WriteCheckpoint(checkpoint::CheckpointStore& store, const plan::Checkpoint& spec,
                            const std::filesystem::path& output_dir, const Trainer& trainer,
                            const Progress& progress, const at::Tensor& rows, int64_t data_seed, int rank) {
  auto started = std::chrono::steady_clock::now();
  std::vector<at::Tensor> rng_states;
  for (int64_t r = 0; r < rows.size(0); ++r) rng_states.push_back(rows[r].to(at::kByte).contiguous());
  llvm::Expected<std::unique_ptr<StateFiles>> files =
      EncodeTrainingState(trainer, progress, rng_states, data_seed);
  if (!files) return files.takeError();
  llvm::Expected<checkpoint::SaveResult> saved =
      spec.automatic_checkpoint_naming
          ? store.Save((*files)->files())
          : store.SaveTo(ManualCheckpointDir(spec, output_dir), (*files)->files());
  if (!saved) return saved.takeError();
  PrintWarnings(saved->warnings);
  if (rank == 0) {
    double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started).count();
    fmt::print("checkpoint {} saved at step {} ({:.0f} ms{})\n", saved->path, progress.step, ms,
               saved->removed.empty() ? "" : fmt::format(", removed {}", fmt::join(saved->removed, ", ")));
    std::fflush(stdout);
  }
  return llvm::Error::success();
}

// Every rank's RNG state, one int32 row per rank: each rank fills its own row, zeros elsewhere,
// and the sum is every rank's bytes, exactly. Collective.
at::Tensor GatherRngStates(int rank, distributed::Collectives& collectives) {
  at::Tensor mine = CaptureRngState();
  at::Tensor rows = at::zeros({collectives.world_size(), mine.numel()}, at::kInt);
  rows[rank].copy_(mine);
  std::vector<at::Tensor> gathered{rows};
  collectives.AllReduceSum(gathered);
  return rows;
}

// What the ranks of a save meet after, in messages: a writer may take long, and its peers wait
// for it as long as it works (Collectives::MeetAfterWork), not one collective timeout.
constexpr const char* kSave = "the checkpoint save";

// The ranks whose flag is set, summed over the world: tells every rank who failed. Collective.
std::vector<int> FailedRanks(bool failed, int rank, distributed::Collectives& collectives) {
  at::Tensor flags = at::zeros({collectives.world_size()}, at::kInt);
  flags[rank] = failed ? 1 : 0;
  std::vector<at::Tensor> all{flags};
  collectives.AllReduceSum(all);
  std::vector<int> ranks;
  for (int r = 0; r < collectives.world_size(); ++r)
    if (flags[r].item<int>() != 0) ranks.push_back(r);
  return ranks;
}

}  // namespace

llvm::Expected<checkpoint::CheckpointStore> OpenCheckpointStore(const plan::Checkpoint& spec,
                                                                const std::filesystem::path& output_dir,
                                                                const std::string& resume) {
  checkpoint::ProjectOptions options;
  options.project_dir = spec.project_dir.empty() ? output_dir.string() : spec.project_dir;
  options.automatic_checkpoint_naming = spec.automatic_checkpoint_naming;
  if (spec.total_limit > 0) options.total_limit = static_cast<uint64_t>(spec.total_limit);
  options.iteration = static_cast<uint64_t>(spec.iteration);
  llvm::Expected<checkpoint::CheckpointStore> store = checkpoint::CheckpointStore::Open(std::move(options));
  if (!store || !resume.empty() || !spec.automatic_checkpoint_naming) return store;
  for (const auto& [number, path] : checkpoint::ListCheckpoints(store->checkpoints_dir())) {
    if (number >= store->iteration()) {
      return llvm::make_error<ArgumentMismatch>(
          fmt::format("{} exists from an earlier run; pass `--resume auto` to continue it, or choose another "
                      "`project_config.project_dir`",
                      path));
    }
  }
  return store;
}

llvm::Expected<std::optional<checkpoint::VerifiedCheckpoint>> FindResumePoint(
    checkpoint::CheckpointStore& store, const plan::Checkpoint& spec, const std::filesystem::path& output_dir,
    const std::string& resume, bool report) {
  if (resume == "auto") {
    bool any = spec.automatic_checkpoint_naming
                   ? !checkpoint::ListCheckpoints(store.checkpoints_dir()).empty()
                   : std::filesystem::exists(ManualCheckpointDir(spec, output_dir));
    if (!any) return std::nullopt;
  }
  llvm::Expected<checkpoint::VerifiedCheckpoint> loaded =
      resume != "auto" ? store.Load(resume, FilesRestoreTakes())
      : spec.automatic_checkpoint_naming
          ? store.LoadLatest(FilesRestoreTakes())
          : store.Load(ManualCheckpointDir(spec, output_dir), FilesRestoreTakes());
  if (!loaded) return Fail("cannot resume: " + llvm::toString(loaded.takeError()));
  if (report) PrintWarnings(loaded->warnings);
  return std::optional<checkpoint::VerifiedCheckpoint>(std::move(*loaded));
}

llvm::Error SetAsideRejected(const checkpoint::CheckpointStore& store) {
  for (const auto& [number, path] : checkpoint::ListCheckpoints(store.checkpoints_dir())) {
    if (number < store.iteration()) continue;
    // A number can be rejected more than once (the run died again before replacing it).
    std::string aside = path + ".rejected";
    for (int copy = 1; std::filesystem::exists(aside); ++copy)
      aside = fmt::format("{}.rejected.{}", path, copy);
    std::error_code ec;
    std::filesystem::rename(path, aside, ec);
    if (ec) return Fail(fmt::format("cannot set aside {}, which did not verify: {}", path, ec.message()));
    fmt::print(stderr, "accelrun: warning: renamed {} to {}: it did not verify\n", path, aside);
  }
  return llvm::Error::success();
}

void GuardRotation(checkpoint::CheckpointStore& store, const std::string& resumed_from, const Progress& progress) {
  std::error_code ec;
  std::filesystem::path from =
      resumed_from.empty() ? std::filesystem::path() : std::filesystem::weakly_canonical(resumed_from, ec);
  store.GuardRotation([from, &progress](const std::string& checkpoint) -> std::optional<std::string> {
    std::error_code error;
    // Kept without a word: the run's own starting point.
    if (!from.empty() && std::filesystem::weakly_canonical(checkpoint, error) == from) return std::string();
    llvm::Expected<int64_t> step = SavedStep(checkpoint);
    if (!step) {
      return fmt::format("rotation keeps {}: {}", checkpoint, llvm::toString(step.takeError()));
    }
    if (*step > progress.step) {
      return fmt::format("rotation keeps {}: it is at step {}, beyond step {}, the newest this run has written",
                         checkpoint, *step, progress.step);
    }
    return std::nullopt;
  });
}

bool WritesCheckpoints(const plan::Checkpoint& spec, const plan::InitProcessGroup& init, int rank) {
  return spec.save_on_each_node ? rank % init.processes_per_machine == 0 : rank == 0;
}

llvm::Error SaveCheckpoint(checkpoint::CheckpointStore& store, const plan::Checkpoint& spec,
                           const plan::InitProcessGroup& init, const std::filesystem::path& output_dir,
                           const Trainer& trainer, const Progress& progress, int64_t data_seed, int rank,
                           distributed::Collectives& collectives) {
  at::Tensor rows = GatherRngStates(rank, collectives);
  // A writer's failure is reported after the meeting, so the others are not left waiting.
  llvm::Error failure = llvm::Error::success();
  collectives.MeetAfterWork(kSave, [&] {
    if (!WritesCheckpoints(spec, init, rank)) return;
    DelayIfAsked(rank);
    failure = WriteCheckpoint(store, spec, output_dir, trainer, progress, rows, data_seed, rank);
  });
  return failure;
}

llvm::Error SaveShardedCheckpoint(checkpoint::CheckpointStore& store, const plan::Checkpoint& spec,
                                  const std::filesystem::path& output_dir, const ShardedEngine& engine,
                                  const Progress& progress, int64_t data_seed, int rank,
                                  distributed::Collectives& collectives) {
  at::Tensor rows = GatherRngStates(rank, collectives);
  auto started = std::chrono::steady_clock::now();
  const uint32_t world = static_cast<uint32_t>(collectives.world_size());
  const std::string manual = ManualCheckpointDir(spec, output_dir);
  const std::string staging = spec.automatic_checkpoint_naming
                                  ? store.ShardedStagingDir()
                                  : checkpoint::CheckpointStore::ShardedStagingDirFor(manual);
  // 1. Every rank writes its slices into the unfinished folder.
  llvm::Error written = llvm::Error::success();
  collectives.MeetAfterWork(kSave, [&] {
    KillIfAsked("slices", rank);
    DelayIfAsked(rank);
    try {
      std::unique_ptr<RankStateSlices> slices = EncodeRankSlices(engine, /*with_buffers=*/rank == 0);
      written = checkpoint::WriteRankSlices(staging, static_cast<uint32_t>(rank), world, slices->slices());
    } catch (const std::invalid_argument& error) {
      // Reported after the meeting, as a write error is, so the others are not left waiting.
      written = Fail(fmt::format("cannot write the sharded checkpoint: {}", error.what()));
    }
    KillIfAsked("written", rank);
  });
  // 2. Every rank learns who could not write: rank 0 finishes only when every rank wrote.
  const bool failed = static_cast<bool>(written);
  std::vector<int> failed_ranks = FailedRanks(failed, rank, collectives);
  if (failed) return written;
  if (!failed_ranks.empty()) {
    return Fail(
        fmt::format("the sharded checkpoint of step {} was not saved: rank {} could not write its slices",
                    progress.step, fmt::join(failed_ranks, ", ")));
  }
  // 3. Rank 0: its unsharded files, the index and the manifest, then the rename and rotation.
  llvm::Error finished = llvm::Error::success();
  collectives.MeetAfterWork(kSave, [&] {
    if (rank != 0) return;
    KillIfAsked("finish", rank);
    std::vector<at::Tensor> rng_states;
    for (int64_t r = 0; r < rows.size(0); ++r) rng_states.push_back(rows[r].to(at::kByte).contiguous());
    llvm::Expected<std::unique_ptr<StateFiles>> files =
        EncodeShardedTrainingState(engine.ExportOptimizerLayout(), progress, rng_states, data_seed);
    llvm::Expected<checkpoint::SaveResult> saved =
        !files                             ? llvm::Expected<checkpoint::SaveResult>(files.takeError())
        : spec.automatic_checkpoint_naming ? store.FinishSharded(world, (*files)->files())
                                           : store.FinishShardedTo(manual, world, (*files)->files());
    if (saved) {
      PrintWarnings(saved->warnings);
      double ms =
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started).count();
      fmt::print("checkpoint {} saved at step {} ({:.0f} ms, sharded over {} rank{}{})\n", saved->path,
                 progress.step, ms, world, world == 1 ? "" : "s",
                 saved->removed.empty() ? "" : fmt::format(", removed {}", fmt::join(saved->removed, ", ")));
      std::fflush(stdout);
      KillIfAsked("finished", rank);
    } else {
      finished = saved.takeError();
    }
  });
  // 4. Every rank learns whether the checkpoint is in place; the others then count it too.
  const bool finish_failed = static_cast<bool>(finished);
  if (!FailedRanks(finish_failed, rank, collectives).empty()) {
    if (finish_failed) return finished;
    return Fail(fmt::format("the sharded checkpoint of step {} was not saved: rank 0 could not finish it",
                            progress.step));
  }
  if (rank != 0) store.AdvanceIteration();
  return llvm::Error::success();
}

}  // namespace accel::rt::train
