#include "runtime/train/worker.h"

#include <ATen/ATen.h>
#include <ATen/core/grad_mode.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <optional>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "compiler/plan/runtime_limits.h"
#include "runtime/distributed/collectives.h"
#include "runtime/distributed/operations.h"
#include "runtime/distributed/random.h"
#include "runtime/distributed/self_test.h"
#include "runtime/support/error.h"
#include "runtime/support/progress.h"
#include "runtime/train/activation_checkpointing.h"
#include "runtime/train/batch_size_search.h"
#include "runtime/train/checkpointing.h"
#include "runtime/train/data_source.h"
#include "runtime/train/error_text.h"
#include "runtime/train/evaluation.h"
#include "runtime/train/gradient_accumulation.h"
#include "runtime/train/gradient_sync.h"
#include "runtime/train/loss_scaler.h"
#include "runtime/train/lr_schedule.h"
#include "runtime/train/process_group.h"
#include "runtime/train/reducer.h"
#include "runtime/train/run_outputs.h"
#include "runtime/train/run_report.h"
#include "runtime/train/sharded_checkpoint.h"
#include "runtime/train/sharded_engine.h"
#include "runtime/train/tensor_parallel.h"
#include "runtime/train/train_state.h"
#include "runtime/train/trainer.h"
#include "runtime/train/training_length.h"
#include "runtime/train/weight_storage.h"

namespace accel::rt::train {
namespace {

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

// One rank's run of a plan, as a few phases: Connect, CheckIn, Build, Restore, then per optimizer step
// Step, Checkpoint, Evaluate and Report, and Finish. Every phase but Step returns an
// llvm::Error; LibTorch's exceptions pass through to RunWorker, the one boundary.
class TrainingRun {
 public:
  TrainingRun(const plan::Plan& plan, const Steps& steps, const WorkerContext& context)
      : plan_(plan),
        steps_(steps),
        loop_(steps.loop),
        context_(context),
        main_process_(context.rank == 0),
        dir_(context.output_dir.empty() ? steps.save.dir : context.output_dir) {}

  llvm::Expected<RunSummary> Run(std::unique_ptr<distributed::Collectives>& group) {
    if (llvm::Error error = OpenStore()) return error;
    if (llvm::Error error = CheckModelTakesData()) return error;
    Connect(group);
    if (llvm::Error error = CheckIn()) return error;
    if (llvm::Error error = PickDevice()) return error;
    progress::Working("building the model and the data loaders");
    if (llvm::Error error = Build()) return error;
    progress::Working("restoring the training state");
    const auto restore_started = std::chrono::steady_clock::now();
    if (llvm::Error error = Restore()) return error;
    if (llvm::Error error = Shard()) return error;
    ReportResume(restore_started);
    if (llvm::Error error = CheckColumns()) return error;
    const int64_t first_step = progress_.step + 1;
    if (main_process_) {
      llvm::Expected<std::unique_ptr<RunReport>> report =
          RunReport::Open(plan_, loop_, dir_, first_step, /*resumed=*/progress_.step > 0,
                          context_.progress_tty);
      if (!report) return report.takeError();
      report_ = std::move(*report);
      if (llvm::Error error = MarkResume()) return error;
    }
    summary_.steps = loop_.steps;
    started_ = std::chrono::steady_clock::now();
    last_report_ = started_;
    for (int64_t step = first_step; step <= loop_.steps; ++step) {
      progress::Working(fmt::format("step {}", step));
      StepResult result = Step(step);
      // Every skipped step, reported or not: the scale it tried and the one it backed off to.
      if (result.skipped && report_) {
        observe::Scalars scales{{"loss_scale", result.loss_scale}, {"next_loss_scale", loss_scaler_.scale()}};
        if (llvm::Error error = report_->LogEvent(step, "overflow", {}, scales)) return error;
      }
      if (llvm::Error error = CheckpointIfDue(step, result.epoch_ended)) return error;
      if (llvm::Error error = EvaluateIfDue(step)) return error;
      if (llvm::Error error = Report(step, first_step, result)) return error;
    }
    progress::Working("saving the model");
    if (report_) {
      if (llvm::Error error = report_->Finish()) return error;
    }
    summary_.wall_seconds = Elapsed();
    if (loop_.loss_scaling.enabled) {
      summary_.loss_scale = loss_scaler_.scale();
      summary_.skipped_steps = progress_.skipped_steps;
    }
    if (llvm::Error error = Finish()) return error;
    return summary_;
  }

 private:
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

  // The checkpoint store, if the plan saves checkpoints; `--resume` needs one.
  llvm::Error OpenStore() {
    if (steps_.checkpoint == nullptr) {
      if (context_.resume.empty()) return llvm::Error::success();
      return llvm::make_error<ArgumentMismatch>(
          "`--resume` needs a plan that saves checkpoints; set `train.checkpoint_every` or "
          "`train.checkpoint_every_epoch`");
    }
    llvm::Expected<checkpoint::CheckpointStore> store =
        OpenCheckpointStore(*steps_.checkpoint, dir_, context_.resume);
    if (!store) return store.takeError();
    store_.emplace(std::move(*store));
    return llvm::Error::success();
  }

