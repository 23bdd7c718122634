#ifndef ACCEL_RUNTIME_TRAIN_TRAINING_LENGTH_H_
#define ACCEL_RUNTIME_TRAIN_TRAINING_LENGTH_H_

#include <cstdint>

#include "compiler/plan/plan.h"

namespace accel::rt::train {

// `loop` with its length in optimizer steps: `epochs` turned into `steps` and `warmup_ratio`
// into `warmup_steps` (both then 0), as the Trainer turns `num_train_epochs` into `max_steps`
// and `warmup_ratio` into warmup steps. The worker is the first to know the data's size, so
// the conversion happens there, after the loaders are open (and any batch-size search is done).
//
// `batches_per_epoch` is the micro-batches the first process draws per epoch (>= 1; it draws
// the most when the processes' counts differ, so it makes exactly `epochs` passes). With
// `sync_with_dataloader` an accumulation cycle ends with the epoch, so an epoch is
// ceil(batches / num_steps) optimizer steps; without it cycles run across epochs and the run is
// floor(epochs × batches / num_steps) steps (the last incomplete cycle is not stepped). Always
// at least one step. Warmup is ceil(warmup_ratio × steps) in double arithmetic, as the Trainer
// computes it (`math.ceil(100 * 0.07)` is 8). A loop already in steps is returned unchanged.
plan::TrainLoop WithLengthInSteps(plan::TrainLoop loop, int64_t batches_per_epoch);

}  // namespace accel::rt::train

#endif  // ACCEL_RUNTIME_TRAIN_TRAINING_LENGTH_H_
