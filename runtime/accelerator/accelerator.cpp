// The Accelerator's implementation: the built-in executor's pieces (process group, data
// loaders, reducer, accumulation, schedule, checkpoints, run outputs) driven by a user's loop.
#include "accel/accelerator.h"

#include <ATen/ATen.h>

#include <chrono>
#include <filesystem>
#include <limits>
#include <optional>

#include <fmt/format.h>

#include "compiler/cli/arguments.h"
#include "llvm/Support/MemoryBuffer.h"
#include "runtime/accelerator/module_trainer.h"
#include "runtime/checkpoint/optimizer_format.h"
#include "runtime/distributed/operations.h"
#include "runtime/distributed/random.h"
#include "runtime/engine/reducer.h"
#include "runtime/engine/train_state.h"
#include "runtime/model/lr_schedule.h"
#include "runtime/model/optimizer_state.h"
#include "runtime/support/progress.h"
#include "runtime/train/checkpointing.h"
#include "runtime/train/data_source.h"
#include "runtime/train/gradient_accumulation.h"
#include "runtime/train/process_group.h"
#include "runtime/train/run_outputs.h"
#include "runtime/train/worker_arguments.h"

namespace accel {
namespace {

namespace checkpoint = accel::rt::checkpoint;
namespace train = accel::rt::train;
namespace distributed = accel::rt::distributed;

[[noreturn]] void Throw(int rank, const std::string& message) {
  throw Error(fmt::format("rank {}: {}", rank, message.substr(0, message.find('\n'))));
}

void Check(int rank, llvm::Error error) {
  if (error) Throw(rank, llvm::toString(std::move(error)));
}

template <typename T>
T Check(int rank, llvm::Expected<T> value) {
  if (!value) Throw(rank, llvm::toString(value.takeError()));
  return std::move(*value);
}

// The library's exception boundary: LibTorch, c10d and the runtime's errors become accel::Error
// naming this rank, as RunWorker's errors do.
template <typename Run>
auto Boundary(int rank, Run run) -> decltype(run()) {
  try {
    return run();
  } catch (const Error&) {
    throw;
  } catch (const std::exception& error) {
    Throw(rank, error.what());
  }
}

}  // namespace

struct Accelerator::Impl {
  plan::Plan plan;
  const plan::InitProcessGroup* init = nullptr;
  const plan::BuildDataloader* data = nullptr;
  const plan::TrainLoop* loop = nullptr;
  const plan::SaveModel* save = nullptr;
  const plan::Checkpoint* checkpoint = nullptr;
  train::WorkerContext context;
  std::filesystem::path dir;

  std::unique_ptr<distributed::Collectives> group;
  std::optional<distributed::DataOps> ops;
  std::optional<checkpoint::CheckpointStore> store;
  std::unique_ptr<train::Trainer> trainer;
  std::optional<train::DataLoaders> loaders;
  std::unique_ptr<train::Reducer> reducer;
  std::optional<train::GradientAccumulation> accumulation;
  std::optional<train::LrScheduler> scheduler;
  train::SchedulerStepPolicy step_policy;
  train::Progress progress;
  bool last_in_epoch = false;
  bool epoch_ended = false;     // in the current step's micro-batches
  bool checkpoint_due = false;  // after the step just taken

  // Loss bookkeeping for metrics.json: this rank's mean loss of the first and last step.
  double step_loss_total = 0;
  int64_t step_micro_batches = 0;
  double first_loss = 0;
  double final_loss = 0;
  int64_t first_step = 1;
  std::chrono::steady_clock::time_point started = std::chrono::steady_clock::now();

  int rank() const { return context.rank; }