  // Rank 0, before any process group forms: a TorchScript model fed one tensor runs one forward
  // pass on the data's row width, so a model that does not take the data fails in moments,
  // naming the cause, rather than after every rank has loaded and met (the other ranks are
  // stopped by the launcher while they wait at the rendezvous).
  llvm::Error CheckModelTakesData() const {
    const auto* scripted = std::get_if<plan::TorchScript>(&steps_.model.model);
    if (context_.rank != 0 || scripted == nullptr || !scripted->inputs.empty()) return llvm::Error::success();
    std::optional<int64_t> features = PeekFeatureWidth(steps_.data.dataset);
    if (!features) return llvm::Error::success();
    progress::Working("checking the model against the data");
    std::string error = CheckScriptedModelTakes(*scripted, *features);
    if (error.empty()) return llvm::Error::success();
    return llvm::make_error<ArgumentMismatch>(error);
  }

  // The default process group, on the plan's backend: a spec asking for NCCL on a build without
  // it fails saying so rather than train on something else. `group` outlives this run (see
  // RunWorker).
  void Connect(std::unique_ptr<distributed::Collectives>& group) {
    group = ConnectGroup(steps_.init, context_);
    collectives_ = group.get();
    ops_.emplace(*collectives_);
  }

  // Where this rank's model computes: on a `cuda` plan its GPU, the process group's (NCCL) or,
  // with one process and no group, the one of its local rank; else the CPU. The launcher starts
  // no worker for another accelerator (it rehearses such a plan on the CPU, rewriting it).
  llvm::Error PickDevice() {
    switch (steps_.init.device) {
      case plan::Device::cpu:
        device_ = c10::Device(c10::kCPU);
        return llvm::Error::success();
      case plan::Device::cuda:
        if (collectives_->distributed() && !collectives_->device().is_cuda()) {
          // The data operations move tensors where the group communicates: a GPU model cannot
          // share them with a CPU group.
          return Fail(fmt::format("a cuda plan runs its process group on NCCL, not `{}`; use backend nccl, "
                                  "or rehearse on the CPU with `accelrun PLAN --device cpu`",
                                  plan::EnumName(steps_.init.backend)));
        }
        device_ = collectives_->distributed()
                      ? collectives_->device()
                      : distributed::UseCudaDevice(context_.rank, context_.local_rank);
        return llvm::Error::success();
      case plan::Device::xpu:
      case plan::Device::npu:
      case plan::Device::mlu:
      case plan::Device::sdaa:
      case plan::Device::musa:
      case plan::Device::hpu:
      case plan::Device::neuron:
        break;
    }
    return Fail(fmt::format("this worker computes on the CPU or CUDA devices, not `{}`; rehearse the plan "
                            "with `accelrun PLAN --device cpu`",
                            plan::EnumName(steps_.init.device)));
  }

  // Every rank must run this plan. A rank started with another one, or a rank of another job
  // that reached this rendezvous, is refused on every rank, by name, before anything is built.
  llvm::Error CheckIn() {
    // In a list, so that one process (where gather_object returns its input) reads the same.
    distributed::Value hashes =
        ops_->GatherObject(distributed::Value::List({distributed::Value::String(plan_.hash)}));
    std::vector<std::string> others;
    for (size_t r = 0; r < hashes.items().size(); ++r) {
      const std::string& hash = hashes.items()[r].as_string();
      if (hash != plan_.hash) others.push_back(fmt::format("rank {} runs plan {}", r, hash.substr(0, 19)));
    }
    if (others.empty()) return llvm::Error::success();
    return Fail(fmt::format("this rank runs plan {}, but {}: start every rank of a job with the same plan",
                            plan_.hash.substr(0, 19), fmt::join(others, ", ")));
  }

