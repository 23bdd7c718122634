// The run before its first step: the checkpoint store, the process group, the device, the
// model and its engine, the data and the schedule.
#include "runtime/train/training_run.h"

#include <algorithm>
#include <cstdio>
#include <variant>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "compiler/plan/runtime_limits.h"
#include "runtime/distributed/random.h"
#include "runtime/engine/sharded_checkpoint.h"
#include "runtime/model/activation_checkpointing.h"
#include "runtime/model/weight_storage.h"
#include "runtime/support/error.h"
#include "runtime/support/progress.h"
#include "runtime/train/batch_size_search.h"
#include "runtime/train/checkpointing.h"
#include "runtime/train/process_group.h"
#include "runtime/train/training_length.h"

namespace accel::rt::train::phases {
namespace {

// What the runtime cannot run yet is refused before anything is built.
// accelrun refuses a plan that breaks a runtime limit before any process starts; a worker
// started on one by hand refuses it as the plan's fault, which a restart would not mend.
llvm::Error CheckRuntimeLimits(const RunContext& run) {
  std::vector<plan::RuntimeLimit> broken = plan::RuntimeLimitsBroken(run.plan);
  if (broken.empty()) return llvm::Error::success();
  return llvm::make_error<ArgumentMismatch>(plan::Describe(broken.front()));
}

// The mesh of parallelism_config: this rank's place, and with tensor parallelism its
// tensor-parallel and data-parallel groups (tensor_parallel.h). Without tensor parallelism the
// data-parallel group is the world.
llvm::Error FormMesh(RunContext& run) {
  try {
    run.ranks.mesh = PlaceInMesh(run.context.rank, run.context.world_size, run.loop.sharding,
                                 static_cast<int>(run.steps.init.processes_per_machine));
    run.ranks.mesh_groups = FormMeshGroups(*run.ranks.collectives, run.ranks.mesh);
  } catch (const std::invalid_argument& error) {
    return llvm::make_error<ArgumentMismatch>(error.what());
  }
  run.ranks.dp = run.ranks.mesh_groups.data_parallel ? run.ranks.mesh_groups.data_parallel.get()
                                                      : run.ranks.collectives;
  run.ranks.dp_ops.emplace(*run.ranks.dp);
  if (run.main_process && run.ranks.mesh.tensor_parallel > 1) {
    fmt::print("accelrun: tensor parallel over {} ranks x data parallel over {} (shard groups of {}{})\n",
               run.ranks.mesh.tensor_parallel, run.ranks.mesh.dp_size, run.ranks.mesh.shard,
               run.ranks.mesh.replicate > 1 ? fmt::format(", replicated {} times", run.ranks.mesh.replicate)
                                            : "");
    std::fflush(stdout);
  }
  return llvm::Error::success();
}

// `epochs` and `warmup_ratio` in optimizer steps, from the first process's batches per epoch
// (every rank computes the same count from the shared sizes; no collective).
llvm::Error ResolveLength(RunContext& run) {
  if (run.loop.epochs == 0 && run.loop.warmup_ratio == 0) return llvm::Error::success();
  data::ShardSpec first = run.data.loaders->train.spec();
  first.process_index = 0;
  llvm::Expected<data::EpochSharder> sharder = data::EpochSharder::Create(first);
  if (!sharder) return sharder.takeError();
  const int64_t epochs = run.loop.epochs;
  run.loop = WithLengthInSteps(run.loop, sharder->batches_per_epoch());
  if (run.main_process && epochs > 0) {
    fmt::print("accelrun: {} epoch{} of {} batches per process: {} optimizer steps\n", epochs,
               epochs == 1 ? "" : "s", sharder->batches_per_epoch(), run.loop.steps);
    std::fflush(stdout);
  }
  return llvm::Error::success();
}

llvm::Error OpenData(RunContext& run) {
  llvm::Expected<DataLoaders> opened =
      OpenDataLoaders(run.data.spec, run.loop.eval_samples, run.ranks.mesh.dp_rank, run.ranks.mesh.dp_size);
  if (!opened) return opened.takeError();
  run.data.loaders.emplace(std::move(*opened));
  return llvm::Error::success();
}

}  // namespace

// The checkpoint store, if the plan saves checkpoints; `--resume` needs one.
llvm::Error OpenStore(RunContext& run) {
  if (run.steps.checkpoint == nullptr) {
    if (run.context.resume.empty()) return llvm::Error::success();
    return llvm::make_error<ArgumentMismatch>(
        "`--resume` needs a plan that saves checkpoints; set `train.checkpoint_every` or "
        "`train.checkpoint_every_epoch`");
  }
  llvm::Expected<checkpoint::CheckpointStore> store =
      OpenCheckpointStore(*run.steps.checkpoint, run.dir, run.context.resume);
  if (!store) return store.takeError();
  run.ranks.store.emplace(std::move(*store));
  return llvm::Error::success();
}

// Rank 0, before any process group forms: a TorchScript model fed one tensor runs one forward
// pass on the data's row width, so a model that does not take the data fails in moments,
// naming the cause, rather than after every rank has loaded and met (the other ranks are
// stopped by the launcher while they wait at the rendezvous).
llvm::Error CheckModelTakesData(const RunContext& run) {
  const auto* scripted = std::get_if<plan::TorchScript>(&run.steps.model.model);
  if (run.context.rank != 0 || scripted == nullptr || !scripted->inputs.empty())
    return llvm::Error::success();
  std::optional<int64_t> features = PeekFeatureWidth(run.steps.data.dataset);
  if (!features) return llvm::Error::success();
  progress::Working("checking the model against the data");
  std::string error = CheckScriptedModelTakes(*scripted, *features);
  if (error.empty()) return llvm::Error::success();
  return llvm::make_error<ArgumentMismatch>(error);
}

// The default process group, on the plan's backend: a spec asking for NCCL on a build without
// it fails saying so rather than train on something else. `group` outlives this run (see
// RunWorker).
void Connect(RunContext& run, std::unique_ptr<distributed::Collectives>& group) {
  group = ConnectGroup(run.steps.init, run.context);
  run.ranks.collectives = group.get();
  run.ranks.ops.emplace(*run.ranks.collectives);
}

// Where this rank's model computes: on a `cuda` plan its GPU, the process group's (NCCL) or,
// with one process and no group, the one of its local rank; else the CPU. The launcher starts
// no worker for another accelerator (it rehearses such a plan on the CPU, rewriting it).
llvm::Error PickDevice(RunContext& run) {
  switch (run.steps.init.device) {
    case plan::Device::cpu:
      run.ranks.device = c10::Device(c10::kCPU);
      return llvm::Error::success();
    case plan::Device::cuda:
      if (run.ranks.collectives->distributed() && !run.ranks.collectives->device().is_cuda()) {
        // The data operations move tensors where the group communicates: a GPU model cannot
        // share them with a CPU group.
        return Fail(fmt::format("a cuda plan runs its process group on NCCL, not `{}`; use backend nccl, "
                                "or rehearse on the CPU with `accelrun PLAN --device cpu`",
                                plan::EnumName(run.steps.init.backend)));
      }
      run.ranks.device = run.ranks.collectives->distributed()
                             ? run.ranks.collectives->device()
                             : distributed::UseCudaDevice(run.context.rank, run.context.local_rank);
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
                          plan::EnumName(run.steps.init.device)));
}

