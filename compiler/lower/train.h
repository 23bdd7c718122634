#ifndef ACCEL_COMPILER_LOWER_TRAIN_H_
#define ACCEL_COMPILER_LOWER_TRAIN_H_

#include <optional>

#include "compiler/lower/lowering.h"
#include "compiler/plan/plan.h"

// The training phase of lowering: the loop (`train` and the Accelerator's kwargs handlers) and
// checkpointing (`train.checkpoint_every*` with ProjectConfiguration).
namespace accel::lower {

plan::TrainLoop LowerTrain(Lowering& lowering, plan::MixedPrecision precision);

// `train.checkpoint_every` turns checkpointing on; `accelerator.project_config` (Accelerate's
// ProjectConfiguration) says where and how many. Unset without checkpointing, when a
// project_config that nothing would read is refused like any other setting the runtime ignores.
std::optional<plan::Checkpoint> LowerCheckpoint(Lowering& lowering);

}  // namespace accel::lower

#endif  // ACCEL_COMPILER_LOWER_TRAIN_H_