  void Load(int argc, char** argv) {
    train::WorkerArguments arguments;
    arguments.context = context;  // the rank, from the environment, for the messages
    std::string& plan_path = arguments.plan;
    std::vector<cli::Option> table = train::WorkerArgumentOptions(arguments);
    std::string error = cli::Parse(std::vector<std::string>(argv + 1, argv + argc), table,
                                   [&plan_path](const std::string& arg) -> std::string {
                                     if (!plan_path.empty())
                                       return fmt::format("unexpected argument `{}`", arg);
                                     plan_path = arg;
                                     return "";
                                   });
    if (error.empty() && plan_path.empty()) error = "missing the plan to run: pass `<plan.json>` first";
    if (!error.empty()) Throw(rank(), error + "; run the program with `accelrun --program <program> <plan>`");
    std::optional<std::string> text;
    if (auto buffer = llvm::MemoryBuffer::getFile(plan_path)) text = (*buffer)->getBuffer().str();
    if (!text) Throw(rank(), fmt::format("cannot read the plan `{}`", plan_path));
    plan = Check(rank(), plan::FromJson(*text, plan_path));
    context = arguments.context;
    train::PlacePlan(plan, arguments);
    init = plan.Find<plan::InitProcessGroup>();
    data = plan.Find<plan::BuildDataloader>();
    loop = plan.Find<plan::TrainLoop>();
    save = plan.Find<plan::SaveModel>();
    checkpoint = plan.Find<plan::Checkpoint>();
    for (auto [found, op] : {std::pair<const void*, std::string_view>{init, plan::InitProcessGroup::kTag},
                             {data, plan::BuildDataloader::kTag},
                             {loop, plan::TrainLoop::kTag},
                             {save, plan::SaveModel::kTag}}) {
      if (found == nullptr) Throw(rank(), fmt::format("the plan has no `{}` step", op));
    }
    RefuseWhatTheLoopOwns();
    dir = std::filesystem::path(context.output_dir.empty() ? save->dir : context.output_dir);
  }

  // Settings the built-in executor applies inside its own loop, which a user's loop would have
  // to apply itself; refused rather than silently ignored.
  void RefuseWhatTheLoopOwns() {
    auto refuse = [this](const char* setting, const char* instead) {
      Throw(rank(),
            fmt::format("the Accelerator does not apply `{}` to a user's loop; {}", setting, instead));
    };
    if (loop->mixed_precision != plan::MixedPrecision::no)
      refuse("train.mixed_precision", "run the forward pass under autocast in your loop, and leave it `no`");
    if (loop->find_executable_batch_size) refuse("find_executable_batch_size", "set a batch size");
    if (!loop->step_scheduler_with_optimizer)
      refuse("step_scheduler_with_optimizer = false", "step the schedule with the optimizer");
    if (loop->sharding.stage > 0)
      refuse("train.sharding.stage > 0 (ZeRO or FSDP)", "run the plan with accelrun, or use stage 0 (DDP)");
  }

  void Connect() {
    group = train::ConnectGroup(*init, context);
    ops.emplace(*group);
    if (const auto* seed = plan.Find<plan::Seed>()) distributed::SetSeed(static_cast<uint64_t>(seed->seed));
    if (checkpoint != nullptr) {
      store.emplace(Check(rank(), train::OpenCheckpointStore(*checkpoint, dir, context.resume)));
    } else if (!context.resume.empty()) {
      Throw(rank(), "`--resume` needs a plan that saves checkpoints; set `train.checkpoint_every`");
    }
  }

  // Progress lines for the launcher's watchdog (docs/launch.md), as the built-in worker sends
  // them: a user's loop that goes silent for longer than the plan's timeout is named and stopped.
  void Prepare(torch::nn::Module& model, torch::optim::Optimizer& optimizer) {
    rt::progress::Working("preparing the model and the data loaders");
    std::string type = train::OptimizerType(optimizer);
    if (type != checkpoint::OptimizerName(loop->optimizer)) {
      Throw(rank(), fmt::format("the plan's optimizer is `{}`, Prepare got `{}`; build the plan's optimizer",
                                checkpoint::OptimizerName(loop->optimizer), type));
    }
    trainer = rt::accelerator::WrapModule(model, optimizer);
    std::vector<distributed::Value> state;
    for (const auto& [name, tensor] : train::ModelState(*trainer))
      state.push_back(distributed::Value::Tensor(tensor.detach()));
    ops->Broadcast(distributed::Value::List(std::move(state)), 0);

    loaders.emplace(
        Check(rank(), train::OpenDataLoaders(*data, loop->eval_samples, rank(), context.world_size)));
    const plan::DistributedDataParallelKwargs& ddp = loop->ddp;
    reducer = std::make_unique<train::Reducer>(
        trainer->NamedParameters(),
        train::ReducerOptions{ddp.bucket_cap_mb << 20, ddp.comm_hook, ddp.find_unused_parameters}, *group);
    const plan::GradientAccumulationPlugin& ga = loop->gradient_accumulation;
    accumulation.emplace(
        train::GradientAccumulationSpec{ga.num_steps, ga.sync_with_dataloader, ga.sync_each_batch});
    // Scheduler steps per optimizer step, as the built-in executor counts them (see worker.cpp).
    const int64_t per_step = data->split_batches ? 1 : context.world_size;
    double base_lr = std::visit([](const auto& o) { return o.lr; }, loop->optimizer);
    scheduler.emplace(
        train::ScheduleSpec{loop->lr_schedule, loop->warmup_steps * per_step, loop->steps * per_step,
                            loop->num_cycles, loop->warmup_curve, per_step},
        std::vector<double>{base_lr});
    step_policy = train::SchedulerStepPolicy{data->split_batches, context.world_size, ga.adjust_scheduler};
    progress.schedule = plan::EnumName(loop->lr_schedule);
    progress.base_lr = base_lr;
    trainer->SetLearningRate(scheduler->learning_rates()[0]);
    Restore();
    first_step = progress.step + 1;
  }

