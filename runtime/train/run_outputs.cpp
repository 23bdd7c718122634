#include "runtime/train/run_outputs.h"

#include <algorithm>

#include <fmt/format.h>

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/SHA256.h"
#include "runtime/checkpoint/atomic_file.h"
#include "runtime/checkpoint/safetensors.h"
#include "runtime/support/blas.h"
#include "runtime/train/train_state.h"

namespace accel::rt::train {
namespace {

std::string_view TensorBytes(const at::Tensor& tensor) {
  return std::string_view(static_cast<const char*>(tensor.data_ptr()),
                          tensor.numel() * tensor.element_size());
}

llvm::Error WriteJson(const std::string& path, llvm::json::Value value) {
  std::string text;
  llvm::raw_string_ostream stream(text);
  stream << llvm::formatv("{0:2}", value) << "\n";
  stream.flush();
  return checkpoint::WriteFileAtomically(path, {text});
}

// The state_dict, as Accelerate's save_model writes it: parameters and buffers.
llvm::Error WriteModel(const Trainer& trainer, const std::string& path) {
  std::vector<at::Tensor> keep;  // contiguous copies must outlive the write
  std::vector<checkpoint::TensorRef> tensors;
  for (const auto& [name, tensor] : ModelState(trainer)) {
    keep.push_back(tensor.detach().contiguous());
    const char* dtype = SafetensorsDtype(keep.back().scalar_type());
    if (dtype == nullptr) {
      return llvm::createStringError(llvm::inconvertibleErrorCode(), "cannot save `%s`: unsupported dtype",
                                     name.c_str());
    }
    tensors.push_back({name, dtype, keep.back().sizes().vec(), TensorBytes(keep.back())});
  }
  return checkpoint::WriteSafetensors(path, tensors);
}

}  // namespace

std::string ParameterDigest(const std::vector<std::pair<std::string, at::Tensor>>& named) {
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

llvm::Error WriteRunOutputs(const plan::Plan& plan, const Trainer& trainer, const RunSummary& summary,
                            const std::filesystem::path& output_dir, int rank, int world_size) {
  if (rank == 0) {
    if (llvm::Error error = WriteModel(trainer, summary.model_path)) return error;
    auto optional = [](double value) { return value >= 0 ? llvm::json::Value(value) : nullptr; };
    llvm::json::Object metrics{{"job", plan.job},
                               {"plan_hash", plan.hash},
                               {"world_size", world_size},
                               {"steps", summary.steps},
                               {"first_loss", summary.first_loss},
                               {"final_loss", summary.final_loss},
                               {"wall_seconds", summary.wall_seconds},
                               {"eval_loss", optional(summary.eval_loss)},
                               {"eval_accuracy", optional(summary.eval_accuracy)},
                               {"blas", support::DetectLoadedBlas().Describe()},
                               {"model_file", summary.model_path},
                               {"parameter_digest", summary.parameter_digest}};
    if (llvm::Error error = WriteJson((output_dir / "metrics.json").string(), std::move(metrics)))
      return error;
  }
  llvm::json::Object record{{"rank", rank}, {"parameter_digest", summary.parameter_digest}};
  return WriteJson((output_dir / "ranks" / fmt::format("rank-{}.json", rank)).string(), std::move(record));
}

}  // namespace accel::rt::train
