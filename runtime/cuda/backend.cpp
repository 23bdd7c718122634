// libaccel_cuda.so: the CUDA back end's table (backend.h). Linked against libtorch_cuda,
// libc10_cuda and NCCL; nothing else in the runtime is.
#include "runtime/cuda/backend.h"

#include <c10/cuda/CUDAFunctions.h>
#include <cuda_runtime_api.h>
#include <nccl.h>
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>

#include <cstdlib>

#include <fmt/format.h>

namespace accel::rt::cuda {
namespace {

int DeviceCount() { return static_cast<int>(c10::cuda::device_count()); }

void SetDevice(int index) { c10::cuda::set_device(static_cast<c10::DeviceIndex>(index)); }

std::vector<std::string> DescribeDevices() {
  std::vector<std::string> devices;
  for (int i = 0; i < DeviceCount(); ++i) {
    cudaDeviceProp properties{};
    if (cudaGetDeviceProperties(&properties, i) != cudaSuccess) {
      devices.push_back("(cannot read its properties)");
      continue;
    }
    devices.push_back(fmt::format("{}, {:.1f} GiB, sm_{}{}", properties.name,
                                  static_cast<double>(properties.totalGlobalMem) / (1 << 30),
                                  properties.major, properties.minor));
  }
  return devices;
}

std::string NcclVersion() {
  int code = 0;
  if (ncclGetVersion(&code) != ncclSuccess) return "unknown";
  // NCCL >= 2.9 encodes major * 10000 + minor * 100 + patch.
  return fmt::format("{}.{}.{}", code / 10000, code / 100 % 100, code % 100);
}

std::string CudaVersion() { return fmt::format("{}.{}", CUDART_VERSION / 1000, CUDART_VERSION / 10 % 100); }

c10::intrusive_ptr<c10d::Backend> NewNcclGroup(c10::intrusive_ptr<c10d::Store> store, int rank, int size,
                                               std::chrono::milliseconds timeout) {
  // Asynchronous error handling: the group's watchdog aborts the communicator when a collective
  // outlives the timeout or fails, so the wait throws instead of hanging. A user's own setting
  // is kept.
  ::setenv("TORCH_NCCL_ASYNC_ERROR_HANDLING", "1", 0);
  auto options = c10d::ProcessGroupNCCL::Options::create();
  options->timeout = timeout;
  return c10::make_intrusive<c10d::ProcessGroupNCCL>(std::move(store), rank, size, options);
}

constexpr Backend kBackend{
    .abi = kBackendAbi,
    .device_count = DeviceCount,
    .set_device = SetDevice,
    .describe_devices = DescribeDevices,
    .nccl_version = NcclVersion,
    .cuda_version = CudaVersion,
    .new_nccl_group = NewNcclGroup,
};

}  // namespace
}  // namespace accel::rt::cuda

extern "C" __attribute__((visibility("default"))) const accel::rt::cuda::Backend* accel_cuda_backend() {
  return &accel::rt::cuda::kBackend;
}
