#include "runtime/train/run_outputs.h"

#include <algorithm>

#include <ATen/Version.h>

#include <fmt/format.h>

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/SHA256.h"
#include "runtime/checkpoint/atomic_file.h"
#include "runtime/checkpoint/safetensors.h"
#include "runtime/checkpoint/shards.h"
#include "runtime/engine/train_state.h"
#include "runtime/support/blas.h"
#include "runtime/tensor/host_bytes.h"

namespace accel::rt::train {
namespace {

llvm::Error WriteJson(const std::string& path, llvm::json::Value value) {
  std::string text;
  llvm::raw_string_ostream stream(text);
  stream << llvm::formatv("{0:2}", value) << "\n";
  stream.flush();
  return checkpoint::WriteFileAtomically(path, {text});
}

// The state_dict, as Accelerate's save_model writes it: parameters and buffers, one file when
// it fits in max_shard_size, else shards and an index (the stem is model_file without
// `.safetensors`). Returns the path that names the weights: the file, or the index.
llvm::Expected<std::string> WriteModel(const Trainer& trainer, const plan::SaveModel& save,
                                       const std::filesystem::path& dir) {
  std::vector<at::Tensor> keep;  // contiguous copies must outlive the write
  std::vector<checkpoint::TensorRef> tensors;
  for (const auto& [name, tensor] : ModelState(trainer)) {
    keep.push_back(tensor::HostContiguous(tensor));
    const char* dtype = SafetensorsDtype(keep.back().scalar_type());
    if (dtype == nullptr) {
      return llvm::createStringError(llvm::inconvertibleErrorCode(), "cannot save `%s`: unsupported dtype",
                                     name.c_str());
    }
    tensors.push_back({name, dtype, keep.back().sizes().vec(), tensor::HostBytes(keep.back())});
  }
  constexpr std::string_view kSuffix = ".safetensors";
  const std::string& file = save.model_file;
  bool standard = file.size() > kSuffix.size() &&
                  file.compare(file.size() - kSuffix.size(), kSuffix.size(), kSuffix) == 0;
  std::string stem = standard ? file.substr(0, file.size() - kSuffix.size()) : file;
  uint64_t limit = static_cast<uint64_t>(save.max_shard_size);
  bool sharded = checkpoint::PlanShards(tensors, limit, stem).size() > 1;
  if (!sharded && !standard) {
    // A name of the user's own: kept as given (the shard writer would append `.safetensors`).
    if (llvm::Error error = checkpoint::WriteSafetensors((dir / file).string(), tensors)) return error;
    return (dir / file).string();
  }
  // Also removes the shards or index an earlier save in this directory left behind.
  if (llvm::Error error = checkpoint::SaveShardedSafetensors(dir.string(), tensors, limit, stem))
    return error;
  return (dir / (sharded ? checkpoint::IndexFileName(stem) : file)).string();
}

}  // namespace

std::string ParameterDigest(const std::vector<std::pair<std::string, at::Tensor>>& named) {
  std::vector<std::pair<std::string, at::Tensor>> sorted = named;
  std::sort(sorted.begin(), sorted.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  llvm::SHA256 sha;
  for (const auto& [name, tensor] : sorted) {
    sha.update(llvm::StringRef(name));
    at::Tensor host = tensor::HostContiguous(tensor);
    std::string_view bytes = tensor::HostBytes(host);
    sha.update(llvm::StringRef(bytes.data(), bytes.size()));
  }
  return "sha256:" + llvm::toHex(sha.final(), /*LowerCase=*/true);
}

llvm::Error WriteRunOutputs(const plan::Plan& plan, const plan::SaveModel& save, const Trainer& trainer,
                            RunSummary& summary, const std::filesystem::path& output_dir, int rank,
                            int world_size) {
  if (rank == 0) {
    llvm::Expected<std::string> written = WriteModel(trainer, save, output_dir);
    if (!written) return written.takeError();
    summary.model_path = *written;
    auto optional = [](double value) { return value >= 0 ? llvm::json::Value(value) : nullptr; };
    llvm::json::Object metrics{
        {"job", plan.job},
        {"plan_hash", plan.hash},
        {"world_size", world_size},
        {"steps", summary.steps},
        {"first_loss", summary.first_loss},
        {"final_loss", summary.final_loss},
        {"wall_seconds", summary.wall_seconds},
        {"resumed_at_step",
         summary.resumed_at_step >= 0 ? llvm::json::Value(summary.resumed_at_step) : nullptr},
        {"eval_loss", optional(summary.eval_loss)},
        {"eval_accuracy", optional(summary.eval_accuracy)},
        {"loss_scale", optional(summary.loss_scale)},
        {"skipped_steps",
         summary.skipped_steps >= 0 ? llvm::json::Value(summary.skipped_steps) : nullptr},
        {"blas", support::BlasOfLibTorch(at::show_config()).Describe()},
        {"model_file", summary.model_path},
        {"parameter_digest", summary.parameter_digest}};
    if (llvm::Error error = WriteJson((output_dir / "metrics.json").string(), std::move(metrics)))
      return error;
  }
  llvm::json::Object record{{"rank", rank}, {"parameter_digest", summary.parameter_digest}};
  return WriteJson((output_dir / "ranks" / fmt::format("rank-{}.json", rank)).string(), std::move(record));
}

}  // namespace accel::rt::train
