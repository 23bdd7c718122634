#ifndef ACCEL_RUNTIME_DISTRIBUTED_ENVIRONMENT_H_
#define ACCEL_RUNTIME_DISTRIBUTED_ENVIRONMENT_H_

#include <string>

// What this build of the runtime can use (catalog §6.2), as `accelrun env` reports it.
namespace accel::rt::distributed {

// `is_cuda_available`: LibTorch was built with CUDA and sees at least one device.
bool IsCudaAvailable();
// `is_bf16_available`: on CUDA, whether the current device supports bfloat16 (compute
// capability 8 or newer); without CUDA, true (the CPU is assumed capable, as in Accelerate).
bool IsBf16Available(bool ignore_tpu = false);
// `is_mps_available`: Apple's MPS backend is built and available (never on Linux builds).
bool IsMpsAvailable();
// `is_npu_available`, `is_xpu_available`, `is_torch_xla_available`: false in this runtime
// (the runtime loads no XPU back end, and torch_npu / torch_xla are Python packages); the
// `check_*` arguments of Accelerate's versions change nothing when the backend is absent.
bool IsNpuAvailable();
bool IsXpuAvailable();
bool IsTorchXlaAvailable();
// `is_nccl_available`: the CUDA back end, which holds NCCL, loads (it is built with every
// runtime; it fails to load only where LibTorch's CUDA libraries are missing).
// `is_gloo_available`: always.
bool IsNcclAvailable();
bool IsGlooAvailable();

// The LibTorch version this runtime was built against (`2.11.0`).
std::string TorchVersion();

}  // namespace accel::rt::distributed

#endif  // ACCEL_RUNTIME_DISTRIBUTED_ENVIRONMENT_H_