  // set_seed, the model and optimizer (from rank 0's weights, as DDP starts), the data loaders
  // (after find_executable_batch_size), the reducer, accumulation and the wrapped scheduler.
  llvm::Error Build() {
    if (llvm::Error error = CheckRuntimeLimits()) return error;
    if (llvm::Error error = FormMesh()) return error;
    if (steps_.seed != nullptr) distributed::SetSeed(static_cast<uint64_t>(steps_.seed->seed));
    TensorParallelism tp;
    if (mesh_.tensor_parallel > 1)
      tp = {mesh_groups_.tensor_parallel.get(), mesh_.tp_rank, mesh_.tensor_parallel};
    // cpu_ram_efficient_loading: only rank 0 builds the weights' values; the other ranks build
    // their shapes and receive rank 0's, as their shards from the engine (Shard) where it
    // takes them, else whole here. Not with tensor parallelism: its slices are cut from values.
    // On a GPU every rank builds the values on its CPU and moves them to its device.
    rank_zero_loads_ = loop_.sharding.cpu_ram_efficient_loading && mesh_.tensor_parallel == 1 &&
                       context_.world_size > 1 && device_.is_cpu();
    // A batch-size search runs steps before the engine exists.
    engine_takes_weights_ = rank_zero_loads_ && loop_.sharding.stage > 0 && !loop_.find_executable_batch_size;
    shapes_only_ = rank_zero_loads_ && context_.rank != 0;
    try {
      trainer_ = MakeTrainer(steps_.model, loop_, tp,
                             shapes_only_ ? InitialWeights::kShapesOnly : InitialWeights::kValues, device_);
    } catch (const std::invalid_argument& error) {
      if (mesh_.tensor_parallel == 1) throw;
      return Fail(error.what());
    }
    named_ = trainer_->NamedParameters();
    if (main_process_ && loop_.sharding.activation_checkpointing)
      fmt::print("accelrun: {}\n", PlanRecomputation(*trainer_, loop_.sharding).summary);
    if (main_process_ && rank_zero_loads_) {
      fmt::print(
          "accelrun: cpu_ram_efficient_loading: only rank 0 holds the model's values; the other ranks "
          "built its shapes and receive {}\n",
          !engine_takes_weights_      ? "rank 0's weights whole (every rank keeps them whole)"
          : loop_.sharding.stage >= 3 ? "only their shards of rank 0's weights"
                                      : "rank 0's weights whole, unit by unit (stages 1-2 keep them whole)");
      std::fflush(stdout);
    }
    // Rank 0's weights, as DDP starts; with tensor parallelism each slice from the first
    // data-parallel rank holding it.
    if (!engine_takes_weights_) {
      std::vector<distributed::Value> weights;
      for (const auto& [name, tensor] : named_) {
        AllocateBytes(tensor);
        weights.push_back(distributed::Value::Tensor(tensor.detach()));
      }
      dp_ops_->Broadcast(distributed::Value::List(std::move(weights)), 0);
      shapes_only_ = false;
    }
    for (const auto& [name, tensor] : trainer_->NamedBuffers()) {
      AllocateBytes(tensor);
      buffers_.push_back(tensor);
    }
    if (rank_zero_loads_ && !buffers_.empty()) collectives_->Broadcast(buffers_, 0);
    if (mesh_.tensor_parallel > 1) {
      std::vector<int> dims = trainer_->TensorParallelDims();
      auto tensor_parallel = std::make_unique<TensorParallelTrainer>(std::move(trainer_), std::move(dims),
                                                                     *mesh_groups_.tensor_parallel);
      tp_ = tensor_parallel.get();
      trainer_ = std::move(tensor_parallel);
    }

    data_ = steps_.data;  // the batch size may still be searched for
    if (llvm::Error error = OpenData()) return error;
    const plan::DistributedDataParallelKwargs& ddp = loop_.ddp;
    reducer_ = std::make_unique<Reducer>(
        named_, ReducerOptions{ddp.bucket_cap_mb << 20, ddp.comm_hook, ddp.find_unused_parameters}, *dp_);
    if (loop_.find_executable_batch_size) {
      BatchSizeSearch found = FindExecutableBatchSize(*trainer_, *reducer_, loaders_->train.dataset(),
                                                      data_.batch_size, data_.split_batches, *collectives_);
      if (main_process_) {
        fmt::print("accelrun: batch size {} fits on every process{}\n", found.batch_size,
                   found.tried.empty() ? "" : fmt::format(" (out of memory at {})", found.tried));
        std::fflush(stdout);
      }
      if (found.batch_size != data_.batch_size) {
        data_.batch_size = found.batch_size;
        if (llvm::Error error = OpenData()) return error;
      }
    }
    ddp_ = MakeDdpSync(std::move(reducer_), named_);
    sync_ = ddp_.get();
    if (tp_ != nullptr) {
      tp_->set_sync(ddp_.get());
      sync_ = tp_;
    }
    if (llvm::Error error = ResolveLength()) return error;
    const plan::GradientAccumulationPlugin& ga = loop_.gradient_accumulation;
    accumulation_.emplace(
        GradientAccumulationSpec{ga.num_steps, ga.sync_with_dataloader, ga.sync_each_batch});
    // The schedule counts scheduler steps as Accelerate drives them: per process per optimizer
    // step unless batches are split, or per micro-batch when it is not stepped with the optimizer.
    const int64_t per_step = !loop_.step_scheduler_with_optimizer ? ga.num_steps
                             : data_.split_batches                ? 1
                                                                  : context_.world_size;
    base_lr_ = std::visit([](const auto& optimizer) { return optimizer.lr; }, loop_.optimizer);
    schedule_ = ScheduleSpec{loop_.lr_schedule,      loop_.warmup_steps * per_step,
                             loop_.steps * per_step, loop_.num_cycles,
                             loop_.warmup_curve,     per_step};
    scheduler_per_step_ = per_step;
    scheduler_.emplace(schedule_, std::vector<double>{base_lr_});
    step_policy_ = SchedulerStepPolicy{data_.split_batches, context_.world_size, ga.adjust_scheduler};
    progress_.schedule = plan::EnumName(loop_.lr_schedule);
    progress_.base_lr = base_lr_;
    progress_.schedule_steps = schedule_.total_steps;
    progress_.warmup_steps = schedule_.warmup_steps;
    // The schedule's rate at step 0 (0 with warmup); a loaded checkpoint replaces it.
    trainer_->SetLearningRate(scheduler_->learning_rates()[0]);
    sync_buffers_ = loop_.ddp.broadcast_buffers && !buffers_.empty() && context_.world_size > 1;
    return llvm::Error::success();
  }

