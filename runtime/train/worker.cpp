#include "runtime/train/worker.h"

#include <ATen/ATen.h>

#include <chrono>
#include <filesystem>
#include <optional>

#include <fmt/format.h>

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/SHA256.h"
#include "runtime/checkpoint/atomic_file.h"
#include "runtime/checkpoint/checkpoint_store.h"
#include "runtime/checkpoint/safetensors.h"
#include "runtime/distributed/collectives.h"
#include "runtime/support/blas.h"
#include "runtime/train/batch_size_search.h"
#include "runtime/train/data_source.h"
#include "runtime/train/gradient_accumulation.h"
#include "runtime/train/lr_schedule.h"
#include "runtime/train/reducer.h"
#include "runtime/train/run_report.h"
#include "runtime/train/train_state.h"
#include "runtime/train/trainer.h"

namespace accel::rt::train {
namespace {

struct EvalResult {
  double loss = 0;
  double accuracy = -1;  // -1 without class labels
};

// Accelerate's evaluation loop with gather_for_metrics: every rank evaluates its batches of the
// held-out rows, the per-sample results are gathered batch by batch (rank order within a batch
// is the loader's order), and the duplicates even_batches appended at the end are dropped, so
// every held-out sample counts exactly once. Collective; every rank gets the same result.
EvalResult Evaluate(Trainer& trainer, data::DataLoader& loader, int64_t samples,
                    distributed::Collectives& collectives) {
  if (llvm::Error error = loader.Restore(0, 0)) throw std::runtime_error(llvm::toString(std::move(error)));
  std::vector<at::Tensor> gathered;
  bool classes = false;
  for (int64_t i = 0; i < loader.batches_per_epoch(); ++i) {
    data::Batch batch = loader.Next();
    Evaluation local = trainer.Evaluate(batch.features, batch.targets);
    classes = local.correct.defined();
    // One all-gather per batch carries both columns: [loss, correct] per sample.
    at::Tensor both =
        at::stack({local.losses, classes ? local.correct : at::zeros_like(local.losses)}, 1).contiguous();
    gathered.push_back(at::empty({collectives.world_size() * both.size(0), 2}, both.options()));
    collectives.AllGather(both, gathered.back());
  }
  at::Tensor all = at::cat(gathered).narrow(0, 0, samples).to(at::kDouble);
  EvalResult result;
  result.loss = all.select(1, 0).mean().item<double>();
  if (classes) result.accuracy = all.select(1, 1).mean().item<double>();
  return result;
}

llvm::Error Fail(const std::string& message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), "%s", message.c_str());
}

std::string_view TensorBytes(const at::Tensor& tensor) {
  return std::string_view(static_cast<const char*>(tensor.data_ptr()),
                          tensor.numel() * tensor.element_size());
}