  // load_state for `--resume`, as the built-in executor's Restore phase.
  void Restore() {
    if (context.resume.empty()) return;
    std::optional<checkpoint::VerifiedCheckpoint> from =
        Check(rank(), train::FindResumePoint(*store, *checkpoint, dir, context.resume, rank() == 0));
    if (from) {
      progress = Check(rank(), train::RestoreTrainingState(*from, *trainer, rank(), context.world_size,
                                                           train::DataIdentitySeed(*data)));
      // A plan of `epochs` leaves the step count to the program's loop: then only wrapping is refused.
      const int64_t steps = loop->steps > 0 ? loop->steps : std::numeric_limits<int64_t>::max() / 2;
      Check(rank(), train::CheckProgressFitsPlan(progress, {steps, loop->gradient_accumulation.num_steps},
                                                 from->path));
      Check(rank(),
            loaders->train.Restore(std::max<int64_t>(progress.data_epoch, 0), progress.data_position));
      scheduler->Restore(progress.scheduler_steps);
    }
    train::GuardRotation(*store, from ? from->path : std::string(), progress);
    ops->WaitForEveryone();
  }

  void Backward(const at::Tensor& loss) {
    accumulation->Begin(last_in_epoch);
    reducer->PrepareForBackward(accumulation->all_reduce_gradients());
    // accelerator.backward divides by the accumulation steps, also in a cycle cut short.
    (loss / static_cast<double>(loop->gradient_accumulation.num_steps)).backward();
    if (accumulation->all_reduce_gradients()) reducer->Finalize();
    step_loss_total += loss.detach().item<double>();
    ++step_micro_batches;
  }

  bool Step() {
    checkpoint_due = false;
    if (!accumulation->sync_gradients()) return false;
    if (loop->max_grad_norm > 0) trainer->ClipGradNorm(loop->max_grad_norm);
    trainer->OptimizerStep();
    train::StepLikeAccelerate(*scheduler, step_policy, /*sync_gradients=*/true,
                              /*optimizer_step_was_skipped=*/false);
    trainer->SetLearningRate(scheduler->learning_rates()[0]);
    ++progress.step;
    progress.data_epoch = loaders->train.epoch();
    progress.data_position = loaders->train.position();
    progress.scheduler_steps = scheduler->last_step();
    checkpoint_due =
        checkpoint != nullptr &&
        ((checkpoint->checkpoint_every > 0 && progress.step % checkpoint->checkpoint_every == 0) ||
         (checkpoint->checkpoint_every_epoch && epoch_ended) || progress.step == loop->steps);
    epoch_ended = false;
    final_loss = step_loss_total / static_cast<double>(std::max<int64_t>(step_micro_batches, 1));
    if (progress.step == first_step) first_loss = final_loss;
    step_loss_total = 0;
    step_micro_batches = 0;
    rt::progress::Working(fmt::format("step {}", progress.step + 1));
    return true;
  }