  // The mesh of parallelism_config: this rank's place, and with tensor parallelism its
  // tensor-parallel and data-parallel groups (tensor_parallel.h). Without tensor parallelism the
  // data-parallel group is the world.
  llvm::Error FormMesh() {
    try {
      mesh_ = PlaceInMesh(context_.rank, context_.world_size, loop_.sharding,
                          static_cast<int>(steps_.init.processes_per_machine));
      mesh_groups_ = FormMeshGroups(*collectives_, mesh_);
    } catch (const std::invalid_argument& error) {
      return llvm::make_error<ArgumentMismatch>(error.what());
    }
    dp_ = mesh_groups_.data_parallel ? mesh_groups_.data_parallel.get() : collectives_;
    dp_ops_.emplace(*dp_);
    if (main_process_ && mesh_.tensor_parallel > 1) {
      fmt::print("accelrun: tensor parallel over {} ranks x data parallel over {} (shard groups of {}{})\n",
                 mesh_.tensor_parallel, mesh_.dp_size, mesh_.shard,
                 mesh_.replicate > 1 ? fmt::format(", replicated {} times", mesh_.replicate) : "");
      std::fflush(stdout);
    }
    return llvm::Error::success();
  }

  // What the runtime cannot run yet is refused before anything is built.
  // accelrun refuses a plan that breaks a runtime limit before any process starts; a worker
  // started on one by hand refuses it as the plan's fault, which a restart would not mend.
  llvm::Error CheckRuntimeLimits() const {
    std::vector<plan::RuntimeLimit> broken = plan::RuntimeLimitsBroken(plan_);
    if (broken.empty()) return llvm::Error::success();
    return llvm::make_error<ArgumentMismatch>(plan::Describe(broken.front()));
  }

  bool ShardedCheckpoints() const { return plan::WritesShardedCheckpoints(plan_); }

  // Stages 1-3: the sharded engine takes the model over once its weights and optimizer state
  // are final (rank 0's, or the checkpoint's), and replaces the reducer. From a sharded
  // checkpoint, it then reads its own ranges of them.
  llvm::Error Shard() {
    if (loop_.sharding.stage == 0) return llvm::Error::success();
    try {
      // With tensor parallelism the engine shards this rank's slices over its data-parallel
      // group, inside the tensor-parallel view.
      std::unique_ptr<Trainer> model = tp_ != nullptr ? tp_->Release() : std::move(trainer_);
      auto engine = std::make_unique<ShardedEngine>(
          std::move(model), loop_, mesh_.shard, *dp_, mesh_.tp_rank == 0,
          engine_takes_weights_ ? InitialWeights::kShapesOnly : InitialWeights::kValues);
      if (sharded_resume_) {
        ImportShardedResume(*sharded_resume_, *engine);
        sharded_resume_.reset();
      }
      engine_ = engine.get();
      if (tp_ != nullptr) {
        tp_->Adopt(std::move(engine), engine_);
        sync_ = tp_;
      } else {
        sync_ = engine_;
        trainer_ = std::move(engine);
      }
      ddp_.reset();  // the reducer's hooks go
    } catch (const std::invalid_argument& error) {
      return Fail(error.what());
    }
    return llvm::Error::success();
  }

  // `epochs` and `warmup_ratio` in optimizer steps, from the first process's batches per epoch
  // (every rank computes the same count from the shared sizes; no collective).
  llvm::Error ResolveLength() {
    if (loop_.epochs == 0 && loop_.warmup_ratio == 0) return llvm::Error::success();
    data::ShardSpec first = loaders_->train.spec();
    first.process_index = 0;
    llvm::Expected<data::EpochSharder> sharder = data::EpochSharder::Create(first);
    if (!sharder) return sharder.takeError();
    const int64_t epochs = loop_.epochs;
    loop_ = WithLengthInSteps(loop_, sharder->batches_per_epoch());
    if (main_process_ && epochs > 0) {
      fmt::print("accelrun: {} epoch{} of {} batches per process: {} optimizer steps\n", epochs,
                 epochs == 1 ? "" : "s", sharder->batches_per_epoch(), loop_.steps);
      std::fflush(stdout);
    }
    return llvm::Error::success();
  }

  // A model on named columns: every input binds and one evaluation forward on the first rows
  // returns a loss, before the first step, so a name or shape that does not fit is one clear
  // error (the same on every rank) rather than a failure inside the first collective step.
  llvm::Error CheckColumns() {
    const data::Dataset& dataset = loaders_->train.dataset();
    if (dataset.columns.empty()) return llvm::Error::success();
    int64_t rows = std::min<int64_t>(dataset.size(), std::max<int64_t>(1, loaders_->train.spec().batch_size));
    try {
      trainer_->CheckColumns(dataset.CollateRows(0, rows));
    } catch (const std::invalid_argument& error) {
      return Fail(error.what());
    }
    return llvm::Error::success();
  }

  llvm::Error OpenData() {
    llvm::Expected<DataLoaders> opened =
        OpenDataLoaders(data_, loop_.eval_samples, mesh_.dp_rank, mesh_.dp_size);
    if (!opened) return opened.takeError();
    loaders_.emplace(std::move(*opened));
    return llvm::Error::success();
  }