// Every rank must run this plan. A rank started with another one, or a rank of another job
// that reached this rendezvous, is refused on every rank, by name, before anything is built.
llvm::Error CheckIn(RunContext& run) {
  // In a list, so that one process (where gather_object returns its input) reads the same.
  distributed::Value hashes =
      run.ranks.ops->GatherObject(distributed::Value::List({distributed::Value::String(run.plan.hash)}));
  std::vector<std::string> others;
  for (size_t r = 0; r < hashes.items().size(); ++r) {
    const std::string& hash = hashes.items()[r].as_string();
    if (hash != run.plan.hash) others.push_back(fmt::format("rank {} runs plan {}", r, hash.substr(0, 19)));
  }
  if (others.empty()) return llvm::Error::success();
  return Fail(fmt::format("this rank runs plan {}, but {}: start every rank of a job with the same plan",
                          run.plan.hash.substr(0, 19), fmt::join(others, ", ")));
}

// set_seed, the model and optimizer (from rank 0's weights, as DDP starts), the data loaders
// (after find_executable_batch_size), the reducer, accumulation and the wrapped scheduler.
llvm::Error Build(RunContext& run) {
  if (llvm::Error error = CheckRuntimeLimits(run)) return error;
  if (llvm::Error error = FormMesh(run)) return error;
  if (run.steps.seed != nullptr) distributed::SetSeed(static_cast<uint64_t>(run.steps.seed->seed));
  TensorParallelism tp;
  if (run.ranks.mesh.tensor_parallel > 1)
    tp = {run.ranks.mesh_groups.tensor_parallel.get(), run.ranks.mesh.tp_rank,
          run.ranks.mesh.tensor_parallel};
  // cpu_ram_efficient_loading: only rank 0 builds the weights' values; the other ranks build
  // their shapes and receive rank 0's, as their shards from the engine (Shard) where it
  // takes them, else whole here. Not with tensor parallelism: its slices are cut from values.
  // On a GPU every rank builds the values on its CPU and moves them to its device.
  run.model.rank_zero_loads = run.loop.sharding.cpu_ram_efficient_loading &&
                              run.ranks.mesh.tensor_parallel == 1 &&
                     run.context.world_size > 1 && run.ranks.device.is_cpu();
  // A batch-size search runs steps before the engine exists.
  run.model.engine_takes_weights =
      run.model.rank_zero_loads && run.loop.sharding.stage > 0 && !run.loop.find_executable_batch_size;
  run.model.shapes_only = run.model.rank_zero_loads && run.context.rank != 0;
  try {
    run.model.trainer =
        MakeTrainer(run.steps.model, run.loop, tp,
                    run.model.shapes_only ? InitialWeights::kShapesOnly : InitialWeights::kValues,
                    run.ranks.device);
  } catch (const std::invalid_argument& error) {
    if (run.ranks.mesh.tensor_parallel == 1) throw;
    return Fail(error.what());
  }
  run.model.named = run.model.trainer->NamedParameters();
  if (run.main_process && run.loop.sharding.activation_checkpointing)
    fmt::print("accelrun: {}\n", PlanRecomputation(*run.model.trainer, run.loop.sharding).summary);
  if (run.main_process && run.model.rank_zero_loads) {
    fmt::print(
        "accelrun: cpu_ram_efficient_loading: only rank 0 holds the model's values; the other ranks "
        "built its shapes and receive {}\n",
        !run.model.engine_takes_weights ? "rank 0's weights whole (every rank keeps them whole)"
        : run.loop.sharding.stage >= 3
            ? "only their shards of rank 0's weights"
            : "rank 0's weights whole, unit by unit (stages 1-2 keep them whole)");
    std::fflush(stdout);
  }
  // Rank 0's weights, as DDP starts; with tensor parallelism each slice from the first
  // data-parallel rank holding it.
  if (!run.model.engine_takes_weights) {
    std::vector<distributed::Value> weights;
    for (const auto& [name, tensor] : run.model.named) {
      progress::StillWorking();  // a large model's bytes take long to allocate
      AllocateBytes(tensor);
      weights.push_back(distributed::Value::Tensor(tensor.detach()));
    }
    run.ranks.dp_ops->Broadcast(distributed::Value::List(std::move(weights)), 0);
    run.model.shapes_only = false;
  }
  for (const auto& [name, tensor] : run.model.trainer->NamedBuffers()) {
    AllocateBytes(tensor);
    run.model.buffers.push_back(tensor);
  }
  if (run.model.rank_zero_loads && !run.model.buffers.empty())
    run.ranks.collectives->Broadcast(run.model.buffers, 0);
  if (run.ranks.mesh.tensor_parallel > 1) {
    std::vector<int> dims = run.model.trainer->TensorParallelDims();
    auto tensor_parallel = std::make_unique<TensorParallelTrainer>(
        std::move(run.model.trainer), std::move(dims), *run.ranks.mesh_groups.tensor_parallel);
    run.model.tp = tensor_parallel.get();
    run.model.trainer = std::move(tensor_parallel);
  }

  run.data.spec = run.steps.data;  // the batch size may still be searched for
  if (llvm::Error error = OpenData(run)) return error;
  const plan::DistributedDataParallelKwargs& ddp = run.loop.ddp;
  run.model.reducer = std::make_unique<Reducer>(
      run.model.named, ReducerOptions{ddp.bucket_cap_mb << 20, ddp.comm_hook, ddp.find_unused_parameters},
      *run.ranks.dp);
  if (run.loop.find_executable_batch_size) {
    BatchSizeSearch found = FindExecutableBatchSize(
        *run.model.trainer, *run.model.reducer, run.data.loaders->train.dataset(), run.data.spec.batch_size,
        run.data.spec.split_batches, *run.ranks.collectives);
    if (run.main_process) {
      fmt::print("accelrun: batch size {} fits on every process{}\n", found.batch_size,
                 found.tried.empty() ? "" : fmt::format(" (out of memory at {})", found.tried));
      std::fflush(stdout);
    }
    if (found.batch_size != run.data.spec.batch_size) {
      run.data.spec.batch_size = found.batch_size;
      if (llvm::Error error = OpenData(run)) return error;
    }
  }
  run.model.ddp = MakeDdpSync(std::move(run.model.reducer), run.model.named);
  run.model.sync = run.model.ddp.get();
  if (run.model.tp != nullptr) {
    run.model.tp->set_sync(run.model.ddp.get());
    run.model.sync = run.model.tp;
  }
  if (llvm::Error error = ResolveLength(run)) return error;
  const plan::GradientAccumulationPlugin& ga = run.loop.gradient_accumulation;
  run.schedule.accumulation.emplace(
      GradientAccumulationSpec{ga.num_steps, ga.sync_with_dataloader, ga.sync_each_batch});
  // The schedule counts scheduler steps as Accelerate drives them: per process per optimizer
  // step unless batches are split, or per micro-batch when it is not stepped with the optimizer.
  const int64_t per_step = !run.loop.step_scheduler_with_optimizer ? ga.num_steps
                           : run.data.spec.split_batches              ? 1
                                                                      : run.context.world_size;
  run.schedule.base_lr = std::visit([](const auto& optimizer) { return optimizer.lr; }, run.loop.optimizer);
  run.schedule.spec = ScheduleSpec{run.loop.lr_schedule,      run.loop.warmup_steps * per_step,
                                   run.loop.steps * per_step, run.loop.num_cycles,
                                   run.loop.warmup_curve,     per_step};
  run.schedule.per_step = per_step;
  run.schedule.scheduler.emplace(run.schedule.spec, std::vector<double>{run.schedule.base_lr});
  run.schedule.step_policy =
      SchedulerStepPolicy{run.data.spec.split_batches, run.context.world_size, ga.adjust_scheduler};
  run.progress.schedule = plan::EnumName(run.loop.lr_schedule);
  run.progress.base_lr = run.schedule.base_lr;
  run.progress.schedule_steps = run.schedule.spec.total_steps;
  run.progress.warmup_steps = run.schedule.spec.warmup_steps;
  // The schedule's rate at step 0 (0 with warmup); a loaded checkpoint replaces it.
  run.model.trainer->SetLearningRate(run.schedule.scheduler->learning_rates()[0]);
  run.model.sync_buffers =
      run.loop.ddp.broadcast_buffers && !run.model.buffers.empty() && run.context.world_size > 1;
  return llvm::Error::success();
}

