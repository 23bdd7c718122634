#include "runtime/model/loss_scaler.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include <fmt/format.h>

#include "runtime/model/trainer.h"

namespace accel::rt::train {

LossScaler::LossScaler(const plan::LossScaling& spec) : spec_(spec) {
  // torch keeps its scale in a float32 tensor; DeepSpeed in a Python float.
  state_.scale = spec.rule == plan::LossScaleRule::torch ? static_cast<float>(spec.init_scale) : spec.init_scale;
  state_.hysteresis_left = spec.hysteresis;
}

bool LossScaler::UnscaleAndCheck(Trainer& trainer) {
  if (!spec_.enabled) return false;
  // GradScaler's `_scale.double().reciprocal().float()`; DeepSpeed's `1. / loss_scale`.
  return trainer.UnscaleGradients(1.0 / state_.scale);
}

void LossScaler::Update(bool overflow) {
  if (!spec_.enabled) return;
  LossScaleState& s = state_;
  switch (spec_.rule) {
    case plan::LossScaleRule::torch:
      // ATen's _amp_update_scale_: in float32, growth only to a finite scale.
      if (overflow) {
        s.scale = static_cast<float>(s.scale * spec_.backoff_factor);
        s.growth_tracker = 0;
      } else if (s.growth_tracker + 1 == spec_.growth_interval) {
        const float grown = static_cast<float>(s.scale * spec_.growth_factor);
        if (std::isfinite(grown)) s.scale = grown;
        s.growth_tracker = 0;
      } else {
        ++s.growth_tracker;
      }
      return;
    case plan::LossScaleRule::deepspeed:
      // DynamicLossScaler.update_scale.
      if (overflow) {
        if (spec_.hysteresis == 1 || s.hysteresis_left == 1) {
          if (s.scale == spec_.min_scale) {
            throw std::runtime_error(fmt::format(
                "the fp16 loss scale is already at its minimum ({}) and the gradients overflowed again, where "
                "DeepSpeed stops the run; lower `fp16.min_loss_scale`, or train in bf16",
                spec_.min_scale));
          }
          s.scale = std::max(s.scale * spec_.backoff_factor, spec_.min_scale);
        } else {
          --s.hysteresis_left;
        }
        s.last_overflow = s.iteration;
      } else {
        if (spec_.consecutive_hysteresis) s.hysteresis_left = spec_.hysteresis;
        const int64_t stable = s.iteration - s.last_overflow - 1;
        if (stable > 0 && stable % spec_.growth_interval == 0) {
          if (!spec_.consecutive_hysteresis) s.hysteresis_left = spec_.hysteresis;
          s.scale *= spec_.growth_factor;
        }
      }
      ++s.iteration;
      return;
    case plan::LossScaleRule::fixed:
      return;
  }
}

bool UnscaleAndFindNonFinite(std::vector<at::Tensor>& gradients, double inv_scale) {
  if (gradients.empty()) return false;
  const at::TensorOptions options = at::TensorOptions().dtype(at::kFloat).device(gradients.front().device());
  at::Tensor found = at::zeros({1}, options);
  at::Tensor inverse = at::full({1}, static_cast<float>(inv_scale), options);
  at::_amp_foreach_non_finite_check_and_unscale_(gradients, found, inverse);
  return found.item<float>() != 0;
}

}  // namespace accel::rt::train