  // load_state for `--resume`: the model, optimizer, this rank's RNG, the scheduler and the
  // data position, so the run continues exactly where the checkpoint was taken. Collective.
  llvm::Error Restore() {
    if (context_.resume.empty()) return llvm::Error::success();
    const plan::Checkpoint& spec = *steps_.checkpoint;
    llvm::Expected<std::optional<checkpoint::VerifiedCheckpoint>> from =
        FindResumePoint(*store_, spec, dir_, context_.resume, main_process_);
    if (!from) return from.takeError();
    if (*from) {
      // A sharded run leaves a sharded checkpoint's parameters and optimizer state to its
      // engine (Shard), each rank reading its own ranges; anything else loads whole here. With
      // tensor parallelism the checkpoint's whole tensors go into the gathered view, and
      // EndFullState keeps this rank's slices of them.
      if (tp_ != nullptr) tp_->BeginFullState();
      // A whole checkpoint loads into every rank's parameters (the engine then takes rank 0's).
      if (shapes_only_) {
        for (const auto& [name, tensor] : named_) AllocateBytes(tensor);
        shapes_only_ = false;
      }
      llvm::Expected<Progress> restored = RestoreTrainingState(
          **from, *trainer_, context_.rank, context_.world_size, DataIdentitySeed(steps_.data),
          loop_.sharding.stage > 0 && tp_ == nullptr ? &sharded_resume_ : nullptr);
      if (tp_ != nullptr && restored) tp_->EndFullState();
      if (!restored) return restored.takeError();
      if (llvm::Error error = CheckProgressFitsPlan(
              *restored, {loop_.steps, loop_.gradient_accumulation.num_steps}, (*from)->path)) {
        return error;
      }
      if (restored->saved_world_size != context_.world_size) ConvertWorldSize(*restored);
      if (llvm::Error error = CheckSchedule(*restored)) return error;
      progress_ = *restored;
      progress_.schedule = plan::EnumName(loop_.lr_schedule);
      progress_.base_lr = base_lr_;
      progress_.schedule_steps = schedule_.total_steps;
      progress_.warmup_steps = schedule_.warmup_steps;
      resumed_from_ = (*from)->path;
      // A position past the epoch's end (a checkpoint `accelrun import-state` wrote counts the
      // batches from the first epoch's start) carries into the epochs after it.
      int64_t epoch = std::max<int64_t>(progress_.data_epoch, 0), position = progress_.data_position;
      if (const int64_t per_epoch = loaders_->train.batches_per_epoch(); per_epoch > 0 && position > per_epoch) {
        epoch += (position - 1) / per_epoch;
        position = (position - 1) % per_epoch + 1;
      }
      if (llvm::Error error = loaders_->train.Restore(epoch, position)) {
        return Fail("cannot resume: " + llvm::toString(std::move(error)));
      }
      // The optimizer's restored rate is the checkpoint's schedule's: under
      // `--allow-schedule-change` the next step trains at this plan's.
      scheduler_->Restore(progress_.scheduler_steps);
      trainer_->SetLearningRate(scheduler_->learning_rates()[0]);
      if (progress_.loss_scale && loop_.loss_scaling.enabled) loss_scaler_.Restore(*progress_.loss_scale);
    }
    if (WritesCheckpoints(spec, steps_.init, context_.rank)) GuardRotation(*store_, resumed_from_, progress_);
    // Each rank loaded on its own (with save_on_each_node, from its own machine's copy): all
    // must continue from rank 0's step.
    // Data operations take tensors where the group communicates (the GPU, on NCCL).
    at::Tensor step =
        at::full({1}, progress_.step, at::TensorOptions(at::kLong).device(collectives_->device()));
    int64_t agreed = ops_->Broadcast(distributed::Value::Tensor(step), 0).tensor().item<int64_t>();
    if (agreed != progress_.step) {
      return Fail(fmt::format("resumed at step {} but rank 0 resumed at step {}", progress_.step, agreed));
    }
    // Only once every rank is done reading the checkpoints.
    ops_->WaitForEveryone();
    if (*from && WritesCheckpoints(spec, steps_.init, context_.rank) && context_.resume == "auto" &&
        spec.automatic_checkpoint_naming) {
      if (llvm::Error error = SetAsideRejected(*store_)) return error;
    }
    if (main_process_ && !*from) {
      fmt::print("no checkpoint to resume from; starting at step 1\n");
      std::fflush(stdout);
    }
    return llvm::Error::success();
  }

  // Rank 0, once the engine holds its shards too: where the run resumed, and how long the
  // load took (verification, restore, and the engine's own ranges of a sharded checkpoint).
  void ReportResume(std::chrono::steady_clock::time_point started) const {
    if (!main_process_ || resumed_from_.empty()) return;
    double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started).count();
    fmt::print("resumed from {} at step {} (loaded in {:.0f} ms)\n", resumed_from_, progress_.step, ms);
    std::fflush(stdout);
  }

  // A checkpoint of another world size: the optimizer step and the data position (batches per
  // process) carry over; the scheduler's counts, which advance once per process per step
  // unless batches are split, are converted to this world's. The samples continue exactly when
  // the global batch (batch_size x processes) is the same as the saving run's.
  void ConvertWorldSize(Progress& restored) const {
    const int64_t saved = restored.saved_world_size;
    const bool per_process = scheduler_per_step_ == context_.world_size &&
                             loop_.step_scheduler_with_optimizer && !data_.split_batches;
    if (per_process) {
      auto convert = [&](int64_t& count) {
        if (count >= 0) count = count / saved * context_.world_size;
      };
      convert(restored.scheduler_steps);
      convert(restored.schedule_steps);
      convert(restored.warmup_steps);
    }
    if (main_process_) {
      fmt::print(
          stderr,
          "accelrun: warning: the checkpoint was written by {} processes, this run has {}: it continues "
          "at step {} with the same data position per process, the same samples if batch_size x "
          "processes is unchanged\n",
          saved, context_.world_size, restored.step);
      std::fflush(stderr);
    }
  }

