// The step loop: each optimizer step, the checkpoints, evaluations and reports due after it,
// and the outputs at the end.
#include "runtime/train/training_run.h"

#include <ATen/ATen.h>
#include <ATen/core/grad_mode.h>

#include "compiler/plan/runtime_limits.h"
#include "runtime/engine/sharded_checkpoint.h"
#include "runtime/support/error.h"
#include "runtime/support/progress.h"
#include "runtime/train/checkpointing.h"
#include "runtime/train/data_identity.h"
#include "runtime/train/evaluation.h"
#include "runtime/train/run_outputs.h"

namespace accel::rt::train::phases {
namespace {

// DDP's require_forward_param_sync: rank 0's buffers are broadcast before a forward pass only
// when the previous one was a synced training forward (not under no_sync, not an evaluation),
// and before the very first. The reducer's own collective, as inside DDP.
void BroadcastBuffersIfDue(RunContext& run, bool next) {
  if (run.model.sync_buffers) {
    at::NoGradGuard no_grad;
    run.ranks.collectives->Broadcast(run.model.buffers, 0);
  }
  run.model.sync_buffers =
      next && run.loop.ddp.broadcast_buffers && !run.model.buffers.empty() && run.context.world_size > 1;
}

bool ShardedCheckpoints(const RunContext& run) { return plan::WritesShardedCheckpoints(run.plan); }

// Who reads the whole state a full checkpoint gathers: only the ranks that write it, where
// the engine can gather to them alone (the first rank of each shard group: rank 0, and with
// hybrid sharding each machine's first, which save_on_each_node's writers are when a
// machine holds whole shard groups). Tensor parallelism gathers its slices on every rank.
FullStateReaders CheckpointReaders(const RunContext& run) {
  if (run.model.tp != nullptr) return FullStateReaders::kEveryRank;
  const plan::InitProcessGroup& init = run.steps.init;
  const bool one_writer = !run.steps.checkpoint->save_on_each_node || init.num_machines == 1;
  const bool writers_lead_groups =
      run.loop.sharding.hybrid && static_cast<int>(init.processes_per_machine) % run.ranks.mesh.shard == 0;
  return one_writer || writers_lead_groups ? FullStateReaders::kFirstRanks : FullStateReaders::kEveryRank;
}

}  // namespace

// One optimizer step: micro-batches until the accumulation cycle syncs (num_steps of them,
// fewer when the data runs out and sync_with_dataloader ends the cycle early), clipping, the
// optimizer and the wrapped scheduler.
StepResult Step(RunContext& run, int64_t step) {
  StepResult result;
  data::DataLoader& data = run.data.loaders->train;
  double loss_total = 0;
  int64_t micro_batches = 0;
  for (bool sync = false; !sync; ++micro_batches) {
    data::Batch batch = data.Next();
    sync = run.schedule.accumulation->Begin(batch.last_in_epoch);
    result.epoch_ended = result.epoch_ended || batch.last_in_epoch;
    BroadcastBuffersIfDue(run, /*next=*/run.schedule.accumulation->all_reduce_gradients());
    run.model.sync->PrepareForBackward(run.schedule.accumulation->all_reduce_gradients());
    // accelerator.backward divides by the accumulation steps, also in a cycle cut short; fp16
    // multiplies by the loss scale.
    const double scale =
        run.schedule.loss_scaler.scale() / static_cast<double>(run.loop.gradient_accumulation.num_steps);
    Trainer& trainer = *run.model.trainer;
    loss_total += batch.columns.empty() ? trainer.ForwardBackward(batch.features, batch.targets, scale)
                                        : trainer.ForwardBackward(batch.columns, scale);
    run.model.sync->Finalize();
    // Every rank of a tensor-parallel group reads the same batch.
    run.report.samples_since_report += batch.size() * run.ranks.mesh.dp_size;
    run.progress.samples_seen += batch.size() * run.ranks.mesh.dp_size;
    // Not stepped with the optimizer: the loop's scheduler.step() after every micro-batch
    // reaches the scheduler itself; the sync micro-batch's comes after the optimizer step.
    if (!run.loop.step_scheduler_with_optimizer && !sync) run.schedule.scheduler->Step();
  }
  if (!run.loop.step_scheduler_with_optimizer)
    run.model.trainer->SetLearningRate(run.schedule.scheduler->learning_rates()[0]);
  // Unscaled before clipping, as accelerator.clip_grad_norm_ does; an overflow skips the
  // optimizer's and the wrapped scheduler's step.
  result.loss_scale = run.schedule.loss_scaler.scale();
  result.skipped = run.schedule.loss_scaler.UnscaleAndCheck(*run.model.trainer);
  result.grad_norm =
      run.loop.max_grad_norm > 0 ? run.model.trainer->ClipGradNorm(run.loop.max_grad_norm) : 0.0;
  run.model.trainer->OptimizerStep(/*skip=*/result.skipped);
  run.schedule.loss_scaler.Update(result.skipped);
  if (result.skipped) ++run.progress.skipped_steps;
  if (run.loop.step_scheduler_with_optimizer) {
    StepLikeAccelerate(*run.schedule.scheduler, run.schedule.step_policy, /*sync_gradients=*/true,
                       /*optimizer_step_was_skipped=*/result.skipped);
  } else {
    run.schedule.scheduler->Step();
  }
  result.lr = run.model.trainer->learning_rate();
  run.model.trainer->SetLearningRate(run.schedule.scheduler->learning_rates()[0]);
  result.loss = loss_total / static_cast<double>(micro_batches);
  run.progress.step = step;
  if (run.loop.loss_scaling.enabled) run.progress.loss_scale = run.schedule.loss_scaler.state();
  run.progress.data_epoch = data.epoch();
  run.progress.data_position = data.position();
  run.progress.scheduler_steps = run.schedule.scheduler->last_step();
  return result;
}

// save_state every checkpoint_every steps, after an epoch with checkpoint_every_epoch, and
// after the last step.
llvm::Error CheckpointIfDue(RunContext& run, int64_t step, bool epoch_ended) {
  const plan::Checkpoint* spec = run.steps.checkpoint;
  if (spec == nullptr) return llvm::Error::success();
  bool due = (spec->checkpoint_every > 0 && step % spec->checkpoint_every == 0) ||
             (spec->checkpoint_every_epoch && epoch_ended) || step == run.loop.steps;
  if (!due) return llvm::Error::success();
  // A save names itself: a watchdog report of a slow one then says what the rank was doing.
  progress::Working(fmt::format("saving the checkpoint of step {}", step));
  // What a resume from this checkpoint reads back to count the whole run's time. Written
  // before the save, so that a kill right after it still finds it; a save that never
  // completes leaves a marker that no resume reads (one resumes from an earlier step).
  if (run.report.log) {
    llvm::Error error = run.report.log->LogEvent(step, "checkpoint", {}, {{"elapsed_seconds", Elapsed(run)}});
    if (error) return error;
  }
  llvm::Error saved = [&] {
    if (ShardedCheckpoints(run)) {
      return SaveShardedCheckpoint(*run.ranks.store, *spec, run.dir, *run.model.engine, run.progress,
                                   DataIdentitySeed(run.steps.data), run.context.rank,
                                   *run.ranks.collectives);
    }
    run.model.sync->BeginFullState(FullState::kWeightsAndOptimizer, CheckpointReaders(run));
    llvm::Error error =
        SaveCheckpoint(*run.ranks.store, *spec, run.steps.init, run.dir, *run.model.trainer, run.progress,
                       DataIdentitySeed(run.steps.data), run.context.rank, *run.ranks.collectives);
    run.model.sync->EndFullState();
    return error;
  }();
  progress::Working(fmt::format("step {}", step));  // what follows (evaluation, the report) is the step's
  return saved;
}

// Every eval_every steps and after the last one (eval_every 0: after the last only).
llvm::Error EvaluateIfDue(RunContext& run, int64_t step) {
  const bool due = (run.loop.eval_every > 0 && step % run.loop.eval_every == 0) || step == run.loop.steps;
  if (!run.data.loaders->eval || !due)
    return llvm::Error::success();
  BroadcastBuffersIfDue(run, /*next=*/false);  // DDP: an evaluation forward runs without grad
  llvm::Expected<EvalResult> eval =
      Evaluate(*run.model.trainer, *run.data.loaders->eval, run.loop.eval_samples, *run.ranks.dp_ops);
  if (!eval) return eval.takeError();
  run.report.summary.eval_loss = eval->loss;
  run.report.summary.eval_accuracy = eval->accuracy;
  observe::Scalars scalars{{"eval_loss", eval->loss}};
  if (eval->accuracy >= 0) scalars.emplace_back("eval_accuracy", eval->accuracy);
  if (eval->perplexity >= 0) scalars.emplace_back("eval_perplexity", eval->perplexity);
  for (const auto& [name, value] : eval->metrics) scalars.emplace_back("eval_" + name, value);
  return run.report.log ? run.report.log->LogEval(step, scalars) : llvm::Error::success();
}

// At the first, every log_every-th and the last step: the loss averaged over the ranks
// (DataOps's Reduce, as accelerator.reduce), and on rank 0 the metrics and progress line.
llvm::Error Report(RunContext& run, int64_t step, int64_t first_step, const StepResult& result) {
  bool reported = IsReportedStep(run.loop, first_step, step);
  if (!reported) {
    if (run.report.log) run.report.log->Update(step, result.lr, 0);
    return llvm::Error::success();
  }
  const at::TensorOptions where = at::TensorOptions(at::kFloat).device(run.ranks.collectives->device());
  at::Tensor loss = at::full({1}, static_cast<float>(result.loss), where);
  double mean = run.ranks.ops->Reduce(distributed::Value::Tensor(loss), "mean").tensor().item<float>();
  if (step == first_step && !run.report.first_loss_known) run.report.summary.first_loss = mean;
  run.report.summary.final_loss = mean;
  if (!run.report.log) return llvm::Error::success();
  auto now = std::chrono::steady_clock::now();
  double seconds = std::chrono::duration<double>(now - run.report.last_report).count();
  double throughput = seconds > 0 ? run.report.samples_since_report / seconds : 0;
  run.report.last_report = now;
  run.report.samples_since_report = 0;
  observe::Scalars scalars{{"loss", mean},
                           {"lr", result.lr},
                           {"epoch", static_cast<double>(run.data.loaders->train.epoch())},
                           {"samples_per_second", throughput}};
  if (run.loop.max_grad_norm > 0) scalars.emplace_back("grad_norm", result.grad_norm);
  if (run.loop.loss_scaling.enabled) {
    scalars.emplace_back("loss_scale", result.loss_scale);
    scalars.emplace_back("skipped_steps", static_cast<double>(run.progress.skipped_steps));
  }
  if (llvm::Error error = run.report.log->Log(step, scalars, mean)) return error;
  run.report.log->Update(step, result.lr, throughput);
  return llvm::Error::success();
}

// Seconds of training in the whole run: the earlier launches' (on resume) and this one's.
double Elapsed(const RunContext& run) {
  return run.report.earlier_seconds +
         std::chrono::duration<double>(std::chrono::steady_clock::now() - run.report.started).count();
}

// The weights, metrics.json and this rank's record; rank 0 serves the store, so nobody
// leaves while a peer may still need it.
llvm::Error Finish(RunContext& run) {
  // Stage 3: the whole weights, for the digest and model.safetensors (not the optimizer state).
  run.model.sync->BeginFullState(FullState::kWeights);
  run.report.summary.parameter_digest = ParameterDigest(run.model.trainer->NamedParameters());
  // Rank 0: the file or index written.
  run.report.summary.model_path = (run.dir / run.steps.save.model_file).string();
  if (llvm::Error error = WriteRunOutputs(run.plan, run.steps.save, *run.model.trainer, run.report.summary,
                                          run.dir, run.context.rank, run.context.world_size)) {
    return error;
  }
  run.ranks.ops->WaitForEveryone();
  return llvm::Error::success();
}

}  // namespace accel::rt::train::phases
