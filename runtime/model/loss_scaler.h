#ifndef ACCEL_RUNTIME_MODEL_LOSS_SCALER_H_
#define ACCEL_RUNTIME_MODEL_LOSS_SCALER_H_

#include <cstdint>
#include <vector>

#include <ATen/core/Tensor.h>

#include "compiler/plan/plan.h"
#include "runtime/model/loss_scale_state.h"

namespace accel::rt::train {

class Trainer;

// fp16's dynamic loss scaling, as Accelerate runs it: the loss is multiplied by scale() before
// backward (torch.amp.GradScaler.scale, or DeepSpeed's engine.backward), the gradients are
// divided by it before clipping, and a step whose gradients hold an inf or NaN on any rank is
// skipped, after which the scale backs off; after a run of clean steps it grows. Three rules
// (plan::LossScaleRule): torch's GradScaler (`_amp_update_scale_`), DeepSpeed's
// DynamicLossScaler (hysteresis, a minimum that stops the run when an overflow reaches it), and
// DeepSpeed's static scale (never moves; overflowing steps are still skipped).
class LossScaler {
 public:
  explicit LossScaler(const plan::LossScaling& spec);

  // The factor the loss is multiplied by before backward (1 when scaling is off).
  double scale() const { return spec_.enabled ? state_.scale : 1.0; }

  // After the step's backward and gradient reduction: divides the gradients by the scale and
  // says whether the optimizer step must be skipped (an inf or NaN gradient on any rank).
  // Collective where ranks hold different parts of the gradients. Then Update() moves the
  // scale. Throws std::runtime_error when DeepSpeed's rule is already at its minimum scale and
  // overflows again (DeepSpeed stops the run there).
  bool UnscaleAndCheck(Trainer& trainer);
  void Update(bool overflow);

  LossScaleState state() const { return state_; }
  void Restore(const LossScaleState& state) { state_ = state; }

 private:
  plan::LossScaling spec_;
  LossScaleState state_;
};

// Multiplies `gradients` by `inv_scale` in place and returns whether any held an inf or NaN
// (ATen's `_amp_foreach_non_finite_check_and_unscale_`, on the gradients' own device). Every
// gradient is on one device and of one dtype.
bool UnscaleAndFindNonFinite(std::vector<at::Tensor>& gradients, double inv_scale);

}  // namespace accel::rt::train

#endif  // ACCEL_RUNTIME_MODEL_LOSS_SCALER_H_
