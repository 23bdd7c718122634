#include "runtime/train/worker.h"

#include <chrono>
#include <memory>
#include <string>
#include <string_view>
#include <utility>

#include <fmt/format.h>

#include "runtime/distributed/collectives.h"
#include "runtime/distributed/self_test.h"
#include "runtime/model/error_text.h"
#include "runtime/support/error.h"
#include "runtime/support/progress.h"
#include "runtime/train/process_group.h"
#include "runtime/train/training_run.h"

namespace accel::rt::train {
namespace {

llvm::Expected<Steps> FindSteps(const plan::Plan& plan) {
  const auto* init = plan.Find<plan::InitProcessGroup>();
  const auto* model = plan.Find<plan::BuildModel>();
  const auto* data = plan.Find<plan::BuildDataloader>();
  const auto* loop = plan.Find<plan::TrainLoop>();
  const auto* save = plan.Find<plan::SaveModel>();
  for (auto [found, op] : {std::pair<const void*, std::string_view>{init, plan::InitProcessGroup::kTag},
                           {model, plan::BuildModel::kTag},
                           {data, plan::BuildDataloader::kTag},
                           {loop, plan::TrainLoop::kTag},
                           {save, plan::SaveModel::kTag}}) {
    if (found == nullptr) return Fail(fmt::format("the plan has no `{}` step", op));
  }
  return Steps{*init, plan.Find<plan::Seed>(), *model, *data, *loop, *save, plan.Find<plan::Checkpoint>()};
}

// One rank's run of a plan, as a few phases (training_run.h): Connect, CheckIn, Build, Restore,
// then per optimizer step Step, Checkpoint, Evaluate and Report, and Finish. Every phase but Step
// returns an llvm::Error; LibTorch's exceptions pass through to RunWorker, the one boundary.
class TrainingRun {
 public:
  TrainingRun(const plan::Plan& plan, const Steps& steps, const WorkerContext& context)
      : run_(plan, steps, context) {}

  llvm::Expected<RunSummary> Run(std::unique_ptr<distributed::Collectives>& group) {
    if (llvm::Error error = phases::OpenStore(run_)) return error;
    if (llvm::Error error = phases::CheckModelTakesData(run_)) return error;
    phases::Connect(run_, group);
    if (llvm::Error error = phases::CheckIn(run_)) return error;
    if (llvm::Error error = phases::PickDevice(run_)) return error;
    progress::Working("building the model and the data loaders");
    if (llvm::Error error = phases::Build(run_)) return error;
    progress::Working("restoring the training state");
    const auto restore_started = std::chrono::steady_clock::now();
    if (llvm::Error error = phases::Restore(run_)) return error;
    if (llvm::Error error = phases::Shard(run_)) return error;
    phases::ReportResume(run_, restore_started);
    if (llvm::Error error = phases::CheckColumns(run_)) return error;
    const int64_t first_step = run_.progress.step + 1;
    if (run_.main_process) {
      llvm::Expected<std::unique_ptr<RunReport>> report =
          RunReport::Open(run_.plan, run_.loop, run_.dir, first_step, /*resumed=*/run_.progress.step > 0,
                          run_.context.progress_tty);
      if (!report) return report.takeError();
      run_.report.log = std::move(*report);
      if (llvm::Error error = phases::MarkResume(run_)) return error;
    }
    run_.report.summary.steps = run_.loop.steps;
    run_.report.started = std::chrono::steady_clock::now();
    run_.report.last_report = run_.report.started;
    for (int64_t step = first_step; step <= run_.loop.steps; ++step) {
      progress::Working(fmt::format("step {}", step));
      StepResult result = phases::Step(run_, step);
      // Every skipped step, reported or not: the scale it tried and the one it backed off to.
      if (result.skipped && run_.report.log) {
        observe::Scalars scales{{"loss_scale", result.loss_scale},
                                {"next_loss_scale", run_.schedule.loss_scaler.scale()}};
        if (llvm::Error error = run_.report.log->LogEvent(step, "overflow", {}, scales)) return error;
      }
      if (llvm::Error error = phases::CheckpointIfDue(run_, step, result.epoch_ended)) return error;
      if (llvm::Error error = phases::EvaluateIfDue(run_, step)) return error;
      if (llvm::Error error = phases::Report(run_, step, first_step, result)) return error;
    }
    progress::Working("saving the model");
    if (run_.report.log) {
      if (llvm::Error error = run_.report.log->Finish()) return error;
    }
    run_.report.summary.wall_seconds = phases::Elapsed(run_);
    if (run_.loop.loss_scaling.enabled) {
      run_.report.summary.loss_scale = run_.schedule.loss_scaler.scale();
      run_.report.summary.skipped_steps = run_.progress.skipped_steps;
    }
    if (llvm::Error error = phases::Finish(run_)) return error;
    return run_.report.summary;
  }