  // A resume whose plan would give the remaining steps other learning rates than the
  // checkpoint's schedule (another `train.steps`, warmup or `lr_schedule`) is refused, unless
  // `--allow-schedule-change` lets it continue on this plan's schedule, with a warning.
  llvm::Error CheckSchedule(const Progress& saved) const {
    const std::string now(plan::EnumName(loop_.lr_schedule));
    // `constant` ignores the length and the warmup, `constant_with_warmup` the length.
    bool uses_length = now == "linear" || now == "cosine";
    bool uses_warmup = now != "constant";
    bool changed =
        saved.schedule != now ||
        (uses_length && saved.schedule_steps >= 0 && saved.schedule_steps != schedule_.total_steps) ||
        (uses_warmup && saved.warmup_steps >= 0 && saved.warmup_steps != schedule_.warmup_steps);
    if (!changed) return llvm::Error::success();
    // In optimizer steps, as the spec counts them (the scheduler counts per_step per step).
    auto describe = [this](const std::string& kind, int64_t total, int64_t warmup) {
      if (total < 0) return fmt::format("`{}`", kind);
      return fmt::format("`{}` over {} steps with {} warmup steps", kind, total / scheduler_per_step_,
                         warmup / scheduler_per_step_);
    };
    std::string difference = fmt::format("the checkpoint's learning-rate schedule is {}, this plan's is {}",
                                         describe(saved.schedule, saved.schedule_steps, saved.warmup_steps),
                                         describe(now, schedule_.total_steps, schedule_.warmup_steps));
    if (!context_.allow_schedule_change) {
      return llvm::make_error<ArgumentMismatch>(fmt::format(
          "cannot resume at step {}: {}, so every remaining step would train at another rate than either run "
          "planned; resume with the checkpoint's `train.steps`, `warmup_steps` and `lr_schedule`, or pass "
          "`--allow-schedule-change` to continue on this plan's schedule from the checkpoint's position",
          saved.step, difference));
    }
    if (main_process_) {
      fmt::print(stderr,
                 "accelrun: warning: {}; from step {} on the rates follow this plan's schedule "
                 "(`--allow-schedule-change`)\n",
                 difference, saved.step + 1);
      std::fflush(stderr);
    }
    return llvm::Error::success();
  }

  // Rank 0 of a resumed run: a `resume` marker in metrics.jsonl, and what the earlier launches
  // measured (read back from metrics.jsonl), so that metrics.json covers the whole run.
  llvm::Error MarkResume() {
    if (resumed_from_.empty()) return llvm::Error::success();
    observe::RunHistory history = observe::ReadRunHistory((dir_ / "metrics.jsonl").string(), progress_.step);
    earlier_seconds_ = history.elapsed_seconds.value_or(0);
    if (history.first_loss) {
      summary_.first_loss = *history.first_loss;
      first_loss_known_ = true;
    }
    if (history.last_loss) summary_.final_loss = *history.last_loss;
    summary_.resumed_at_step = progress_.step;
    return report_->LogEvent(progress_.step, "resume", {{"checkpoint", resumed_from_}},
                             {{"elapsed_seconds", earlier_seconds_}});
  }

  // Seconds of training in the whole run: the earlier launches' (on resume) and this one's.
  double Elapsed() const {
    return earlier_seconds_ +
           std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count();
  }

  // DDP's require_forward_param_sync: rank 0's buffers are broadcast before a forward pass only
  // when the previous one was a synced training forward (not under no_sync, not an evaluation),
  // and before the very first. The reducer's own collective, as inside DDP.
  void BroadcastBuffersIfDue(bool next) {
    if (sync_buffers_) {
      at::NoGradGuard no_grad;
      collectives_->Broadcast(buffers_, 0);
    }
    sync_buffers_ = next && loop_.ddp.broadcast_buffers && !buffers_.empty() && context_.world_size > 1;
  }

