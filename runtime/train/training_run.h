#ifndef ACCEL_RUNTIME_TRAIN_TRAINING_RUN_H_
#define ACCEL_RUNTIME_TRAIN_TRAINING_RUN_H_

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>

#include "compiler/plan/plan.h"
#include "llvm/Support/Error.h"
#include "runtime/checkpoint/checkpoint_store.h"
#include "runtime/distributed/collectives.h"
#include "runtime/distributed/operations.h"
#include "runtime/engine/gradient_sync.h"
#include "runtime/engine/reducer.h"
#include "runtime/engine/sharded_engine.h"
#include "runtime/engine/tensor_parallel.h"
#include "runtime/engine/train_state.h"
#include "runtime/model/loss_scaler.h"
#include "runtime/model/lr_schedule.h"
#include "runtime/model/trainer.h"
#include "runtime/train/data_source.h"
#include "runtime/train/gradient_accumulation.h"
#include "runtime/train/run_report.h"
#include "runtime/train/worker_context.h"

// One rank's run of a plan (worker.cpp), phase by phase: setting up (run_setup.cpp), resuming
// (run_restore.cpp), and the step loop with its checkpoints, evaluations and reports
// (run_steps.cpp). The phases share one RunContext, grouped by what each part is about, so a
// phase names the part it reads or changes (`run.model.trainer`, `run.report.summary`).
namespace accel::rt::train {

// The plan's steps the worker executes, each found once; `seed` and `checkpoint` may be absent.
struct Steps {
  const plan::InitProcessGroup& init;
  const plan::Seed* seed;
  const plan::BuildModel& model;
  const plan::BuildDataloader& data;
  const plan::TrainLoop& loop;
  const plan::SaveModel& save;
  const plan::Checkpoint* checkpoint;
};

// Where this rank runs and whom it talks to.
struct RunRanks {
  std::optional<checkpoint::CheckpointStore> store;
  distributed::Collectives* collectives = nullptr;
  c10::Device device{c10::kCPU};  // where the model computes (PickDevice)
  std::optional<distributed::DataOps> ops;
  // The mesh (tensor_parallel.h): this rank's place, its groups, and the data-parallel group
  // that DDP, the sharded engine, the loaders and evaluation work over (the world without
  // tensor parallelism).
  MeshPlace mesh;
  MeshGroups mesh_groups;
  distributed::Collectives* dp = nullptr;
  std::optional<distributed::DataOps> dp_ops;
};

// The model the step loop drives, and how its gradients are synchronised.
struct RunModel {
  std::unique_ptr<Trainer> trainer;
  // The tensor-parallel view of the trainer (null without).
  TensorParallelTrainer* tp = nullptr;
  std::vector<std::pair<std::string, at::Tensor>> named;
  std::vector<at::Tensor> buffers;
  std::unique_ptr<Reducer> reducer;  // until Build hands it to sync
  std::unique_ptr<GradientSync> ddp;
  // What the step loop synchronises gradients with: ddp, or the sharded engine (trainer).
  GradientSync* sync = nullptr;
  // Stages 1-3: the engine (trainer), and what a sharded checkpoint left it to read.
  ShardedEngine* engine = nullptr;
  std::optional<ShardedResume> sharded_resume;
  // cpu_ram_efficient_loading (Build): rank 0 alone builds the weights' values; the engine
  // takes them from it; this rank's parameters hold shapes only, until the engine or Restore
  // gives them bytes.
  bool rank_zero_loads = false;
  bool engine_takes_weights = false;
  bool shapes_only = false;
  // Whether rank 0's buffers are broadcast before the next forward (BroadcastBuffersIfDue).
  bool sync_buffers = false;
};

// The data loaders and the spec they were opened from (its batch size may have been searched).
struct RunData {
  plan::BuildDataloader spec;
  std::optional<DataLoaders> loaders;
};

// Accumulation, the learning-rate schedule and fp16's loss scale.
struct RunSchedule {
  explicit RunSchedule(const plan::LossScaling& loss_scaling) : loss_scaler(loss_scaling) {}
  std::optional<GradientAccumulation> accumulation;
  std::optional<LrScheduler> scheduler;
  ScheduleSpec spec;
  int64_t per_step = 1;  // scheduler steps per optimizer step
  SchedulerStepPolicy step_policy;
  double base_lr = 0;
  // The plan's rule; scale 1 and never an overflow without loss scaling.
  LossScaler loss_scaler;
};

// What rank 0 reports and the run returns.
struct RunReporting {
  std::unique_ptr<RunReport> log;
  RunSummary summary;
  std::chrono::steady_clock::time_point started;
  std::chrono::steady_clock::time_point last_report;
  // On resume: the checkpoint loaded, the training seconds before it, and whether the run's
  // first loss came from metrics.jsonl.
  std::string resumed_from;
  double earlier_seconds = 0;
  bool first_loss_known = false;
  int64_t samples_since_report = 0;
};

struct RunContext {
  RunContext(const plan::Plan& plan, const Steps& steps, const WorkerContext& context)
      : plan(plan),
        steps(steps),
        loop(steps.loop),
        context(context),
        main_process(context.rank == 0),
        dir(context.output_dir.empty() ? steps.save.dir : context.output_dir),
        schedule(steps.loop.loss_scaling) {}

  // What the run was given.
  const plan::Plan& plan;
  const Steps& steps;
  // The plan's loop, its length in steps once Build has the data (WithLengthInSteps).
  plan::TrainLoop loop;
  const WorkerContext& context;
  const bool main_process;
  const std::filesystem::path dir;

  RunRanks ranks;
  RunModel model;
  RunData data;
  RunSchedule schedule;
  Progress progress;
  RunReporting report;
};

// One optimizer step's outcome.
struct StepResult {
  double loss = 0;  // mean over this step's micro-batches, this rank
  double lr = 0;    // the rate the optimizer step used
  double grad_norm = 0;
  bool epoch_ended = false;
  // fp16: the scale this step's loss was multiplied by, and whether its gradients overflowed
  // (the optimizer and the scheduler then skipped the step).
  double loss_scale = 1;
  bool skipped = false;
};

// The phases, in the order TrainingRun::Run calls them. Every phase but Step returns an
// llvm::Error; LibTorch's exceptions pass through to RunWorker, the one boundary.
namespace phases {

// run_setup.cpp
llvm::Error OpenStore(RunContext& run);
llvm::Error CheckModelTakesData(const RunContext& run);
void Connect(RunContext& run, std::unique_ptr<distributed::Collectives>& group);
llvm::Error CheckIn(RunContext& run);
llvm::Error PickDevice(RunContext& run);
llvm::Error Build(RunContext& run);
llvm::Error Shard(RunContext& run);
llvm::Error CheckColumns(RunContext& run);

// run_restore.cpp
llvm::Error Restore(RunContext& run);
void ReportResume(const RunContext& run, std::chrono::steady_clock::time_point started);
llvm::Error MarkResume(RunContext& run);

// run_steps.cpp
StepResult Step(RunContext& run, int64_t step);
llvm::Error CheckpointIfDue(RunContext& run, int64_t step, bool epoch_ended);
llvm::Error EvaluateIfDue(RunContext& run, int64_t step);
llvm::Error Report(RunContext& run, int64_t step, int64_t first_step, const StepResult& result);
double Elapsed(const RunContext& run);
llvm::Error Finish(RunContext& run);

}  // namespace phases
}  // namespace accel::rt::train

#endif  // ACCEL_RUNTIME_TRAIN_TRAINING_RUN_H_
