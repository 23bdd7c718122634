#include "runtime/train/worker.h"

#include <ATen/ATen.h>

#include <chrono>
#include <filesystem>

#include <fmt/format.h>

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/SHA256.h"
#include "runtime/checkpoint/atomic_file.h"
#include "runtime/checkpoint/safetensors.h"
#include "runtime/dist/collectives.h"
#include "runtime/support/blas.h"
#include "runtime/train/gradient_buckets.h"
#include "runtime/train/synthetic_data.h"
#include "runtime/train/trainer.h"

namespace accel::rt::train {
namespace {

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

// `group` receives the process group as soon as it exists, so that RunWorker can keep it alive
// past a failure (see there).
RunSummary Run(const plan::Plan& plan, const WorkerContext& context,
               std::unique_ptr<dist::Collectives>& group) {
  const auto& init = Require<plan::InitProcessGroup>(plan, "init_process_group");
  const auto& model_spec = Require<plan::BuildModel>(plan, "build_model");
  const auto& data_spec = Require<plan::BuildDataloader>(plan, "build_dataloader");
  const auto& loop = Require<plan::TrainLoop>(plan, "train");
  const auto& save = Require<plan::SaveModel>(plan, "save_model");
  bool main_process = context.rank == 0;

  group = context.world_size > 1
              ? dist::ConnectGloo({context.rank, context.world_size, context.master_addr, context.master_port,
                                   std::chrono::milliseconds(init.timeout_ms)})
              : dist::MakeSingleProcess();
  dist::Collectives* collectives = group.get();

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

  SyntheticRegression data(data_spec, context.rank, context.world_size);
  GradientBuckets buckets(parameters, loop.bucket_cap_mb * 1024 * 1024);
  at::Tensor loss_sum = at::zeros({1}, at::kFloat);

  RunSummary summary;
  summary.steps = loop.steps;
  auto started = std::chrono::steady_clock::now();
  for (int64_t step = 1; step <= loop.steps; ++step) {
    auto [features, targets] = data.Next();
    float loss = trainer->ForwardBackward(features, targets);
    buckets.AverageGradients(*collectives);
    trainer->OptimizerStep();
    if (step == 1 || step % loop.log_every == 0 || step == loop.steps) {
      loss_sum.fill_(loss);
      std::vector<at::Tensor> reduce{loss_sum};
      collectives->AllReduceSum(reduce);
      double mean = loss_sum.item<float>() / context.world_size;
      if (step == 1) summary.first_loss = mean;
      summary.final_loss = mean;
      if (main_process)
        fmt::print("step {:>{}}/{}  loss {:.6f}\n", step, fmt::formatted_size("{}", loop.steps), loop.steps,
                   mean);
      std::fflush(stdout);
    }
  }
  summary.wall_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  summary.parameter_digest = Digest(named);

  std::filesystem::path dir = context.output_dir.empty() ? save.dir : context.output_dir;
  summary.model_path = (dir / save.file).string();
  if (main_process) {
    std::vector<at::Tensor> keep;  // contiguous copies must outlive the write
    std::vector<checkpoint::TensorRef> tensors;
    for (const auto& [name, tensor] : named) {
      keep.push_back(tensor.detach().contiguous());
      tensors.push_back({name, "F32", keep.back().sizes().vec(), TensorBytes(keep.back())});
    }
    if (llvm::Error error = checkpoint::WriteSafetensors(summary.model_path, tensors)) {
      throw std::runtime_error(llvm::toString(std::move(error)));
    }
    llvm::json::Object metrics{{"job", plan.job},
                               {"plan_hash", plan.hash},
                               {"world_size", context.world_size},
                               {"steps", summary.steps},
                               {"first_loss", summary.first_loss},
                               {"final_loss", summary.final_loss},
                               {"wall_seconds", summary.wall_seconds},
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
  std::unique_ptr<dist::Collectives> group;
  try {
    return Run(plan, context, group);
  } catch (const std::exception& error) {
    // After a failed collective, destroying the Gloo group would wait for every queued bucket
    // to time out in turn. The worker is about to exit, so the group is left to the OS.
    (void)group.release();
    std::string text = error.what();
    return Fail(fmt::format("rank {}: {}", context.rank, text.substr(0, text.find('\n'))));
  }
}

}  // namespace accel::rt::train