  void NeedPrepared(const char* what) const {
    if (!trainer) Throw(rank(), fmt::format("{} before Prepare(model, optimizer)", what));
  }
};

Accelerator::Accelerator(int argc, char** argv) : impl_(std::make_unique<Impl>()) {
  impl_->context = train::WorkerContextFromEnvironment();
  Boundary(impl_->rank(), [&] {
    impl_->Load(argc, argv);
    impl_->Connect();
  });
}

Accelerator::~Accelerator() {
  // After a failure the group may hold queued work that would only time out: leave it to the
  // OS, as the built-in worker does.
  if (std::uncaught_exceptions() > 0) (void)impl_->group.release();
}

int Accelerator::rank() const { return impl_->context.rank; }
int Accelerator::world_size() const { return impl_->context.world_size; }
bool Accelerator::is_main_process() const { return impl_->context.rank == 0; }
int64_t Accelerator::max_steps() const { return impl_->loop->steps; }
double Accelerator::learning_rate() const {
  return std::visit([](const auto& o) { return o.lr; }, impl_->loop->optimizer);
}
int64_t Accelerator::gradient_accumulation_steps() const {
  return impl_->loop->gradient_accumulation.num_steps;
}

void Accelerator::Prepare(torch::nn::Module& model, torch::optim::Optimizer& optimizer) {
  Boundary(rank(), [&] { impl_->Prepare(model, optimizer); });
}

Batch Accelerator::NextBatch() {
  return Boundary(rank(), [&] {
    impl_->NeedPrepared("NextBatch()");
    rt::data::Batch batch = impl_->loaders->train.Next();
    impl_->last_in_epoch = batch.last_in_epoch;
    impl_->epoch_ended = impl_->epoch_ended || batch.last_in_epoch;
    impl_->progress.samples_seen += batch.features.size(0) * world_size();
    return Batch{batch.features, batch.targets, batch.epoch, batch.last_in_epoch};
  });
}

void Accelerator::Backward(const at::Tensor& loss) {
  Boundary(rank(), [&] {
    impl_->NeedPrepared("Backward()");
    impl_->Backward(loss);
  });
}

bool Accelerator::sync_gradients() const {
  return impl_->accumulation && impl_->accumulation->sync_gradients();
}

double Accelerator::ClipGradNorm(double max_norm) {
  return Boundary(rank(), [&] {
    impl_->NeedPrepared("ClipGradNorm()");
    return impl_->trainer->ClipGradNorm(max_norm);
  });
}

bool Accelerator::Step() {
  return Boundary(rank(), [&] {
    impl_->NeedPrepared("Step()");
    return impl_->Step();
  });
}

int64_t Accelerator::step() const { return impl_->progress.step; }

at::Tensor Accelerator::Gather(const at::Tensor& tensor) {
  return Boundary(rank(), [&] { return impl_->ops->Gather(distributed::Value::Tensor(tensor)).tensor(); });
}

at::Tensor Accelerator::Reduce(const at::Tensor& tensor, const std::string& reduction) {
  return Boundary(rank(),
                  [&] { return impl_->ops->Reduce(distributed::Value::Tensor(tensor), reduction).tensor(); });
}

at::Tensor Accelerator::Broadcast(const at::Tensor& tensor, int from_process) {
  return Boundary(rank(), [&] {
    return impl_->ops->Broadcast(distributed::Value::Tensor(tensor), from_process).tensor();
  });
}

at::Tensor Accelerator::PadAcrossProcesses(const at::Tensor& tensor, int64_t dim, int64_t pad_index,
                                           bool pad_first) {
  return Boundary(rank(), [&] {
    return impl_->ops->PadAcrossProcesses(distributed::Value::Tensor(tensor), dim, pad_index, pad_first)
        .tensor();
  });
}

void Accelerator::WaitForEveryone() {
  Boundary(rank(), [&] { impl_->ops->WaitForEveryone(); });
}

bool Accelerator::ShouldSaveState() const { return impl_->checkpoint_due; }

void Accelerator::SaveState() {
  Boundary(rank(), [&] {
    impl_->NeedPrepared("SaveState()");
    if (impl_->checkpoint == nullptr)
      Throw(rank(), "SaveState() needs a plan that saves checkpoints; set `train.checkpoint_every`");
    rt::progress::Working("saving a checkpoint");
    Check(rank(), train::SaveCheckpoint(*impl_->store, *impl_->checkpoint, *impl_->init, impl_->dir,
                                        *impl_->trainer, impl_->progress,
                                        train::DataIdentitySeed(*impl_->data), rank(), *impl_->group));
  });
}

void Accelerator::SaveModel() {
  Boundary(rank(), [&] {
    impl_->NeedPrepared("SaveModel()");
    rt::progress::Working("saving the model");
    Impl& s = *impl_;
    // The losses as the built-in executor reports them: means over ranks, in one collective.
    at::Tensor losses = at::tensor({static_cast<float>(s.first_loss), static_cast<float>(s.final_loss)});
    at::Tensor mean = s.ops->Reduce(distributed::Value::Tensor(losses), "mean").tensor();
    train::RunSummary summary;
    summary.steps = s.progress.step;
    summary.first_loss = mean[0].item<float>();
    summary.final_loss = mean[1].item<float>();
    summary.wall_seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - s.started).count();
    summary.parameter_digest = train::ParameterDigest(s.trainer->NamedParameters());
    Check(rank(), train::WriteRunOutputs(s.plan, *s.save, *s.trainer, summary, s.dir, rank(), world_size()));
    s.ops->WaitForEveryone();
  });
}

}  // namespace accel
