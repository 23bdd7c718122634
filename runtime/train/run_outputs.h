#ifndef ACCEL_RUNTIME_TRAIN_RUN_OUTPUTS_H_
#define ACCEL_RUNTIME_TRAIN_RUN_OUTPUTS_H_

#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include <ATen/core/Tensor.h>

#include "compiler/plan/plan.h"
#include "llvm/Support/Error.h"
#include "runtime/model/trainer.h"
#include "runtime/train/worker_context.h"

// The worker's finish phase: what a run leaves in its output directory.
namespace accel::rt::train {

// sha256 over every tensor's bytes, in name order: equal digests mean bit-identical weights.
std::string ParameterDigest(const std::vector<std::pair<std::string, at::Tensor>>& named);

// Rank 0 (`main_process`) writes the model's state_dict as `save` says (safetensors, sharded
// past max_shard_size, as Accelerate's save_model), sets `summary.model_path` to the file or
// the index that names it, and writes `metrics.json`; every rank writes `ranks/rank-N.json`
// with its parameter digest.
llvm::Error WriteRunOutputs(const plan::Plan& plan, const plan::SaveModel& save, const Trainer& trainer,
                            RunSummary& summary, const std::filesystem::path& output_dir, int rank,
                            int world_size);

}  // namespace accel::rt::train

#endif  // ACCEL_RUNTIME_TRAIN_RUN_OUTPUTS_H_