  // One optimizer step: micro-batches until the accumulation cycle syncs (num_steps of them,
  // fewer when the data runs out and sync_with_dataloader ends the cycle early), clipping, the
  // optimizer and the wrapped scheduler.
  StepResult Step(int64_t step) {
    StepResult result;
    data::DataLoader& data = loaders_->train;
    double loss_total = 0;
    int64_t micro_batches = 0;
    for (bool sync = false; !sync; ++micro_batches) {
      data::Batch batch = data.Next();
      sync = accumulation_->Begin(batch.last_in_epoch);
      result.epoch_ended = result.epoch_ended || batch.last_in_epoch;
      BroadcastBuffersIfDue(/*next=*/accumulation_->all_reduce_gradients());
      sync_->PrepareForBackward(accumulation_->all_reduce_gradients());
      // accelerator.backward divides by the accumulation steps, also in a cycle cut short; fp16
      // multiplies by the loss scale.
      const double scale = loss_scaler_.scale() / static_cast<double>(loop_.gradient_accumulation.num_steps);
      loss_total += batch.columns.empty() ? trainer_->ForwardBackward(batch.features, batch.targets, scale)
                                          : trainer_->ForwardBackward(batch.columns, scale);
      sync_->Finalize();
      // Every rank of a tensor-parallel group reads the same batch.
      samples_since_report_ += batch.size() * mesh_.dp_size;
      progress_.samples_seen += batch.size() * mesh_.dp_size;
      // Not stepped with the optimizer: the loop's scheduler.step() after every micro-batch
      // reaches the scheduler itself; the sync micro-batch's comes after the optimizer step.
      if (!loop_.step_scheduler_with_optimizer && !sync) scheduler_->Step();
    }
    if (!loop_.step_scheduler_with_optimizer) trainer_->SetLearningRate(scheduler_->learning_rates()[0]);
    // Unscaled before clipping, as accelerator.clip_grad_norm_ does; an overflow skips the
    // optimizer's and the wrapped scheduler's step.
    result.loss_scale = loss_scaler_.scale();
    result.skipped = loss_scaler_.UnscaleAndCheck(*trainer_);
    result.grad_norm = loop_.max_grad_norm > 0 ? trainer_->ClipGradNorm(loop_.max_grad_norm) : 0.0;
    trainer_->OptimizerStep(/*skip=*/result.skipped);
    loss_scaler_.Update(result.skipped);
    if (result.skipped) ++progress_.skipped_steps;
    if (loop_.step_scheduler_with_optimizer) {
      StepLikeAccelerate(*scheduler_, step_policy_, /*sync_gradients=*/true,
                         /*optimizer_step_was_skipped=*/result.skipped);
    } else {
      scheduler_->Step();
    }
    result.lr = trainer_->learning_rate();
    trainer_->SetLearningRate(scheduler_->learning_rates()[0]);
    result.loss = loss_total / static_cast<double>(micro_batches);
    progress_.step = step;
    if (loop_.loss_scaling.enabled) progress_.loss_scale = loss_scaler_.state();
    progress_.data_epoch = data.epoch();
    progress_.data_position = data.position();
    progress_.scheduler_steps = scheduler_->last_step();
    return result;
  }

  // save_state every checkpoint_every steps, after an epoch with checkpoint_every_epoch, and
  // after the last step.
  llvm::Error CheckpointIfDue(int64_t step, bool epoch_ended) {
    const plan::Checkpoint* spec = steps_.checkpoint;
    if (spec == nullptr) return llvm::Error::success();
    bool due = (spec->checkpoint_every > 0 && step % spec->checkpoint_every == 0) ||
               (spec->checkpoint_every_epoch && epoch_ended) || step == loop_.steps;
    if (!due) return llvm::Error::success();
    // What a resume from this checkpoint reads back to count the whole run's time. Written
    // before the save, so that a kill right after it still finds it; a save that never
    // completes leaves a marker that no resume reads (one resumes from an earlier step).
    if (report_) {
      if (llvm::Error error = report_->LogEvent(step, "checkpoint", {}, {{"elapsed_seconds", Elapsed()}}))
        return error;
    }
    if (ShardedCheckpoints()) {
      return SaveShardedCheckpoint(*store_, *spec, dir_, *engine_, progress_, DataIdentitySeed(steps_.data),
                                   context_.rank, *collectives_);
    }
    sync_->BeginFullState(FullState::kWeightsAndOptimizer, CheckpointReaders());
    llvm::Error saved = SaveCheckpoint(*store_, *spec, steps_.init, dir_, *trainer_, progress_,
                                       DataIdentitySeed(steps_.data), context_.rank, *collectives_);
    sync_->EndFullState();
    return saved;
  }

  // Who reads the whole state a full checkpoint gathers: only the ranks that write it, where
  // the engine can gather to them alone (the first rank of each shard group: rank 0, and with
  // hybrid sharding each machine's first, which save_on_each_node's writers are when a
  // machine holds whole shard groups). Tensor parallelism gathers its slices on every rank.
  FullStateReaders CheckpointReaders() const {
    if (tp_ != nullptr) return FullStateReaders::kEveryRank;
    const plan::InitProcessGroup& init = steps_.init;
    const bool one_writer = !steps_.checkpoint->save_on_each_node || init.num_machines == 1;
    const bool writers_lead_groups =
        loop_.sharding.hybrid && static_cast<int>(init.processes_per_machine) % mesh_.shard == 0;
    return one_writer || writers_lead_groups ? FullStateReaders::kFirstRanks : FullStateReaders::kEveryRank;
  }

  // Every eval_every steps and after the last one (eval_every 0: after the last only).
  llvm::Error EvaluateIfDue(int64_t step) {
    if (!loaders_->eval || !((loop_.eval_every > 0 && step % loop_.eval_every == 0) || step == loop_.steps))
      return llvm::Error::success();
    BroadcastBuffersIfDue(/*next=*/false);  // DDP: an evaluation forward runs without grad
    llvm::Expected<EvalResult> eval = Evaluate(*trainer_, *loaders_->eval, loop_.eval_samples, *dp_ops_);
    if (!eval) return eval.takeError();
    summary_.eval_loss = eval->loss;
    summary_.eval_accuracy = eval->accuracy;
    observe::Scalars scalars{{"eval_loss", eval->loss}};
    if (eval->accuracy >= 0) scalars.emplace_back("eval_accuracy", eval->accuracy);
    if (eval->perplexity >= 0) scalars.emplace_back("eval_perplexity", eval->perplexity);
    for (const auto& [name, value] : eval->metrics) scalars.emplace_back("eval_" + name, value);
    return report_ ? report_->LogEval(step, scalars) : llvm::Error::success();
  }

