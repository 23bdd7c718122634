#ifndef ACCEL_RUNTIME_ENGINE_SAVED_PROGRESS_H_
#define ACCEL_RUNTIME_ENGINE_SAVED_PROGRESS_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "llvm/Support/Error.h"
#include "llvm/Support/JSON.h"
#include "runtime/checkpoint/checkpoint_dir.h"
#include "runtime/model/loss_scale_state.h"

// Where a run stands, as a checkpoint keeps it besides the model and the optimizer
// (`trainer_state.json`, `dataloader_0.json`, `scheduler.json`, `scaler.json`), read back and
// held to what a run of the resuming plan can reach. The files are untrusted: anyone who can
// write the checkpoint folder can rewrite them and their manifest. Torch-free, so that the
// fuzz build reads any bytes through it; putting the rest of a checkpoint back into a trainer is
// train_state.h's.
namespace accel::rt::train {

// Where the run stands, besides the model and the optimizer.
struct Progress {
  // Optimizer steps done: a resumed run continues with step + 1.
  int64_t step = 0;
  // Samples drawn so far, over all ranks.
  int64_t samples_seen = 0;
  // The data loader's epoch() and position() after the last step (sample-exact resume).
  int64_t data_epoch = -1;
  int64_t data_position = 0;
  // The wrapped learning-rate scheduler (`scheduler.json`): its schedule, its step count
  // (LambdaLR's `last_epoch`, which Accelerate advances num_processes times per optimizer step
  // unless batches are split) and its base rate; 0 means the optimizer's current rate.
  std::string schedule = "constant";
  int64_t scheduler_steps = 0;
  double base_lr = 0;
  // The schedule's length and warmup in scheduler steps, so a resume can tell when its plan
  // would change the rates (`--allow-schedule-change`); -1 in a checkpoint that predates them.
  int64_t schedule_steps = -1;
  int64_t warmup_steps = -1;
  // The world size that wrote the checkpoint (0 before any load). A resume on another one
  // continues from the same optimizer step and data position (batches per process: the same
  // samples when the global batch is kept); rank r draws random_states_{r mod saved}.
  int64_t saved_world_size = 0;
  // fp16: the loss scaler's state and the optimizer steps it skipped over the whole run
  // (`scaler.json`); none in a run, or a checkpoint, without loss scaling.
  std::optional<LossScaleState> loss_scale;
  int64_t skipped_steps = 0;
};

// Samples are counted in a double for the reports: beyond 2^53 the count is no longer exact,
// so a checkpoint may hold at most this many.
inline constexpr int64_t kMaxSamplesSeen = int64_t{1} << 53;

// JSON file `name` of `checkpoint` as an object. Fails, naming the file, when the checkpoint
// has none, or it nests deeper than plan::kMaxJsonDepth, is not JSON, or is not an object.
llvm::Expected<llvm::json::Object> ReadCheckpointJson(const checkpoint::VerifiedCheckpoint& checkpoint,
                                                      const std::string& name);

// The progress of `checkpoint` from its trainer_state.json, dataloader_0.json, scheduler.json
// and (when present) scaler.json, each value in the range its meaning allows: counts not
// negative, the world size from 1 to kMaxCheckpointWorldSize with random_states_0 and
// random_states_<world_size - 1>.safetensors present, samples at most kMaxSamplesSeen, the loss
// scaler's step counts at most the step. Fails, naming the file and the value, on any other,
// and when the data seed is not `data_seed` or the state's version is newer than this reader's.
// Whether the counts fit the resuming plan is CheckProgressFitsPlan's.
llvm::Expected<Progress> ReadProgress(const checkpoint::VerifiedCheckpoint& checkpoint, int64_t data_seed);

// What a checkpoint's counters may be for the plan resuming it.
struct ProgressLimits {
  int64_t steps = 0;                   // the plan's optimizer steps
  int64_t micro_batches_per_step = 1;  // its gradient accumulation
};

// Refuses, naming the checkpoint, a step beyond the plan's steps (a tampered step of 2^63 - 1
// wrapped to -2^63 on resume and trained forever), an epoch or a data position beyond the
// batches those steps draw, and a scheduler count beyond what those steps advance it by, before
// anything adds to them. `progress` is one ReadProgress accepted.
llvm::Error CheckProgressFitsPlan(const Progress& progress, const ProgressLimits& limits,
                                  const std::string& checkpoint);

// The step `text`, a trainer_state.json, records, unchecked beyond being an integer; `path`
// names it in errors. Fails when it nests deeper than plan::kMaxJsonDepth, is not JSON, or
// has no integer `step`.
llvm::Expected<int64_t> ParseSavedStep(std::string_view text, const std::string& path);

// The step of the checkpoint in `directory`, from its trainer_state.json, unverified (rotation
// asks it of checkpoints it does not load). Fails when the file is missing, not a regular file,
// over 1 MiB, or gives no step (ParseSavedStep).
llvm::Expected<int64_t> SavedStep(const std::string& directory);

}  // namespace accel::rt::train

#endif  // ACCEL_RUNTIME_ENGINE_SAVED_PROGRESS_H_
