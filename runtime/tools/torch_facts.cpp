// The facts only a process with LibTorch can tell: compiled into accelrun-worker.
#include <ATen/Context.h>
#include <ATen/Parallel.h>
#include <ATen/Version.h>

#include "runtime/cuda/backend.h"
#include "runtime/distributed/environment.h"
#include "runtime/support/blas.h"
#include "runtime/tools/torch_facts.h"

namespace accel::tools {

TorchFacts CollectTorchFacts() {
  namespace distributed = rt::distributed;
  TorchFacts facts;
  facts.version = distributed::TorchVersion();
  facts.intra_op_threads = at::get_num_threads();
  // The CUDA back end is opened here as a `cuda` job opens it: what it reports is what such a
  // job would get.
  std::string why;
  if (const rt::cuda::Backend* cuda = rt::cuda::LoadBackend(&why)) {
    facts.cuda_compiled = true;
    facts.cuda = cuda->cuda_version();
    facts.devices = cuda->describe_devices();
    facts.nccl = "compiled in, " + cuda->nccl_version();
  } else {
    facts.cuda = why;
    facts.nccl = "not available: " + why;
  }
  facts.bf16 = distributed::IsBf16Available();
  facts.gloo = distributed::IsGlooAvailable();
  for (auto [name, available] : {std::pair<const char*, bool>{"MPS", distributed::IsMpsAvailable()},
                                 {"NPU", distributed::IsNpuAvailable()},
                                 {"XPU", distributed::IsXpuAvailable()},
                                 {"XLA", distributed::IsTorchXlaAvailable()}}) {
    if (available) facts.other_accelerators.push_back(name);
  }
  rt::support::BlasInfo blas = rt::support::BlasOfLibTorch(at::show_config());
  facts.blas = blas.Describe();
  facts.blas_optimized = blas.optimized();
  return facts;
}

}  // namespace accel::tools