  // At the first, every log_every-th and the last step: the loss averaged over the ranks
  // (DataOps's Reduce, as accelerator.reduce), and on rank 0 the metrics and progress line.
  llvm::Error Report(int64_t step, int64_t first_step, const StepResult& result) {
    bool reported = IsReportedStep(loop_, first_step, step);
    if (!reported) {
      if (report_) report_->Update(step, result.lr, 0);
      return llvm::Error::success();
    }
    const at::TensorOptions where = at::TensorOptions(at::kFloat).device(collectives_->device());
    at::Tensor loss = at::full({1}, static_cast<float>(result.loss), where);
    double mean = ops_->Reduce(distributed::Value::Tensor(loss), "mean").tensor().item<float>();
    if (step == first_step && !first_loss_known_) summary_.first_loss = mean;
    summary_.final_loss = mean;
    if (!report_) return llvm::Error::success();
    auto now = std::chrono::steady_clock::now();
    double seconds = std::chrono::duration<double>(now - last_report_).count();
    double throughput = seconds > 0 ? samples_since_report_ / seconds : 0;
    last_report_ = now;
    samples_since_report_ = 0;
    observe::Scalars scalars{{"loss", mean},
                             {"lr", result.lr},
                             {"epoch", static_cast<double>(loaders_->train.epoch())},
                             {"samples_per_second", throughput}};
    if (loop_.max_grad_norm > 0) scalars.emplace_back("grad_norm", result.grad_norm);
    if (loop_.loss_scaling.enabled) {
      scalars.emplace_back("loss_scale", result.loss_scale);
      scalars.emplace_back("skipped_steps", static_cast<double>(progress_.skipped_steps));
    }
    if (llvm::Error error = report_->Log(step, scalars, mean)) return error;
    report_->Update(step, result.lr, throughput);
    return llvm::Error::success();
  }

  // The weights, metrics.json and this rank's record; rank 0 serves the store, so nobody
  // leaves while a peer may still need it.
  llvm::Error Finish() {
    // Stage 3: the whole weights, for the digest and model.safetensors (not the optimizer state).
    sync_->BeginFullState(FullState::kWeights);
    summary_.parameter_digest = ParameterDigest(trainer_->NamedParameters());
    summary_.model_path = (dir_ / steps_.save.model_file).string();  // rank 0: the file or index written
    if (llvm::Error error = WriteRunOutputs(plan_, steps_.save, *trainer_, summary_, dir_, context_.rank,
                                            context_.world_size)) {
      return error;
    }
    ops_->WaitForEveryone();
    return llvm::Error::success();
  }

  const plan::Plan& plan_;
  const Steps& steps_;
  // The plan's loop, its length in steps once Build has the data (WithLengthInSteps).
  plan::TrainLoop loop_;
  const WorkerContext& context_;
  const bool main_process_;
  const std::filesystem::path dir_;

  std::optional<checkpoint::CheckpointStore> store_;
  distributed::Collectives* collectives_ = nullptr;
  c10::Device device_{c10::kCPU};  // where the model computes (PickDevice)
  std::optional<distributed::DataOps> ops_;
  // The mesh (tensor_parallel.h): this rank's place, its groups, the data-parallel group that
  // DDP, the sharded engine, the loaders and evaluation work over (the world without tensor
  // parallelism), and the tensor-parallel view of the trainer (null without).
  MeshPlace mesh_;
  MeshGroups mesh_groups_;
  distributed::Collectives* dp_ = nullptr;
  std::optional<distributed::DataOps> dp_ops_;
  TensorParallelTrainer* tp_ = nullptr;
  std::unique_ptr<Trainer> trainer_;
  std::vector<std::pair<std::string, at::Tensor>> named_;
  std::vector<at::Tensor> buffers_;
  plan::BuildDataloader data_;
  std::optional<DataLoaders> loaders_;
  std::unique_ptr<Reducer> reducer_;  // until Build hands it to sync_
  std::unique_ptr<GradientSync> ddp_;
  // What the step loop synchronises gradients with: ddp_, or the sharded engine (trainer_).
  GradientSync* sync_ = nullptr;
  // Stages 1-3: the engine (trainer_), and what a sharded checkpoint left it to read.
  ShardedEngine* engine_ = nullptr;
  std::optional<ShardedResume> sharded_resume_;
  // cpu_ram_efficient_loading (Build): rank 0 alone builds the weights' values; the engine
  // takes them from it; this rank's parameters hold shapes only, until the engine or Restore
  // gives them bytes.
  bool rank_zero_loads_ = false;
  bool engine_takes_weights_ = false;
  bool shapes_only_ = false;
  std::optional<GradientAccumulation> accumulation_;
  std::optional<LrScheduler> scheduler_;
  ScheduleSpec schedule_;
  int64_t scheduler_per_step_ = 1;
  SchedulerStepPolicy step_policy_;
  double base_lr_ = 0;
  bool sync_buffers_ = false;
  Progress progress_;
  // fp16's loss scale (the plan's rule; scale 1 and never an overflow without loss scaling).
  LossScaler loss_scaler_{loop_.loss_scaling};

  std::unique_ptr<RunReport> report_;
  RunSummary summary_;
  std::chrono::steady_clock::time_point started_;
  std::chrono::steady_clock::time_point last_report_;
  // On resume: the checkpoint loaded, the training seconds before it, and whether the run's
  // first loss came from metrics.jsonl.
  std::string resumed_from_;
  double earlier_seconds_ = 0;
  bool first_loss_known_ = false;
  int64_t samples_since_report_ = 0;
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
