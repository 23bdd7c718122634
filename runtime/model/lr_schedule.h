#ifndef ACCEL_RUNTIME_MODEL_LR_SCHEDULE_H_
#define ACCEL_RUNTIME_MODEL_LR_SCHEDULE_H_

#include <cstdint>
#include <string_view>
#include <vector>

#include "compiler/plan/plan.h"

// Learning-rate schedules with warmup, and how Accelerate steps a scheduler it wraps
// (catalog §3.3). Torch-free: the trainer reads learning rates from here.
namespace accel::rt::train {

// The plan's schedule names, one table for both.
using ScheduleKind = plan::LrScheduleType;

// The schedules of transformers' get_*_schedule_with_warmup, the ones Accelerate users pass to
// `prepare`. Every one warms up linearly from 0 over `warmup_steps`.
struct ScheduleSpec {
  ScheduleKind kind = ScheduleKind::constant;
  int64_t warmup_steps = 0;
  int64_t total_steps = 0;  // linear and cosine decay to 0 at this step
  double num_cycles = 0.5;  // cosine: half a cosine wave by default
  // How warmup rises: linearly (transformers' schedules) or logarithmically (DeepSpeed's
  // WarmupLR and WarmupDecayLR).
  plan::WarmupCurve warmup_curve = plan::WarmupCurve::linear;
  // Scheduler steps per optimizer step. DeepSpeed steps its scheduler once per optimizer step,
  // so the log curve is taken over optimizer steps; the linear one is the same either way.
  int64_t steps_per_optimizer_step = 1;
};

// The factor the base learning rate is multiplied by after `step` scheduler steps:
//   warmup:   step / max(1, warmup_steps) while step < warmup_steps; with the log curve
//             ln(n + 1) / ln(max(2, w)) in optimizer steps n = step / steps_per_optimizer_step,
//             w = warmup_steps / steps_per_optimizer_step, as DeepSpeed's WarmupLR computes it
//   linear:   max(0, (total - step) / max(1, total - warmup))
//   cosine:   max(0, (1 + cos(2π · num_cycles · progress)) / 2),
//             progress = (step - warmup) / max(1, total - warmup)
//   constant: 1
double LearningRateFactor(const ScheduleSpec& spec, int64_t step);

// A scheduler over parameter groups: `last_step` counts steps taken (LambdaLR's last_epoch).
class LrScheduler {
 public:
  LrScheduler(ScheduleSpec spec, std::vector<double> base_lrs);

  // One scheduler step: advances the count and returns the new learning rates.
  const std::vector<double>& Step();
  const std::vector<double>& learning_rates() const { return lrs_; }
  int64_t last_step() const { return last_step_; }
  // Sets the count without recomputing (Accelerate's adjust_scheduler bumps `_step_count`).
  void set_last_step(int64_t step);
  // A resumed run's count, and the rates this schedule gives there (the checkpoint's own rates
  // when the schedule is the checkpoint's).
  void Restore(int64_t step);

 private:
  void Update();

  ScheduleSpec spec_;
  std::vector<double> base_lrs_;
  std::vector<double> lrs_;
  int64_t last_step_ = 0;
};

// What Accelerate's AcceleratedScheduler does with one call of `scheduler.step()` in the
// training loop (catalog §3.3): nothing but an optional count bump on steps where gradients
// are not synchronized (inside gradient accumulation), nothing when the optimizer skipped its
// step (inf/NaN gradients under a GradScaler), otherwise one step — or `num_processes` steps
// when batches are not split, because each process then consumed its own batch.
struct SchedulerStepPolicy {
  bool split_batches = false;
  int num_processes = 1;
  // GradientAccumulationPlugin.adjust_scheduler as Accelerate *applies* it, not as written:
  // the plugin's `to_kwargs()` drops the default True and the reader falls back to False, so
  // it is in effect false whatever the plugin says (GA-003). When true, a non-sync step bumps
  // the scheduler's count without recomputing the learning rate.
  bool adjust_scheduler = false;
};

// Applies one training-loop `scheduler.step()` call to `scheduler`. Returns how many scheduler
// steps were taken.
int StepLikeAccelerate(LrScheduler& scheduler, const SchedulerStepPolicy& policy, bool sync_gradients,
                       bool optimizer_step_was_skipped);

}  // namespace accel::rt::train

#endif  // ACCEL_RUNTIME_MODEL_LR_SCHEDULE_H_
