#include "runtime/train/training_length.h"

#include <algorithm>
#include <cmath>

namespace accel::rt::train {

plan::TrainLoop WithLengthInSteps(plan::TrainLoop loop, int64_t batches_per_epoch) {
  if (loop.steps == 0) {
    const plan::GradientAccumulationPlugin& ga = loop.gradient_accumulation;
    const int64_t per_cycle = std::max<int64_t>(1, ga.num_steps);
    const int64_t batches = std::max<int64_t>(1, batches_per_epoch);
    const int64_t steps = ga.sync_with_dataloader ? loop.epochs * ((batches + per_cycle - 1) / per_cycle)
                                                  : loop.epochs * batches / per_cycle;
    loop.steps = std::max<int64_t>(1, steps);
    loop.epochs = 0;
  }
  if (loop.warmup_ratio > 0) {
    loop.warmup_steps = static_cast<int64_t>(std::ceil(static_cast<double>(loop.steps) * loop.warmup_ratio));
    loop.warmup_ratio = 0;
  }
  return loop;
}

}  // namespace accel::rt::train
