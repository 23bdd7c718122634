#ifndef ACCEL_RUNTIME_MODEL_ACTIVATION_CHECKPOINTING_H_
#define ACCEL_RUNTIME_MODEL_ACTIVATION_CHECKPOINTING_H_

#include <cstdint>
#include <string>
#include <vector>

#include "compiler/plan/plan.h"
#include "runtime/model/trainer.h"

// Which blocks of forward FSDP's `activation_checkpointing` recomputes in backward instead of
// keeping their activations (docs/sharding.md).
namespace accel::rt::train {

// Accelerate checkpoints every submodule the plugin's auto-wrap policy selects
// (apply_activation_checkpointing with that policy; with NO_WRAP there is none, and torch then
// checkpoints every submodule). Forward runs in blocks (Trainer::ForwardBlocks), so a block is
// recomputed when each of its trainable parameters lies inside such a module: the layers of a
// transformer-based wrap, but not an embedding whose position table the model itself holds.
// A model that runs as one block (a TorchScript module) is not recomputed: recomputing all of
// forward during backward costs a forward and keeps the same peak.
struct Recomputation {
  std::vector<bool> blocks;  // parallel to the blocks
  std::string summary;       // what the run log says
};

// `names` and `numels` are parallel to NamedParameters(), `blocks` is ForwardBlocks(). Throws
// std::invalid_argument as WrapUnits does for classes the model lacks.
Recomputation PlanRecomputation(const ModuleNode& root, const std::vector<std::vector<size_t>>& blocks,
                                const std::vector<std::string>& names, const std::vector<int64_t>& numels,
                                const plan::Sharding& sharding);
// The same for `trainer`'s parameters, modules and blocks.
Recomputation PlanRecomputation(const Trainer& trainer, const plan::Sharding& sharding);

}  // namespace accel::rt::train

#endif  // ACCEL_RUNTIME_MODEL_ACTIVATION_CHECKPOINTING_H_
