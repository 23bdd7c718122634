#include "runtime/model/lr_schedule.h"

#include <algorithm>
#include <cmath>
#include <numbers>

namespace accel::rt::train {

double LearningRateFactor(const ScheduleSpec& spec, int64_t step) {
  if (spec.kind != ScheduleKind::constant && step < spec.warmup_steps &&
      spec.warmup_curve == plan::WarmupCurve::log) {
    const int64_t unit = std::max<int64_t>(1, spec.steps_per_optimizer_step);
    const double warmup = static_cast<double>(std::max<int64_t>(2, spec.warmup_steps / unit));
    return std::log(static_cast<double>(step / unit) + 1.0) / std::log(warmup);
  }
  if (spec.kind != ScheduleKind::constant && step < spec.warmup_steps) {
    return static_cast<double>(step) / static_cast<double>(std::max<int64_t>(1, spec.warmup_steps));
  }
  double decay_steps = static_cast<double>(std::max<int64_t>(1, spec.total_steps - spec.warmup_steps));
  switch (spec.kind) {
    case ScheduleKind::constant:
    case ScheduleKind::constant_with_warmup:
      return 1.0;
    case ScheduleKind::linear:
      return std::max(0.0, static_cast<double>(spec.total_steps - step) / decay_steps);
    case ScheduleKind::cosine: {
      double progress = static_cast<double>(step - spec.warmup_steps) / decay_steps;
      return std::max(0.0, 0.5 * (1.0 + std::cos(std::numbers::pi * spec.num_cycles * 2.0 * progress)));
    }
  }
  return 1.0;
}

LrScheduler::LrScheduler(ScheduleSpec spec, std::vector<double> base_lrs)
    : spec_(spec), base_lrs_(std::move(base_lrs)), lrs_(base_lrs_.size()) {
  Update();  // step 0: a warming-up schedule starts at 0, as LambdaLR's constructor sets it
}

const std::vector<double>& LrScheduler::Step() {
  ++last_step_;
  Update();
  return lrs_;
}

void LrScheduler::set_last_step(int64_t step) { last_step_ = step; }

void LrScheduler::Restore(int64_t step) {
  last_step_ = step;
  Update();
}

void LrScheduler::Update() {
  double factor = LearningRateFactor(spec_, last_step_);
  for (size_t i = 0; i < base_lrs_.size(); ++i) lrs_[i] = base_lrs_[i] * factor;
}

int StepLikeAccelerate(LrScheduler& scheduler, const SchedulerStepPolicy& policy, bool sync_gradients,
                       bool optimizer_step_was_skipped) {
  if (!sync_gradients) {
    if (policy.adjust_scheduler) scheduler.set_last_step(scheduler.last_step() + 1);
    return 0;
  }
  if (optimizer_step_was_skipped) return 0;
  int steps = policy.split_batches ? 1 : std::max(1, policy.num_processes);
  for (int i = 0; i < steps; ++i) scheduler.Step();
  return steps;
}

}  // namespace accel::rt::train
