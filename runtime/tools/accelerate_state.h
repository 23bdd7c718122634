#ifndef ACCEL_RUNTIME_TOOLS_ACCELERATE_STATE_H_
#define ACCEL_RUNTIME_TOOLS_ACCELERATE_STATE_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "compiler/plan/plan.h"
#include "llvm/Support/Error.h"
#include "runtime/checkpoint/checkpoint_dir.h"

// Training state between an Accel checkpoint and the folder Accelerate's `save_state` writes
// (model.safetensors, optimizer.bin, scheduler.bin, random_states_<rank>.pkl), in both
// directions, without Python: the `.bin` and `.pkl` files are torch.save archives written and
// read by torch_zip.h, whose reader runs no pickle. docs/checkpoints.md says what maps to what.
namespace accel::tools {

struct ExportOptions {
  // Python's and NumPy's generators, which Accel never draws from, are written as
  // set_seed(seed) leaves them; by default the checkpoint's data seed.
  std::optional<uint64_t> seed;
};

// Writes the training state of `checkpoint` (a full or a sharded one) as Accelerate's
// `load_state` reads it, into the folder `folder` (created; it must not exist). Returns the
// files written. Fails, naming the file, when the checkpoint holds what Accelerate's files
// cannot (an fp16 loss scale) or a file cannot be written.
llvm::Expected<std::vector<std::string>> ExportAccelerateState(const rt::checkpoint::VerifiedCheckpoint& checkpoint,
                                                               const std::string& folder,
                                                               const ExportOptions& options);

struct ImportOptions {
  // The optimizer step the folder was saved at, when neither the optimizer state nor the
  // scheduler tells it (plain SGD without a scheduler); checked against them otherwise.
  std::optional<int64_t> step;
};

// What an import wrote and found.
struct ImportResult {
  int64_t step = 0;
  int64_t world_size = 0;
  std::vector<std::string> files;
  std::vector<std::string> notes;  // what the folder held that a checkpoint does not keep
};

// Reads the folder `folder` that Accelerate's `save_state` wrote and writes it as a checkpoint
// of `plan` into `checkpoint_dir` (created; it must not exist), which `accelrun <plan> --resume
// <checkpoint_dir>` continues. Parameter and optimizer state keep PyTorch's order (the
// optimizer's state by position), resolved against the model when the run resumes. Fails,
// naming the file and what was wrong, on a pickle that would run code, a file that is not
// what Accelerate writes there, an optimizer of another type than the plan's, or a step the
// files disagree on.
llvm::Expected<ImportResult> ImportAccelerateState(const std::string& folder, const plan::Plan& plan,
                                                   const std::string& checkpoint_dir, const ImportOptions& options);

}  // namespace accel::tools

#endif  // ACCEL_RUNTIME_TOOLS_ACCELERATE_STATE_H_
