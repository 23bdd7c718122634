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
#include "runtime/engine/saved_progress.h"
#include "runtime/model/loss_scaler.h"
#include "runtime/model/trainer.h"

// save_state / load_state of the training state as safetensors plus small JSON, never a pickle
// (docs/checkpoints.md, catalog §7.2): the files of one checkpoint, and putting them back.
// What a checkpoint holds besides the model and the optimizer is `Progress` (saved_progress.h)
// and one RNG state per rank. Uses ATen only; the optimizer is reached through Trainer.
namespace accel::rt::train {

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
