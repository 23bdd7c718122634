#ifndef ACCEL_RUNTIME_ENGINE_TRAIN_STATE_H_
#define ACCEL_RUNTIME_ENGINE_TRAIN_STATE_H_

#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <ATen/core/Tensor.h>

#include "llvm/Support/Error.h"
#include "runtime/checkpoint/checkpoint_dir.h"
#include "runtime/checkpoint/checkpoint_file.h"
#include "runtime/checkpoint/sharded_reader.h"
#include "runtime/engine/checkpoint_limits.h"
#include "runtime/model/loss_scaler.h"
#include "runtime/model/trainer.h"

// save_state / load_state of the training state as safetensors plus small JSON, never a pickle
// (docs/checkpoints.md, catalog §7.2): the files of one checkpoint, and putting them back.
// What a checkpoint holds besides the model and the optimizer is `Progress` and one RNG state
// per rank. Uses ATen only; the optimizer is reached through Trainer.
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

// What a checkpoint's counters may be for the plan resuming it.
struct ProgressLimits {
  int64_t steps = 0;                   // the plan's optimizer steps
  int64_t micro_batches_per_step = 1;  // its gradient accumulation
};

// Refuses, naming the checkpoint, a step beyond the plan's steps (a tampered step of 2^63 - 1
// wrapped to -2^63 on resume and trained forever), an epoch beyond the batches those steps draw,
// and a scheduler count beyond what those steps advance it by, before anything adds to them.
llvm::Error CheckProgressFitsPlan(const Progress& progress, const ProgressLimits& limits,
                                  const std::string& checkpoint);

// The step of the checkpoint in `directory`, from its trainer_state.json, unverified (rotation
// asks it of checkpoints it does not load). Fails when the file is missing, not a regular file,
// over 1 MiB, or gives no step.
llvm::Expected<int64_t> SavedStep(const std::string& directory);

// The safetensors dtype of `type` (`F32`, `F64`, `I64`, `U8`), or null for one checkpoints do
// not store.
const char* SafetensorsDtype(at::ScalarType type);

// The model's state_dict: its parameters, then its buffers (batch-norm statistics...).
std::vector<std::pair<std::string, at::Tensor>> ModelState(const Trainer& trainer);

// The state of this process's default torch CPU generator (a U8 tensor, 5056 bytes for the
// Mersenne Twister), and setting it back. RestoreRngState throws c10::Error for a tensor that
// is not such a state.
at::Tensor CaptureRngState();
void RestoreRngState(const at::Tensor& state);

// The files of one checkpoint, ready for CheckpointStore::Save or SaveTo. The views in files()
// point into this object and into the trainer's parameters and optimizer state: keep this
// object alive, and do not step the optimizer, until the save returns.
class StateFiles {
 public:
  const std::vector<checkpoint::CheckpointFile>& files() const { return files_; }

 private:
  friend llvm::Expected<std::unique_ptr<StateFiles>> EncodeStateFiles(
      const std::vector<std::pair<std::string, at::Tensor>>*, const OptimizerState&, const Progress&,
      const std::vector<at::Tensor>&, int64_t);
  std::vector<checkpoint::CheckpointFile> files_;
  std::deque<std::string> text_;     // headers and JSON the views point into
  std::vector<at::Tensor> tensors_;  // contiguous copies, where a tensor was not contiguous
};

// Encodes the training state as checkpoint files: `model.safetensors` (the parameters by
// name), `optimizer.safetensors` (tensors `state.<parameter>.<key>`) and `optimizer.json`
// (type, hyper-parameters, per-parameter counters), `scheduler.json`, `dataloader_0.json`,
// `trainer_state.json`, and `random_states_<r>.safetensors` for each entry of `rng_states`
// (every rank's CaptureRngState(), in rank order). `data_seed` is the data stream's seed,
// recorded so a load can refuse another data set. Fails, naming the tensor, when one cannot be
// encoded (see EncodeSafetensors).
llvm::Expected<std::unique_ptr<StateFiles>> EncodeTrainingState(const Trainer& trainer,
                                                                const Progress& progress,
                                                                const std::vector<at::Tensor>& rng_states,
                                                                int64_t data_seed);

// Rank 0's files of a sharded checkpoint (`state_dict_type = sharded`; the ranks' slices of the
// model and the optimizer state go through checkpoint::WriteRankSlices): everything
// EncodeTrainingState writes but `model.safetensors` and `optimizer.safetensors`. `layout` is
// the whole optimizer state without tensors (ShardedEngine::ExportOptimizerLayout), so that
// `optimizer.json` is a full checkpoint's.
llvm::Expected<std::unique_ptr<StateFiles>> EncodeShardedTrainingState(
    const OptimizerState& layout, const Progress& progress, const std::vector<at::Tensor>& rng_states,
    int64_t data_seed);

// What a sharded checkpoint leaves for the sharded engine once RestoreTrainingState has checked
// it against the model: the reader of its slices, the optimizer state's keys (`exp_avg`, ...)
// and the counters every parameter shares. ImportShardedResume (sharded_checkpoint.h) reads it.
struct ShardedResume {
  std::shared_ptr<const checkpoint::ShardedStateReader> reader;
  std::vector<std::string> state_keys;
  std::vector<std::pair<std::string, int64_t>> counters;
};

// The file of a checkpoint whose bytes RestoreTrainingState makes the optimizer state's own.
inline constexpr const char* kOptimizerStateFile = "optimizer.safetensors";
// What to pass as `taken` to CheckpointStore::Load and LoadLatest for RestoreTrainingState:
// the optimizer state is then read into this process's memory, everything else (the weights,
// copied into the parameters; a sharded checkpoint's slices) is mapped through the page cache.
inline std::vector<std::string> FilesRestoreTakes() { return {kOptimizerStateFile}; }

// Puts rank `rank`'s state back from a verified checkpoint: the parameters (copied in place,
// on every core), the optimizer's state (built on the verified bytes of `optimizer.safetensors`
// when the checkpoint was loaded with FilesRestoreTakes(), else copied from them) and
// hyper-parameters, and this rank's RNG state (rank mod the saved world size's, when the
// checkpoint was written by another world size: Progress::saved_world_size); returns the
// progress. Fails, naming the file and what was wrong, when a file is missing or invalid, the
// checkpoint was written with another data seed, or a tensor's name, dtype or shape does not
// match this model; the parameters may then be partly overwritten (the run must stop).
// A sharded checkpoint (checkpoint::IsShardedCheckpoint) of any world size loads the same way,
// every tensor read whole from the ranks' slices; unless `sharded` is set: then the parameters
// and the optimizer state are only checked (every name, dtype and shape; every parameter with
// every state key), the buffers and hyper-parameters are restored, and `*sharded` says what the
// sharded engine reads for itself (ImportShardedResume). For a full checkpoint `*sharded` stays
// unset.
llvm::Expected<Progress> RestoreTrainingState(const checkpoint::VerifiedCheckpoint& checkpoint,
                                              Trainer& trainer, int rank, int world_size, int64_t data_seed,
                                              std::optional<ShardedResume>* sharded = nullptr);

}  // namespace accel::rt::train

#endif  // ACCEL_RUNTIME_ENGINE_TRAIN_STATE_H_
