// Collectives over c10d's ProcessGroupNCCL (CUDA tensors). Compiled in only against a
// LibTorch built with CUDA and NCCL (CMake defines ACCEL_HAVE_NCCL there); elsewhere
// ConnectNccl explains that the build lacks it.
#include <cstdlib>

#include <fmt/format.h>

#include "runtime/distributed/collectives.h"

#ifdef ACCEL_HAVE_NCCL
#include <c10/cuda/CUDAFunctions.h>
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>

#include "runtime/distributed/c10d_group.h"
#include "runtime/support/progress.h"
#endif

namespace accel::rt::distributed {

std::unique_ptr<Collectives> ConnectNccl(const RendezvousOptions& options, int local_rank) {
#ifdef ACCEL_HAVE_NCCL
  try {
    int devices = static_cast<int>(c10::cuda::device_count());
    if (devices == 0) throw CollectiveError("NCCL needs a CUDA device and none is visible");
    auto index = static_cast<c10::DeviceIndex>(local_rank % devices);
    c10::cuda::set_device(index);
    // Blocking wait makes Work::wait(timeout) throw when the timeout passes (otherwise it
    // returns at once and only the watchdog notices, by killing the process); asynchronous
    // error handling aborts the communicator so nothing stays hung. Names for LibTorch 1.x and
    // 2.x; a user's settings are kept.
    for (const char* name : {"NCCL_BLOCKING_WAIT", "TORCH_NCCL_BLOCKING_WAIT", "NCCL_ASYNC_ERROR_HANDLING",
                             "TORCH_NCCL_ASYNC_ERROR_HANDLING"}) {
      ::setenv(name, "1", 0);
    }
    c10::intrusive_ptr<c10d::Store> store = internal::Rendezvous(options);
    auto nccl_options = c10d::ProcessGroupNCCL::Options::create();
    nccl_options->timeout = options.timeout;
    auto group =
        c10::make_intrusive<c10d::ProcessGroupNCCL>(store, options.rank, options.world_size, nccl_options);
    progress::Resumed();  // the rendezvous and the group's connections are done
    return std::make_unique<internal::C10dCollectives>(options, store, group, c10::Device(c10::kCUDA, index));
  } catch (const OwnRendezvousError&) {
    throw;  // this rank's own failure, already said in full
  } catch (const std::exception& error) {
    internal::ThrowRendezvousError(options, error);
  }
#else
  (void)options;
  (void)local_rank;
  throw CollectiveError(
      "this accelrun was built against a LibTorch without CUDA and NCCL (Debian's LibTorch is CPU-only); "
      "use the gloo backend, or rebuild Accel against a CUDA LibTorch");
#endif
}

std::unique_ptr<Collectives> Connect(const std::string& backend, const RendezvousOptions& options,
                                     int local_rank) {
  if (backend == "gloo") return ConnectGloo(options);
  if (backend == "nccl") return ConnectNccl(options, local_rank);
  throw CollectiveError(fmt::format("unknown process-group backend `{}`; this runtime has gloo{}", backend,
                                    IsNcclCompiledIn() ? " and nccl" : ""));
}

bool IsNcclCompiledIn() {
#ifdef ACCEL_HAVE_NCCL
  return true;
#else
  return false;
#endif
}

}  // namespace accel::rt::distributed
