// The LibTorch half of `accelrun env`: kept apart so only this file includes ATen.
#include <ATen/Context.h>
#include <ATen/Parallel.h>
#include <ATen/detail/CUDAHooksInterface.h>
#include <torch/version.h>

#include <fmt/format.h>

#include "runtime/tools/env_command.h"

namespace accel::tools {

TorchFacts CollectTorchFacts() {
  TorchFacts facts;
  facts.version = fmt::format("{}.{}.{}", TORCH_VERSION_MAJOR, TORCH_VERSION_MINOR, TORCH_VERSION_PATCH);
  facts.intra_op_threads = at::get_num_threads();
  facts.cuda_compiled = at::hasCUDA();
  if (facts.cuda_compiled) facts.cuda_devices = static_cast<int>(at::detail::getCUDAHooks().getNumGPUs());
  // runtime/dist builds its process groups on c10d's Gloo, which every LibTorch build has;
  // NCCL comes only with a CUDA build of LibTorch.
  facts.gloo_compiled = true;
#ifdef USE_C10D_NCCL
  facts.nccl = "yes";
#else
  facts.nccl = facts.cuda_compiled ? "unknown: built without USE_C10D_NCCL" : "no: LibTorch without CUDA";
#endif
  return facts;
}

}  // namespace accel::tools