 private:
  RunContext run_;
};

// The runtime's exception boundary: LibTorch and c10d throw; callers get an llvm::Error
// naming this rank. `run` connects `group` and uses it.
template <typename Result, typename Run>
llvm::Expected<Result> AtTheBoundary(const WorkerContext& context, Run run) {
  std::unique_ptr<distributed::Collectives> group;
  auto first_line = [](const std::string& text) { return text.substr(0, text.find('\n')); };
  // One line, and the indented lines that locate it (a TorchScript model's traceback).
  auto with_details = [](const std::string& text) {
    ErrorText split = SplitErrorText(text);
    return split.summary + split.details;
  };
  try {
    llvm::Expected<Result> result = run(group);
    if (result) return result;
    // After a failure the group may hold queued work that would only time out: leave it to the OS.
    (void)group.release();
    llvm::Error error = result.takeError();
    // Kept apart by type, so that the launcher does not restart what would fail again.
    bool mismatch = error.isA<ArgumentMismatch>();
    std::string message =
        fmt::format("rank {}: {}", context.rank, with_details(llvm::toString(std::move(error))));
    if (mismatch) return llvm::make_error<ArgumentMismatch>(std::move(message));
    return Fail(message);
  } catch (const distributed::CollectiveError& error) {
    // A peer's death or a timeout: the launcher tells this echo from a root cause by its type.
    (void)group.release();
    return llvm::make_error<CollectiveFailure>(
        fmt::format("rank {}: {}", context.rank, first_line(error.what())));
  } catch (const std::exception& error) {
    // After a failed collective, destroying the Gloo group would wait for every queued bucket
    // to time out in turn. The worker is about to exit, so the group is left to the OS.
    (void)group.release();
    return Fail(fmt::format("rank {}: {}", context.rank, with_details(error.what())));
  }
}

}  // namespace

llvm::Expected<RunSummary> RunWorker(const plan::Plan& plan, const WorkerContext& context) {
  llvm::Expected<Steps> steps = FindSteps(plan);
  if (!steps) return Fail(fmt::format("rank {}: {}", context.rank, llvm::toString(steps.takeError())));
  return AtTheBoundary<RunSummary>(context, [&](std::unique_ptr<distributed::Collectives>& group) {
    return TrainingRun(plan, *steps, context).Run(group);
  });
}

llvm::Expected<std::vector<distributed::SelfTestCheck>> RunSelfTestWorker(const plan::Plan& plan,
                                                                          const WorkerContext& context) {
  const auto* init = plan.Find<plan::InitProcessGroup>();
  if (init == nullptr)
    return Fail(
        fmt::format("rank {}: the plan has no `{}` step", context.rank, plan::InitProcessGroup::kTag));
  using Checks = std::vector<distributed::SelfTestCheck>;
  return AtTheBoundary<Checks>(context, [&](std::unique_ptr<distributed::Collectives>& group) {
    group = ConnectGroup(*init, context);
    return llvm::Expected<Checks>(distributed::RunSelfTest(*group));
  });
}

}  // namespace accel::rt::train