std::string Digest(const std::vector<std::pair<std::string, at::Tensor>>& named) {
  std::vector<std::pair<std::string, at::Tensor>> sorted = named;
  std::sort(sorted.begin(), sorted.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  llvm::SHA256 sha;
  for (const auto& [name, tensor] : sorted) {
    sha.update(llvm::StringRef(name));
    at::Tensor contiguous = tensor.contiguous();
    std::string_view bytes = TensorBytes(contiguous);
    sha.update(llvm::StringRef(bytes.data(), bytes.size()));
  }
  return "sha256:" + llvm::toHex(sha.final(), /*LowerCase=*/true);
}

llvm::Error WriteJson(const std::string& path, llvm::json::Value value) {
  std::string text;
  llvm::raw_string_ostream stream(text);
  stream << llvm::formatv("{0:2}", value) << "\n";
  stream.flush();
  return checkpoint::WriteFileAtomically(path, {text});
}

template <typename T>
const T& Require(const plan::Plan& plan, const char* op) {
  const T* step = plan.Find<T>();
  if (step == nullptr) throw std::invalid_argument(fmt::format("the plan has no `{}` step", op));
  return *step;
}

// The checkpoint store of a `checkpoint` step: its project dir, or else the run's output dir.
checkpoint::CheckpointStore OpenStore(const plan::Checkpoint& spec, const std::filesystem::path& output_dir) {
  checkpoint::ProjectOptions options;
  options.project_dir = spec.project_dir.empty() ? output_dir.string() : spec.project_dir;
  options.automatic_checkpoint_naming = spec.automatic_checkpoint_naming;
  if (spec.total_limit > 0) options.total_limit = static_cast<uint64_t>(spec.total_limit);
  options.iteration = static_cast<uint64_t>(spec.iteration);
  llvm::Expected<checkpoint::CheckpointStore> store = checkpoint::CheckpointStore::Open(std::move(options));
  if (!store) throw std::runtime_error(llvm::toString(store.takeError()));
  return std::move(*store);
}

// Without automatic naming every save replaces this one folder.
std::string ManualCheckpointDir(const plan::Checkpoint& spec, const std::filesystem::path& output_dir) {
  return ((spec.project_dir.empty() ? output_dir : std::filesystem::path(spec.project_dir)) / "checkpoint")
      .string();
}

// The checkpoint `--resume` asks for, verified; nullopt when `auto` finds none (a fresh run).
// A checkpoint that exists but does not verify is an error, never a silent fresh start.
std::optional<checkpoint::VerifiedCheckpoint> FindResumePoint(checkpoint::CheckpointStore& store,
                                                              const plan::Checkpoint& spec,
                                                              const std::filesystem::path& output_dir,
                                                              const std::string& resume, bool report) {
  if (resume == "auto") {
    bool any = spec.automatic_checkpoint_naming ? !checkpoint::ListCheckpoints(store.checkpoints_dir()).empty()
                                     : std::filesystem::exists(ManualCheckpointDir(spec, output_dir));
    if (!any) return std::nullopt;
  }
  llvm::Expected<checkpoint::VerifiedCheckpoint> loaded =
      resume != "auto"        ? store.Load(resume)
      : spec.automatic_checkpoint_naming ? store.LoadLatest()
                              : store.Load(ManualCheckpointDir(spec, output_dir));
  if (!loaded) throw std::runtime_error("cannot resume: " + llvm::toString(loaded.takeError()));
  if (report) {
    for (const std::string& warning : loaded->warnings)
      fmt::print(stderr, "accelrun: warning: {}\n", warning);
  }
  return std::move(*loaded);
}

// After an automatic resume fell back past newer checkpoints that did not verify, their
// numbers would collide with the resumed run's next saves (the store never overwrites a
// checkpoint): they are renamed `checkpoint_N.rejected`, kept for inspection, no longer loaded.
void SetAsideRejected(const checkpoint::CheckpointStore& store) {
  for (const auto& [number, path] : checkpoint::ListCheckpoints(store.checkpoints_dir())) {
    if (number < store.iteration()) continue;
    // A number can be rejected more than once (the run died again before replacing it).
    std::string aside = path + ".rejected";
    for (int copy = 1; std::filesystem::exists(aside); ++copy)
      aside = fmt::format("{}.rejected.{}", path, copy);
    std::error_code ec;
    std::filesystem::rename(path, aside, ec);
    if (ec) {
      throw std::runtime_error(
          fmt::format("cannot set aside {}, which did not verify: {}", path, ec.message()));
    }
    fmt::print(stderr, "accelrun: warning: renamed {} to {}: it did not verify\n", path, aside);
  }
}

// save_state at a trigger point. Collective: every rank's RNG state travels to the writers
// (rank 0, or each machine's local rank 0 with save_on_each_node), which save while the others
// wait at a barrier.
void SaveCheckpoint(checkpoint::CheckpointStore& store, const plan::Checkpoint& spec,
                    const plan::InitProcessGroup& init, const std::filesystem::path& output_dir,
                    const Trainer& trainer, const Progress& progress, int64_t data_seed,
                    const WorkerContext& context, distributed::Collectives& collectives) {
  at::Tensor mine = CaptureRngState();
  // One int32 row per rank, zeros elsewhere: the sum is every rank's bytes, exactly.
  at::Tensor rows = at::zeros({context.world_size, mine.numel()}, at::kInt);
  rows[context.rank].copy_(mine);
  std::vector<at::Tensor> gathered{rows};
  collectives.AllReduceSum(gathered);
  bool writer = spec.save_on_each_node ? context.rank % init.processes_per_machine == 0 : context.rank == 0;
  if (writer) {
    auto started = std::chrono::steady_clock::now();
    std::vector<at::Tensor> rng_states;
    for (int rank = 0; rank < context.world_size; ++rank)
      rng_states.push_back(rows[rank].to(at::kByte).contiguous());
    llvm::Expected<std::unique_ptr<StateFiles>> files =
        EncodeTrainingState(trainer, progress, rng_states, data_seed);
    if (!files) throw std::runtime_error(llvm::toString(files.takeError()));
    llvm::Expected<checkpoint::SaveResult> saved =
        spec.automatic_checkpoint_naming ? store.Save((*files)->files())
                              : store.SaveTo(ManualCheckpointDir(spec, output_dir), (*files)->files());
    if (!saved) throw std::runtime_error(llvm::toString(saved.takeError()));
    for (const std::string& warning : saved->warnings) fmt::print(stderr, "accelrun: warning: {}\n", warning);
    if (context.rank == 0) {
      double ms =
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started).count();
      fmt::print("checkpoint {} saved at step {} ({:.0f} ms{})\n", saved->path, progress.step, ms,
                 saved->removed.empty() ? "" : fmt::format(", removed {}", fmt::join(saved->removed, ", ")));
      std::fflush(stdout);
    }
  }
  collectives.Barrier();
}

