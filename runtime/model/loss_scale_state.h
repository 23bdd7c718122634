#ifndef ACCEL_RUNTIME_MODEL_LOSS_SCALE_STATE_H_
#define ACCEL_RUNTIME_MODEL_LOSS_SCALE_STATE_H_

#include <cstdint>

// Torch-free, so that the checkpoint's progress reader (engine/saved_progress.h), which the
// fuzz build compiles without LibTorch, fills it.
namespace accel::rt::train {

// Where an fp16 run's loss scale stands: what a checkpoint keeps so that a resumed run scales
// exactly as the uninterrupted one would have.
struct LossScaleState {
  double scale = 0;
  // torch: clean steps since the scale last moved (GradScaler's `_growth_tracker`).
  int64_t growth_tracker = 0;
  // deepspeed: DynamicLossScaler's `cur_iter`, `last_overflow_iter` and `cur_hysteresis`.
  int64_t iteration = 0;
  int64_t last_overflow = -1;
  int64_t hysteresis_left = 0;
};

}  // namespace accel::rt::train

#endif  // ACCEL_RUNTIME_MODEL_LOSS_SCALE_STATE_H_
