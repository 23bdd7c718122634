// The LibTorch half of `accelrun env`: kept apart so only this file includes ATen.
#include <ATen/Context.h>
#include <ATen/Parallel.h>
#include <ATen/detail/CUDAHooksInterface.h>
#include <torch/version.h>

#include <fmt/format.h>

#include "runtime/distributed/collectives.h"
#include "runtime/distributed/environment.h"
#include "runtime/tools/env_command.h"

namespace accel::tools {

TorchFacts CollectTorchFacts() {
  TorchFacts facts;
  facts.version = fmt::format("{}.{}.{}", TORCH_VERSION_MAJOR, TORCH_VERSION_MINOR, TORCH_VERSION_PATCH);
  facts.intra_op_threads = at::get_num_threads();
  facts.cuda_compiled = at::hasCUDA();
  if (facts.cuda_compiled) facts.cuda_devices = static_cast<int>(at::detail::getCUDAHooks().getNumGPUs());
  // runtime/distributed builds its process groups on c10d's Gloo, which every LibTorch build has;
  // its NCCL back end is compiled in only against a LibTorch with CUDA.
  facts.gloo_compiled = rt::distributed::IsGlooAvailable();
  facts.nccl = rt::distributed::IsNcclCompiledIn() ? "yes"
               : facts.cuda_compiled               ? "no: this build did not find LibTorch's CUDA targets"
                                                   : "no: LibTorch without CUDA";
  return facts;
}

}  // namespace accel::tools
