// The facts only a process with LibTorch can tell: compiled into accelrun-worker.
#include <ATen/Context.h>
#include <ATen/Parallel.h>
#include <ATen/detail/CUDAHooksInterface.h>

#include "runtime/distributed/environment.h"
#include "runtime/support/blas.h"
#include "runtime/tools/torch_facts.h"

namespace accel::tools {

TorchFacts CollectTorchFacts() {
  namespace distributed = rt::distributed;
  TorchFacts facts;
  facts.version = distributed::TorchVersion();
  facts.intra_op_threads = at::get_num_threads();
  facts.cuda_compiled = at::hasCUDA();
  if (facts.cuda_compiled) facts.cuda_devices = static_cast<int>(at::detail::getCUDAHooks().getNumGPUs());
  facts.bf16 = distributed::IsBf16Available();
  // runtime/distributed builds its process groups on c10d's Gloo, which every LibTorch build has;
  // its NCCL back end is compiled in only against a LibTorch with CUDA.
  facts.gloo = distributed::IsGlooAvailable();
  facts.nccl = distributed::IsNcclAvailable() ? "yes"
               : facts.cuda_compiled          ? "no: this build did not find LibTorch's CUDA targets"
                                              : "no: LibTorch without CUDA";
  for (auto [name, available] : {std::pair<const char*, bool>{"MPS", distributed::IsMpsAvailable()},
                                 {"NPU", distributed::IsNpuAvailable()},
                                 {"XPU", distributed::IsXpuAvailable()},
                                 {"XLA", distributed::IsTorchXlaAvailable()}}) {
    if (available) facts.other_accelerators.push_back(name);
  }
  rt::support::BlasInfo blas = rt::support::DetectLoadedBlas();
  facts.blas = blas.Describe();
  facts.blas_optimized = blas.optimized();
  return facts;
}

}  // namespace accel::tools
