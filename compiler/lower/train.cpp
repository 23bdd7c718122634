#include "compiler/lower/train.h"

#include <string>

#include <fmt/format.h>

#include "compiler/lower/plan_records.h"

namespace accel::lower {
namespace {

using sema::Value;

struct ProjectDirs {
  std::string project_dir;  // empty: the run's output directory
  std::string logging_dir;
};

// ProjectConfiguration's directories as Accelerate resolves them: the Accelerator's
// `project_dir` applies when the configuration has none, and no `logging_dir` means the
// project directory (PRJ-001).
ProjectDirs ResolveProjectDirs(const spec::Accelerator& accelerator) {
  spec::ProjectConfiguration project = accelerator.project_config();
  ProjectDirs dirs;
  dirs.project_dir = project.project_dir().value_or(accelerator.project_dir().value_or(""));
  dirs.logging_dir = project.logging_dir().value_or(dirs.project_dir);
  return dirs;
}

// DDP's communication hook: fp16 and bf16 compression run; PowerSGD does not.
void LowerCommHook(Lowering& lowering, const spec::DistributedDataParallelKwargs& ddp, plan::TrainLoop& loop) {
  using Hook = spec::DDPCommunicationHookType;
  Hook hook = ddp.comm_hook();
  switch (hook) {
    case Hook::NO:
      loop.ddp.comm_hook = plan::DDPCommunicationHookType::no;
      break;
    case Hook::FP16:
      loop.ddp.comm_hook = plan::DDPCommunicationHookType::fp16;
      break;
    case Hook::BF16:
      loop.ddp.comm_hook = plan::DDPCommunicationHookType::bf16;
      break;
    case Hook::POWER_SGD:
    case Hook::BATCHED_POWER_SGD:
      lowering.Unsupported(diag::Kind::NativePowerSgd, ddp.comm_hook_value(),
                           fmt::format("`accelerator.ddp.comm_hook = {}`", sema::views::SerializedValue(hook)),
                           "; accelrun compresses gradients with `fp16` or `bf16`" + std::string(kExport));
      break;
  }
  // A wrapper around no hook is dropped, as in Accelerate; around fp16/bf16 it would cast
  // twice, which only PowerSGD (not run here) makes meaningful.
  if (hook != Hook::NO && ddp.comm_wrapper() != Hook::NO) {
    lowering.Unsupported(diag::Kind::NativeCommWrapper, ddp.comm_wrapper_value(),
                         "`accelerator.ddp.comm_wrapper` around an fp16/bf16 hook",
                         "; it wraps PowerSGD hooks, which accelrun does not run: drop the wrapper" +
                             std::string(kExport));
  }
}

}  // namespace

plan::TrainLoop LowerTrain(Lowering& lowering, plan::MixedPrecision precision) {
  spec::Train train = lowering.job().train();
  spec::Accelerator accelerator = lowering.job().accelerator();
  plan::TrainLoop loop;
  // With both set, `steps` wins (TRAIN-003); `epochs` becomes steps in the worker, which has
  // the data (its size is not known here for files).
  loop.steps = train.steps().value_or(0);
  loop.epochs = loop.steps > 0 ? 0 : train.epochs().value_or(0);
  loop.log_every = train.log_every();
  loop.loss = PlanMember<plan::Loss>(train.loss());
  loop.mixed_precision = precision;
  loop.optimizer = FromSpecUnion<plan::Optimizer>(train.optimizer());
  loop.lr_schedule = PlanMember<plan::LrScheduleType>(train.lr_schedule());
  loop.warmup_steps = train.warmup_steps();
  loop.warmup_ratio = train.warmup_ratio().value_or(0.0);
  loop.num_cycles = train.num_cycles();
  loop.step_scheduler_with_optimizer = accelerator.step_scheduler_with_optimizer();
  loop.max_grad_norm = train.max_grad_norm().value_or(0.0);
  loop.eval_samples = train.eval_samples();
  loop.find_executable_batch_size = train.find_executable_batch_size();
  loop.eval_every = train.eval_every().value_or(0);

  plan::GradientAccumulationPlugin& ga = loop.gradient_accumulation;
  if (std::optional<spec::GradientAccumulationPlugin> plugin = accelerator.gradient_accumulation_plugin()) {
    ga.num_steps = plugin->num_steps();
    ga.sync_with_dataloader = plugin->sync_with_dataloader();
    ga.sync_each_batch = plugin->sync_each_batch();
  } else {
    ga.num_steps = accelerator.gradient_accumulation_steps();
  }
  // GA-003: Accelerate reads the plugin's to_kwargs(), which drops the default True, and
  // falls back to False: adjust_scheduler is in effect always off.
  ga.adjust_scheduler = false;

  // Accelerate builds its GradScaler from GradScalerKwargs only for fp16 (a DeepSpeed plan's
  // JSON replaces this with DeepSpeed's own scaler).
  spec::GradScalerKwargs scaler = accelerator.grad_scaler();
  loop.loss_scaling.enabled = precision == plan::MixedPrecision::fp16 && scaler.enabled();
  loop.loss_scaling.init_scale = scaler.init_scale();
  loop.loss_scaling.growth_factor = scaler.growth_factor();
  loop.loss_scaling.backoff_factor = scaler.backoff_factor();
  loop.loss_scaling.growth_interval = scaler.growth_interval();

  spec::AutocastKwargs autocast = accelerator.autocast();
  loop.autocast.enabled = autocast.enabled();
  loop.autocast.cache_enabled = autocast.cache_enabled().value_or(true);

  spec::DistributedDataParallelKwargs ddp = accelerator.ddp();
  loop.ddp.bucket_cap_mb = ddp.bucket_cap_mb();
  LowerCommHook(lowering, ddp, loop);
  loop.ddp.find_unused_parameters = ddp.find_unused_parameters();
  loop.ddp.broadcast_buffers = ddp.broadcast_buffers();

  for (const Value& tracker : accelerator.log_with().items) {
    spec::LoggerType type = sema::views::EnumOf<spec::LoggerType>(tracker);
    // `all` starts every tracker that is installed: the one accelrun has.
    if (type == spec::LoggerType::TENSORBOARD || type == spec::LoggerType::ALL) {
      if (loop.trackers.empty()) loop.trackers.push_back(plan::Tracker::tensorboard);
    } else {
      lowering.Unsupported(
          diag::Kind::NativeTracker, tracker,
          fmt::format("`accelerator.log_with = {}`", sema::views::SerializedValue(type)),
          "; accelrun writes `metrics.jsonl` and TensorBoard event files (`tensorboard`)" + std::string(kExport));
    }
  }
  loop.logging_dir = ResolveProjectDirs(accelerator).logging_dir;
  return loop;
}

std::optional<plan::Checkpoint> LowerCheckpoint(Lowering& lowering) {
  spec::Train train = lowering.job().train();
  spec::Accelerator accelerator = lowering.job().accelerator();
  spec::ProjectConfiguration project = accelerator.project_config();
  bool every_epoch = train.checkpoint_every_epoch();
  if (!train.checkpoint_every() && !every_epoch) {
    // The trackers read the directories; everything else only checkpointing reads. Walked as
    // a record: whichever field the spec set is the one to name.
    const Value& project_value = project.value();
    bool trackers = !accelerator.log_with().items.empty();
    for (size_t i = 0; i < project_value.keys.size(); ++i) {
      const std::string& key = project_value.keys[i];
      if (trackers && (&project_value.items[i] == &project.logging_dir_value() ||
                       &project_value.items[i] == &project.project_dir_value()))
        continue;
      if (!SetInSpec(project_value.items[i])) continue;
      lowering.Unsupported(diag::Kind::NativeUnusedProjectConfig, FirstSetInSpec(project_value.items[i]),
                           fmt::format("`accelerator.project_config.{}`", key),
                           "; nothing saves checkpoints unless `train.checkpoint_every` or "
                           "`train.checkpoint_every_epoch` is set" +
                               std::string(kExport));
      break;
    }
    return std::nullopt;
  }
  plan::Checkpoint checkpoint;
  checkpoint.checkpoint_every = train.checkpoint_every().value_or(0);
  checkpoint.checkpoint_every_epoch = every_epoch;
  ProjectDirs dirs = ResolveProjectDirs(accelerator);
  checkpoint.project_dir = dirs.project_dir;
  checkpoint.automatic_checkpoint_naming = project.automatic_checkpoint_naming();
  checkpoint.total_limit = project.total_limit().value_or(0);
  checkpoint.iteration = project.iteration();
  checkpoint.save_on_each_node = project.save_on_each_node();
  checkpoint.logging_dir = dirs.logging_dir;
  return checkpoint;
}

}  // namespace accel::lower
