#include "runtime/train/gradient_accumulation.h"

#include <string>

namespace accel::rt::train {

GradientAccumulation::GradientAccumulation(GradientAccumulationSpec spec) : spec_(spec) {
  if (spec_.num_steps < 1) {
    throw std::invalid_argument("gradient accumulation needs num_steps >= 1, got " +
                                std::to_string(spec_.num_steps));
  }
}

bool GradientAccumulation::Begin(bool last_batch_of_dataloader) {
  ++step_;
  sync_gradients_ = step_ % spec_.num_steps == 0;
  if (spec_.sync_with_dataloader && last_batch_of_dataloader) {
    step_ = 0;
    sync_gradients_ = true;
  }
  return sync_gradients_;
}

}  // namespace accel::rt::train