// `group` receives the process group as soon as it exists, so that RunWorker can keep it alive
// past a failure (see there).
RunSummary Run(const plan::Plan& plan, const WorkerContext& context,
               std::unique_ptr<distributed::Collectives>& group) {
  const auto& init = Require<plan::InitProcessGroup>(plan, "init_process_group");
  const auto& model_spec = Require<plan::BuildModel>(plan, "build_model");
  const auto& data_spec = Require<plan::BuildDataloader>(plan, "build_dataloader");
  const auto& loop = Require<plan::TrainLoop>(plan, "train");
  const auto& save = Require<plan::SaveModel>(plan, "save_model");
  const plan::Checkpoint* checkpointing = plan.Find<plan::Checkpoint>();
  bool main_process = context.rank == 0;
  std::filesystem::path dir = context.output_dir.empty() ? save.dir : context.output_dir;
  if (!context.resume.empty() && checkpointing == nullptr) {
    throw std::invalid_argument(
        "`--resume` needs a plan that saves checkpoints; set `train.checkpoint_every` or "
        "`train.checkpoint_every_epoch`");
  }
  std::optional<checkpoint::CheckpointStore> store;
  if (checkpointing != nullptr) store.emplace(OpenStore(*checkpointing, dir));
  if (store && context.resume.empty() && checkpointing->automatic_checkpoint_naming) {
    // The store would refuse the first save anyway (it never overwrites a checkpoint): say so
    // before any step is spent.
    for (const auto& [number, path] : checkpoint::ListCheckpoints(store->checkpoints_dir())) {
      if (number >= store->iteration()) {
        throw std::invalid_argument(fmt::format(
            "{} exists from an earlier run; pass `--resume auto` to continue it, or choose another "
            "`project_config.project_dir`",
            path));
      }
    }
  }

  // The plan's backend, not always Gloo: a spec asking for NCCL on a build without it must
  // fail saying so rather than train on something else.
  group = context.world_size > 1
              ? distributed::Connect(std::string(plan::EnumName(init.backend)),
                              {context.rank, context.world_size, context.master_addr, context.master_port,
                               std::chrono::milliseconds(init.timeout)},
                              context.local_rank)
              : distributed::MakeSingleProcess();
  distributed::Collectives* collectives = group.get();

  if (const plan::Seed* seed = plan.Find<plan::Seed>()) at::manual_seed(static_cast<uint64_t>(seed->seed));
  std::unique_ptr<Trainer> trainer = MakeTrainer(model_spec, loop);
  std::vector<std::pair<std::string, at::Tensor>> named = trainer->NamedParameters();
  std::vector<at::Tensor> parameters;
  for (const auto& [name, tensor] : named) parameters.push_back(tensor);
  {
    // DDP starts from rank 0's weights, whatever each rank initialized.
    at::NoGradGuard no_grad;
    std::vector<at::Tensor> data;
    for (const at::Tensor& p : parameters) data.push_back(p.detach());
    collectives->Broadcast(data, 0);
  }

  plan::BuildDataloader data_run = data_spec;  // the batch size may still be searched for
  auto open_data = [&] {
    llvm::Expected<DataLoaders> opened =
        OpenDataLoaders(data_run, loop.eval_samples, context.rank, context.world_size);
    if (!opened) throw std::invalid_argument(llvm::toString(opened.takeError()));
    return std::move(*opened);
  };
  DataLoaders loaders = open_data();
  const int64_t data_identity = DataIdentitySeed(data_spec);
  std::vector<at::Tensor> buffers;
  for (const auto& [name, tensor] : trainer->NamedBuffers()) buffers.push_back(tensor);
  Reducer reducer(named, {loop.ddp.bucket_cap_mb << 20, loop.ddp.comm_hook, loop.ddp.find_unused_parameters},
                  *collectives);
  if (loop.find_executable_batch_size) {
    BatchSizeSearch found =
        FindExecutableBatchSize(*trainer, reducer, loaders.train.dataset(), data_run.batch_size,
                                data_run.split_batches, *collectives);
    if (main_process) {
      fmt::print("accelrun: batch size {} fits on every process{}\n", found.batch_size,
                 found.tried.empty() ? "" : fmt::format(" (out of memory at {})", found.tried));
      std::fflush(stdout);
    }
    if (found.batch_size != data_run.batch_size) {
      data_run.batch_size = found.batch_size;
      loaders = open_data();
    }
  }
  data::DataLoader& data = loaders.train;
  GradientAccumulation accumulation(
      {loop.gradient_accumulation.num_steps, loop.gradient_accumulation.sync_with_dataloader,
       loop.gradient_accumulation.sync_each_batch});
  // The schedule counts scheduler steps as Accelerate drives them: per process per optimizer
  // step unless batches are split, or per micro-batch when it is not stepped with the optimizer.
  const int64_t scheduler_steps_per_step = !loop.step_scheduler_with_optimizer ? loop.gradient_accumulation.num_steps
                                           : data_spec.split_batches           ? 1
                                                                               : context.world_size;
  const double base_lr = std::visit([](const auto& optimizer) { return optimizer.lr; }, loop.optimizer);
  LrScheduler scheduler({loop.lr_schedule, loop.warmup_steps * scheduler_steps_per_step,
                         loop.steps * scheduler_steps_per_step, loop.num_cycles},
                        {base_lr});
  const SchedulerStepPolicy step_policy{data_spec.split_batches, context.world_size, loop.gradient_accumulation.adjust_scheduler};
  at::Tensor loss_sum = at::zeros({1}, at::kFloat);

  // load_state: the model, optimizer, this rank's RNG, the scheduler and the data position, so
  // that the run continues exactly where the checkpoint was taken, with its step numbering.
  Progress progress;
  progress.schedule = plan::EnumName(loop.lr_schedule);
  progress.base_lr = base_lr;
  // The schedule's rate at step 0 (0 with warmup); a loaded checkpoint replaces it with the
  // rate its next step uses.
  trainer->SetLearningRate(scheduler.learning_rates()[0]);
  if (!context.resume.empty()) {
    std::optional<checkpoint::VerifiedCheckpoint> from =
        FindResumePoint(*store, *checkpointing, dir, context.resume, main_process);
    if (from) {
      llvm::Expected<Progress> restored =
          RestoreTrainingState(*from, *trainer, context.rank, context.world_size, data_identity);
      if (!restored) throw std::runtime_error(llvm::toString(restored.takeError()));
      progress = *restored;
      progress.schedule = plan::EnumName(loop.lr_schedule);
      progress.base_lr = base_lr;
      if (llvm::Error error = data.Restore(std::max<int64_t>(progress.data_epoch, 0), progress.data_position))
        throw std::runtime_error("cannot resume: " + llvm::toString(std::move(error)));
      scheduler.set_last_step(progress.scheduler_steps);
    }
    // Each rank loaded on its own (with save_on_each_node, from its own machine's copy): all
    // must continue from the same step.
    at::Tensor agreed = at::full({1}, progress.step, at::kLong);
    std::vector<at::Tensor> broadcast{agreed};
    collectives->Broadcast(broadcast, 0);
    if (agreed.item<int64_t>() != progress.step) {
      throw std::runtime_error(fmt::format("resumed at step {} but rank 0 resumed at step {}", progress.step,
                                           agreed.item<int64_t>()));
    }
    bool writer =
        checkpointing->save_on_each_node ? context.rank % init.processes_per_machine == 0 : main_process;
    // Only once every rank is done reading the checkpoints.
    collectives->Barrier();
    if (from && writer && context.resume == "auto" && checkpointing->automatic_checkpoint_naming)
      SetAsideRejected(*store);
    if (main_process) {
      if (from) {
        fmt::print("resumed from {} at step {}\n", from->path, progress.step);
      } else {
        fmt::print("no checkpoint to resume from; starting at step 1\n");
      }
      std::fflush(stdout);
    }
  }

  RunSummary summary;
  summary.steps = loop.steps;
  const int64_t first_step = progress.step + 1;
  std::optional<RunReport> report;
  if (main_process) report.emplace(plan, loop, dir, first_step, /*resumed=*/progress.step > 0);
  auto started = std::chrono::steady_clock::now();
  auto last_report = started;
  int64_t samples_since_report = 0;
  // DDP's require_forward_param_sync: rank 0's buffers are broadcast before a forward pass
  // only when the previous one was a synced training forward (not under no_sync, not an
  // evaluation), and before the very first.
  bool sync_buffers = loop.ddp.broadcast_buffers && !buffers.empty() && context.world_size > 1;
  auto broadcast_buffers_if_due = [&](bool next) {
    if (sync_buffers) {
      at::NoGradGuard no_grad;
      collectives->Broadcast(buffers, 0);
    }
    sync_buffers = next && loop.ddp.broadcast_buffers && !buffers.empty() && context.world_size > 1;
  };
  for (int64_t step = first_step; step <= loop.steps; ++step) {
    // One optimizer step: micro-batches until the accumulation cycle syncs (num_steps of them,
    // fewer when the data runs out and sync_with_dataloader ends the cycle early).
    double loss_total = 0;
    int64_t micro_batches = 0;
    bool epoch_ended = false;
    bool sync = false;
    while (!sync) {
      data::Batch batch = data.Next();
      sync = accumulation.Begin(batch.last_in_epoch);
      epoch_ended = epoch_ended || batch.last_in_epoch;
      broadcast_buffers_if_due(/*next=*/accumulation.all_reduce_gradients());
      reducer.PrepareForBackward(accumulation.all_reduce_gradients());
      // accelerator.backward divides by the accumulation steps, also in a cycle cut short.
      loss_total += trainer->ForwardBackward(batch.features, batch.targets,
                                             1.0 / static_cast<double>(loop.gradient_accumulation.num_steps));
      if (accumulation.all_reduce_gradients()) reducer.Finalize();
      ++micro_batches;
      samples_since_report += batch.features.size(0) * context.world_size;
      progress.samples_seen += batch.features.size(0) * context.world_size;
      // Not stepped with the optimizer: the loop's scheduler.step() after every micro-batch
      // reaches the scheduler itself; the sync micro-batch's comes after the optimizer step.
      if (!loop.step_scheduler_with_optimizer && !sync) scheduler.Step();
    }
    if (!loop.step_scheduler_with_optimizer) trainer->SetLearningRate(scheduler.learning_rates()[0]);
    double grad_norm = loop.max_grad_norm > 0 ? trainer->ClipGradNorm(loop.max_grad_norm) : 0.0;
    trainer->OptimizerStep();
    if (loop.step_scheduler_with_optimizer) {
      StepLikeAccelerate(scheduler, step_policy, /*sync_gradients=*/true,
                         /*optimizer_step_was_skipped=*/false);
    } else {
      scheduler.Step();
    }
    double lr = trainer->learning_rate();
    trainer->SetLearningRate(scheduler.learning_rates()[0]);

    progress.step = step;
    progress.data_epoch = data.epoch();
    progress.data_position = data.position();
    progress.scheduler_steps = scheduler.last_step();
    if (checkpointing != nullptr &&
        ((checkpointing->checkpoint_every > 0 && step % checkpointing->checkpoint_every == 0) ||
         (checkpointing->checkpoint_every_epoch && epoch_ended) || step == loop.steps)) {
      SaveCheckpoint(*store, *checkpointing, init, dir, *trainer, progress, data_identity, context,
                     *collectives);
    }
    // eval_every 0 with held-out rows: once, after the last step.
    if (loaders.eval && ((loop.eval_every > 0 && step % loop.eval_every == 0) || step == loop.steps)) {
      broadcast_buffers_if_due(/*next=*/false);  // DDP: an evaluation forward runs without grad
      EvalResult eval = Evaluate(*trainer, *loaders.eval, loop.eval_samples, *collectives);
      summary.eval_loss = eval.loss;
      summary.eval_accuracy = eval.accuracy;
      observe::Scalars scalars{{"eval_loss", eval.loss}};
      if (eval.accuracy >= 0) scalars.emplace_back("eval_accuracy", eval.accuracy);
      if (report) report->LogEval(step, scalars);
    }
    bool reported = step == first_step || step % loop.log_every == 0 || step == loop.steps;
    if (reported) {
      loss_sum.fill_(static_cast<float>(loss_total / static_cast<double>(micro_batches)));
      std::vector<at::Tensor> reduce{loss_sum};
      collectives->AllReduceSum(reduce);
      double mean = loss_sum.item<float>() / context.world_size;
      if (step == first_step) summary.first_loss = mean;
      summary.final_loss = mean;
      if (report) {
        auto now = std::chrono::steady_clock::now();
        double seconds = std::chrono::duration<double>(now - last_report).count();
        double throughput = seconds > 0 ? samples_since_report / seconds : 0;
        last_report = now;
        samples_since_report = 0;
        observe::Scalars scalars{{"loss", mean},
                                 {"lr", lr},
                                 {"epoch", static_cast<double>(data.epoch())},
                                 {"samples_per_second", throughput}};
        if (loop.max_grad_norm > 0) scalars.emplace_back("grad_norm", grad_norm);
        report->Log(step, scalars, mean);
        report->Update(step, lr, throughput);
      }
    } else if (report) {
      report->Update(step, lr, 0);
    }
  }
  if (report) report->Finish();
  summary.wall_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  summary.parameter_digest = Digest(named);

  summary.model_path = (dir / save.model_file).string();
  if (main_process) {
    std::vector<at::Tensor> keep;  // contiguous copies must outlive the write
    std::vector<checkpoint::TensorRef> tensors;
    // The state_dict, as Accelerate's save_model writes it: parameters and buffers.
    for (const auto& [name, tensor] : ModelState(*trainer)) {
      keep.push_back(tensor.detach().contiguous());
      const char* dtype = SafetensorsDtype(keep.back().scalar_type());
      if (dtype == nullptr)
        throw std::runtime_error(fmt::format("cannot save `{}`: unsupported dtype", name));
      tensors.push_back({name, dtype, keep.back().sizes().vec(), TensorBytes(keep.back())});
    }
    if (llvm::Error error = checkpoint::WriteSafetensors(summary.model_path, tensors)) {
      throw std::runtime_error(llvm::toString(std::move(error)));
    }
    llvm::json::Object metrics{
        {"job", plan.job},
        {"plan_hash", plan.hash},
        {"world_size", context.world_size},
        {"steps", summary.steps},
        {"first_loss", summary.first_loss},
        {"final_loss", summary.final_loss},
        {"wall_seconds", summary.wall_seconds},
        {"eval_loss", summary.eval_loss >= 0 ? llvm::json::Value(summary.eval_loss) : nullptr},
        {"eval_accuracy", summary.eval_accuracy >= 0 ? llvm::json::Value(summary.eval_accuracy) : nullptr},
        {"blas", support::DetectLoadedBlas().Describe()},
        {"model_file", summary.model_path},
        {"parameter_digest", summary.parameter_digest}};
    if (llvm::Error error = WriteJson((dir / "metrics.json").string(), std::move(metrics))) {
      throw std::runtime_error(llvm::toString(std::move(error)));
    }
  }
  llvm::json::Object rank_record{{"rank", context.rank}, {"parameter_digest", summary.parameter_digest}};
  if (llvm::Error error = WriteJson((dir / "ranks" / fmt::format("rank-{}.json", context.rank)).string(),
                                    std::move(rank_record))) {
    throw std::runtime_error(llvm::toString(std::move(error)));
  }
  // Rank 0 serves the store: nobody leaves while a peer may still need it.
  collectives->Barrier();
  return summary;
}

}  // namespace

llvm::Expected<RunSummary> RunWorker(const plan::Plan& plan, const WorkerContext& context) {
  // The runtime's exception boundary: LibTorch and c10d throw; callers get an llvm::Error.
  std::unique_ptr<distributed::Collectives> group;
  try {
    return Run(plan, context, group);
  } catch (const distributed::CollectiveError& error) {
    // A peer's death or a timeout: the launcher tells this echo from a root cause by its type.
    (void)group.release();
    std::string text = error.what();
    return llvm::make_error<CollectiveFailure>(
        fmt::format("rank {}: {}", context.rank, text.substr(0, text.find('\n'))));
  } catch (const std::exception& error) {
    // After a failed collective, destroying the Gloo group would wait for every queued bucket
    // to time out in turn. The worker is about to exit, so the group is left to the OS.
    (void)group.release();
    std::string text = error.what();
    return Fail(fmt::format("rank {}: {}", context.rank, text.substr(0, text.find('\n'))));
  }
}

}  // namespace accel::rt::train