// Stages 1-3: the sharded engine takes the model over once its weights and optimizer state
// are final (rank 0's, or the checkpoint's), and replaces the reducer. From a sharded
// checkpoint, it then reads its own ranges of them.
llvm::Error Shard(RunContext& run) {
  if (run.loop.sharding.stage == 0) return llvm::Error::success();
  try {
    // With tensor parallelism the engine shards this rank's slices over its data-parallel
    // group, inside the tensor-parallel view.
    std::unique_ptr<Trainer> model =
        run.model.tp != nullptr ? run.model.tp->Release() : std::move(run.model.trainer);
    auto engine = std::make_unique<ShardedEngine>(
        std::move(model), run.loop, run.ranks.mesh.shard, *run.ranks.dp, run.ranks.mesh.tp_rank == 0,
        run.model.engine_takes_weights ? InitialWeights::kShapesOnly : InitialWeights::kValues);
    if (run.model.sharded_resume) {
      ImportShardedResume(*run.model.sharded_resume, *engine);
      run.model.sharded_resume.reset();
    }
    run.model.engine = engine.get();
    if (run.model.tp != nullptr) {
      run.model.tp->Adopt(std::move(engine), run.model.engine);
      run.model.sync = run.model.tp;
    } else {
      run.model.sync = run.model.engine;
      run.model.trainer = std::move(engine);
    }
    run.model.ddp.reset();  // the reducer's hooks go
  } catch (const std::invalid_argument& error) {
    return Fail(error.what());
  }
  return llvm::Error::success();
}

// A model on named columns: every input binds and one evaluation forward on the first rows
// returns a loss, before the first step, so a name or shape that does not fit is one clear
// error (the same on every rank) rather than a failure inside the first collective step.
llvm::Error CheckColumns(RunContext& run) {
  const data::Dataset& dataset = run.data.loaders->train.dataset();
  if (dataset.columns.empty()) return llvm::Error::success();
  int64_t rows =
      std::min<int64_t>(dataset.size(), std::max<int64_t>(1, run.data.loaders->train.spec().batch_size));
  try {
    run.model.trainer->CheckColumns(dataset.CollateRows(0, rows));
  } catch (const std::invalid_argument& error) {
    return Fail(error.what());
  }
  return llvm::Error::success();
}

}  // namespace accel::rt::train::phases
