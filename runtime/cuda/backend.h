#ifndef ACCEL_RUNTIME_CUDA_BACKEND_H_
#define ACCEL_RUNTIME_CUDA_BACKEND_H_

// The CUDA back end: everything of the runtime that needs libtorch_cuda, NCCL or the CUDA
// runtime, in one shared library (libaccel_cuda.so) that a worker opens only for a `cuda` plan
// (or `accelrun env`). A CPU job never loads CUDA's libraries: loading them multiplies a
// worker's start time by about 2.6 and adds about 345 MiB of resident memory (docs/gpu.md).
//
// Opening the library also registers libtorch_cuda's kernels and hooks with ATen, so CUDA
// tensors, autocast and the AMP kernels work through ATen's dispatcher in the worker itself,
// which links libtorch_cpu only.
//
// This header includes no CUDA header: the worker includes it to call the table below.

#include <torch/csrc/distributed/c10d/Backend.hpp>
#include <torch/csrc/distributed/c10d/Store.hpp>

#include <chrono>
#include <string>
#include <vector>

namespace accel::rt::cuda {

// Bumped whenever the table changes, so a worker never calls a library built from other sources.
inline constexpr int kBackendAbi = 1;

// What libaccel_cuda.so offers, as plain function pointers: one C symbol to look up.
struct Backend {
  int abi;
  // The CUDA devices this process sees (after CUDA_VISIBLE_DEVICES); 0 without a driver or GPU.
  int (*device_count)();
  // Makes `index` this thread's current device (cudaSetDevice). Throws c10::Error.
  void (*set_device)(int index);
  // "NVIDIA H100 80GB HBM3, 79.1 GiB, sm_90" per visible device.
  std::vector<std::string> (*describe_devices)();
  // NCCL's version as the library reports it ("2.28.9").
  std::string (*nccl_version)();
  // The CUDA runtime version LibTorch was built with ("13.0").
  std::string (*cuda_version)();
  // A ProcessGroupNCCL of `size` ranks over `store`, on the current device; collectives fail
  // after `timeout`, and NCCL's communicator is aborted on error so no rank stays hung.
  // Collective: every rank of the group calls it. Throws what c10d throws.
  c10::intrusive_ptr<c10d::Backend> (*new_nccl_group)(c10::intrusive_ptr<c10d::Store> store, int rank,
                                                      int size, std::chrono::milliseconds timeout);
};

// The table, or nullptr with `why` set: the library is missing, fails to load (no
// libtorch_cuda beside LibTorch, no CUDA libraries), or is from another build. Loaded once per
// process; later calls return the same answer. Thread-safe.
const Backend* LoadBackend(std::string* why);

}  // namespace accel::rt::cuda

// The one symbol libaccel_cuda.so exports.
extern "C" const accel::rt::cuda::Backend* accel_cuda_backend();

#endif  // ACCEL_RUNTIME_CUDA_BACKEND_H_
