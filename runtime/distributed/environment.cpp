#include "runtime/distributed/environment.h"

#include "runtime/cuda/backend.h"

#include <ATen/Context.h>
#include <ATen/detail/CUDAHooksInterface.h>
#include <torch/csrc/api/include/torch/version.h>

namespace accel::rt::distributed {

// Opens the CUDA back end (as a `cuda` job would): only `accelrun env` and tests ask.
bool IsCudaAvailable() {
  const cuda::Backend* backend = cuda::LoadBackend(nullptr);
  return backend != nullptr && backend->device_count() > 0;
}

bool IsBf16Available(bool /*ignore_tpu*/) {
  // No TPU exists for this runtime, so `ignore_tpu` never matters.
  if (!IsCudaAvailable()) return true;
  return at::detail::getCUDAHooks().supportsBFloat16ConvolutionWithCuDNNv8();
}

bool IsMpsAvailable() { return at::hasMPS(); }
bool IsNpuAvailable() { return false; }
bool IsXpuAvailable() { return false; }
bool IsTorchXlaAvailable() { return false; }

bool IsNcclAvailable() { return cuda::LoadBackend(nullptr) != nullptr; }

bool IsGlooAvailable() { return true; }

std::string TorchVersion() { return TORCH_VERSION; }

}  // namespace accel::rt::distributed
