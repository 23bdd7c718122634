// `--resume`: load_state from the newest checkpoint, every rank agreeing on the step, and the
// earlier launches' measurements carried into this one's report.
#include "runtime/train/training_run.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <cstdio>

#include <fmt/format.h>

#include "runtime/model/weight_storage.h"
#include "runtime/observe/metrics_log.h"
#include "runtime/support/error.h"
#include "runtime/train/checkpointing.h"
#include "runtime/train/data_identity.h"

namespace accel::rt::train::phases {
namespace {

// A checkpoint of another world size: the optimizer step and the data position (batches per
// process) carry over; the scheduler's counts, which advance once per process per step
// unless batches are split, are converted to this world's. The samples continue exactly when
// the global batch (batch_size x processes) is the same as the saving run's.
void ConvertWorldSize(const RunContext& run, Progress& restored) {
  const int64_t saved = restored.saved_world_size;
  const bool per_process = run.schedule.per_step == run.context.world_size &&
                           run.loop.step_scheduler_with_optimizer && !run.data.spec.split_batches;
  if (per_process) {
    auto convert = [&](int64_t& count) {
      if (count >= 0) count = count / saved * run.context.world_size;
    };
    convert(restored.scheduler_steps);
    convert(restored.schedule_steps);
    convert(restored.warmup_steps);
  }
  if (run.main_process) {
    fmt::print(
        stderr,
        "accelrun: warning: the checkpoint was written by {} processes, this run has {}: it continues "
        "at step {} with the same data position per process, the same samples if batch_size x "
        "processes is unchanged\n",
        saved, run.context.world_size, restored.step);
    std::fflush(stderr);
  }
}

// A resume whose plan would give the remaining steps other learning rates than the
// checkpoint's schedule (another `train.steps`, warmup or `lr_schedule`) is refused, unless
// `--allow-schedule-change` lets it continue on this plan's schedule, with a warning.
llvm::Error CheckSchedule(const RunContext& run, const Progress& saved) {
  const std::string now(plan::EnumName(run.loop.lr_schedule));
  // `constant` ignores the length and the warmup, `constant_with_warmup` the length.
  bool uses_length = now == "linear" || now == "cosine";
  bool uses_warmup = now != "constant";
  bool changed =
      saved.schedule != now ||
      (uses_length && saved.schedule_steps >= 0 && saved.schedule_steps != run.schedule.spec.total_steps) ||
      (uses_warmup && saved.warmup_steps >= 0 && saved.warmup_steps != run.schedule.spec.warmup_steps);
  if (!changed) return llvm::Error::success();
  // In optimizer steps, as the spec counts them (the scheduler counts per_step per step).
  auto describe = [&run](const std::string& kind, int64_t total, int64_t warmup) {
    if (total < 0) return fmt::format("`{}`", kind);
    return fmt::format("`{}` over {} steps with {} warmup steps", kind, total / run.schedule.per_step,
                       warmup / run.schedule.per_step);
  };
  std::string difference = fmt::format("the checkpoint's learning-rate schedule is {}, this plan's is {}",
                                       describe(saved.schedule, saved.schedule_steps, saved.warmup_steps),
                                       describe(now, run.schedule.spec.total_steps,
                                                run.schedule.spec.warmup_steps));
  if (!run.context.allow_schedule_change) {
    return llvm::make_error<ArgumentMismatch>(fmt::format(
        "cannot resume at step {}: {}, so every remaining step would train at another rate than either run "
        "planned; resume with the checkpoint's `train.steps`, `warmup_steps` and `lr_schedule`, or pass "
        "`--allow-schedule-change` to continue on this plan's schedule from the checkpoint's position",
        saved.step, difference));
  }
  if (run.main_process) {
    fmt::print(stderr,
               "accelrun: warning: {}; from step {} on the rates follow this plan's schedule "
               "(`--allow-schedule-change`)\n",
               difference, saved.step + 1);
    std::fflush(stderr);
  }
  return llvm::Error::success();
}

}  // namespace

// load_state for `--resume`: the model, optimizer, this rank's RNG, the scheduler and the
// data position, so the run continues exactly where the checkpoint was taken. Collective.
llvm::Error Restore(RunContext& run) {
  if (run.context.resume.empty()) return llvm::Error::success();
  const plan::Checkpoint& spec = *run.steps.checkpoint;
  llvm::Expected<std::optional<checkpoint::VerifiedCheckpoint>> from =
      FindResumePoint(*run.ranks.store, spec, run.dir, run.context.resume, run.main_process);
  if (!from) return from.takeError();
  if (*from) {
    // A sharded run leaves a sharded checkpoint's parameters and optimizer state to its
    // engine (Shard), each rank reading its own ranges; anything else loads whole here. With
    // tensor parallelism the checkpoint's whole tensors go into the gathered view, and
    // EndFullState keeps this rank's slices of them.
    if (run.model.tp != nullptr) run.model.tp->BeginFullState();
    // A whole checkpoint loads into every rank's parameters (the engine then takes rank 0's).
    if (run.model.shapes_only) {
      for (const auto& [name, tensor] : run.model.named) AllocateBytes(tensor);
      run.model.shapes_only = false;
    }
    llvm::Expected<Progress> restored = RestoreTrainingState(
        **from, *run.model.trainer, run.context.rank, run.context.world_size,
        DataIdentitySeed(run.steps.data),
        run.loop.sharding.stage > 0 && run.model.tp == nullptr ? &run.model.sharded_resume : nullptr);
    if (run.model.tp != nullptr && restored) run.model.tp->EndFullState();
    if (!restored) return restored.takeError();
    if (llvm::Error error = CheckProgressFitsPlan(
            *restored, {run.loop.steps, run.loop.gradient_accumulation.num_steps}, (*from)->path)) {
      return error;
    }
    if (restored->saved_world_size != run.context.world_size) ConvertWorldSize(run, *restored);
    if (llvm::Error error = CheckSchedule(run, *restored)) return error;
    run.progress = *restored;
    run.progress.schedule = plan::EnumName(run.loop.lr_schedule);
    run.progress.base_lr = run.schedule.base_lr;
    run.progress.schedule_steps = run.schedule.spec.total_steps;
    run.progress.warmup_steps = run.schedule.spec.warmup_steps;
    run.report.resumed_from = (*from)->path;
    // A position past the epoch's end (a checkpoint `accelrun import-state` wrote counts the
    // batches from the first epoch's start) carries into the epochs after it.
    int64_t epoch = std::max<int64_t>(run.progress.data_epoch, 0), position = run.progress.data_position;
    const int64_t per_epoch = run.data.loaders->train.batches_per_epoch();
    if (per_epoch > 0 && position > per_epoch) {
      epoch += (position - 1) / per_epoch;
      position = (position - 1) % per_epoch + 1;
    }
    if (llvm::Error error = run.data.loaders->train.Restore(epoch, position)) {
      return Fail("cannot resume: " + llvm::toString(std::move(error)));
    }
    // The optimizer's restored rate is the checkpoint's schedule's: under
    // `--allow-schedule-change` the next step trains at this plan's.
    run.schedule.scheduler->Restore(run.progress.scheduler_steps);
    run.model.trainer->SetLearningRate(run.schedule.scheduler->learning_rates()[0]);
    if (run.progress.loss_scale && run.loop.loss_scaling.enabled)
      run.schedule.loss_scaler.Restore(*run.progress.loss_scale);
  }
  if (WritesCheckpoints(spec, run.steps.init, run.context.rank))
    GuardRotation(*run.ranks.store, run.report.resumed_from, run.progress);
  // Each rank loaded on its own (with save_on_each_node, from its own machine's copy): all
  // must continue from rank 0's step.
  // Data operations take tensors where the group communicates (the GPU, on NCCL).
  at::Tensor step =
      at::full({1}, run.progress.step, at::TensorOptions(at::kLong).device(run.ranks.collectives->device()));
  int64_t agreed = run.ranks.ops->Broadcast(distributed::Value::Tensor(step), 0).tensor().item<int64_t>();
  if (agreed != run.progress.step) {
    return Fail(fmt::format("resumed at step {} but rank 0 resumed at step {}", run.progress.step, agreed));
  }
  // Only once every rank is done reading the checkpoints.
  run.ranks.ops->WaitForEveryone();
  if (*from && WritesCheckpoints(spec, run.steps.init, run.context.rank) && run.context.resume == "auto" &&
      spec.automatic_checkpoint_naming) {
    if (llvm::Error error = SetAsideRejected(*run.ranks.store)) return error;
  }
  if (run.main_process && !*from) {
    fmt::print("no checkpoint to resume from; starting at step 1\n");
    std::fflush(stdout);
  }
  return llvm::Error::success();
}

// Rank 0, once the engine holds its shards too: where the run resumed, and how long the
// load took (verification, restore, and the engine's own ranges of a sharded checkpoint).
void ReportResume(const RunContext& run, std::chrono::steady_clock::time_point started) {
  if (!run.main_process || run.report.resumed_from.empty()) return;
  double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started).count();
  fmt::print("resumed from {} at step {} (loaded in {:.0f} ms)\n", run.report.resumed_from, run.progress.step,
             ms);
  std::fflush(stdout);
}

// Rank 0 of a resumed run: a `resume` marker in metrics.jsonl, and what the earlier launches
// measured (read back from metrics.jsonl), so that metrics.json covers the whole run.
llvm::Error MarkResume(RunContext& run) {
  if (run.report.resumed_from.empty()) return llvm::Error::success();
  observe::RunHistory history =
      observe::ReadRunHistory((run.dir / "metrics.jsonl").string(), run.progress.step);
  run.report.earlier_seconds = history.elapsed_seconds.value_or(0);
  if (history.first_loss) {
    run.report.summary.first_loss = *history.first_loss;
    run.report.first_loss_known = true;
  }
  if (history.last_loss) run.report.summary.final_loss = *history.last_loss;
  run.report.summary.resumed_at_step = run.progress.step;
  return run.report.log->LogEvent(run.progress.step, "resume", {{"checkpoint", run.report.resumed_from}},
                                  {{"elapsed_seconds", run.report.earlier_seconds}});
}

}  // namespace accel::rt::train::phases
