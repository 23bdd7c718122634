#ifndef ACCEL_RUNTIME_TOOLS_TORCH_FACTS_H_
#define ACCEL_RUNTIME_TOOLS_TORCH_FACTS_H_

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "llvm/Support/Error.h"

// The LibTorch half of `accelrun env`. accelrun links no LibTorch, so it asks accelrun-worker
// (`accelrun-worker --facts`), which collects them and prints them as JSON.
namespace accel::tools {

struct TorchFacts {
  std::string version;               // the LibTorch the worker was built against
  int intra_op_threads = 0;          // at::get_num_threads() with this environment
  bool cuda_compiled = false;        // the CUDA back end (libaccel_cuda.so) loads
  std::string cuda;                  // `13.0`, or why the back end does not load
  std::vector<std::string> devices;  // the visible CUDA devices, described
  bool bf16 = false;                 // is_bf16_available
  std::string nccl;                  // `compiled in, 2.28.9`, or why not
  bool gloo = false;
  std::vector<std::string> other_accelerators;  // MPS, NPU, XPU, XLA: the ones available
  std::string blas;                             // the BLAS the worker loaded, described
  bool blas_optimized = false;
};

// In accelrun-worker only (torch_facts.cpp includes ATen).
TorchFacts CollectTorchFacts();

std::string TorchFactsJson(const TorchFacts& facts);
llvm::Expected<TorchFacts> TorchFactsFromJson(std::string_view text);

// Runs `worker --facts` and reads its answer; an error says why there is none (no worker
// executable, it failed, or it answered something else).
llvm::Expected<TorchFacts> AskWorkerForFacts(const std::string& worker);

}  // namespace accel::tools

#endif  // ACCEL_RUNTIME_TOOLS_TORCH_FACTS_H_
