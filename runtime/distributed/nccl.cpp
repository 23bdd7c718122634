// Collectives over c10d's ProcessGroupNCCL (CUDA tensors). The group itself is made by the CUDA
// back end (runtime/cuda), opened here on the first NCCL job: the rendezvous, the Collectives
// over the group and every message stay in this library, shared with Gloo.
#include <fmt/format.h>

#include "runtime/cuda/backend.h"
#include "runtime/distributed/c10d_group.h"
#include "runtime/distributed/collectives.h"
#include "runtime/support/progress.h"

namespace accel::rt::distributed {

c10::Device UseCudaDevice(int rank, int local_rank) {
  std::string why;
  const cuda::Backend* backend = cuda::LoadBackend(&why);
  if (backend == nullptr) throw OwnRendezvousError(fmt::format("rank {} cannot use CUDA: {}", rank, why));
  int index = 0;
  try {
    int devices = backend->device_count();
    if (devices == 0)
      throw OwnRendezvousError(fmt::format(
          "rank {} cannot use CUDA: no CUDA device is visible (CUDA_VISIBLE_DEVICES={})", rank,
          std::getenv("CUDA_VISIBLE_DEVICES") ? std::getenv("CUDA_VISIBLE_DEVICES") : "unset"));
    // One GPU per local rank, as torchrun and Accelerate give them; the launcher has already
    // narrowed CUDA_VISIBLE_DEVICES to the plan's gpu_ids.
    index = local_rank % devices;
    backend->set_device(index);
  } catch (const OwnRendezvousError&) {
    throw;
  } catch (const std::exception& error) {
    std::string what = error.what();
    throw OwnRendezvousError(
        fmt::format("rank {} cannot use its GPU {}: {}", rank, index, what.substr(0, what.find('\n'))));
  }
  return c10::Device(c10::kCUDA, static_cast<c10::DeviceIndex>(index));
}

std::unique_ptr<Collectives> ConnectNccl(const RendezvousOptions& options, int local_rank) {
  const c10::Device device = UseCudaDevice(options.rank, local_rank);
  const cuda::Backend* backend = cuda::LoadBackend(nullptr);
  try {
    c10::intrusive_ptr<c10d::Store> store = internal::Rendezvous(options);
    // The world and every subgroup (NewGroup) on this rank's GPU, with the plan's timeout.
    internal::GroupFactory groups = [backend, timeout = options.timeout](
                                        c10::intrusive_ptr<c10d::Store> store, int rank, int size) {
      return backend->new_nccl_group(std::move(store), rank, size, timeout);
    };
    auto group = groups(store, options.rank, options.world_size);
    progress::Resumed();  // the rendezvous is done; NCCL connects lazily, on the first collective
    return std::make_unique<internal::C10dCollectives>(options, store, group, device, ShardedPath::kNative,
                                                       std::move(groups));
  } catch (const OwnRendezvousError&) {
    throw;  // this rank's own failure, already said in full
  } catch (const std::exception& error) {
    internal::ThrowRendezvousError(options, error);
  }
}

std::unique_ptr<Collectives> Connect(const std::string& backend, const RendezvousOptions& options,
                                     int local_rank) {
  if (backend == "gloo") return ConnectGloo(options);
  if (backend == "nccl") return ConnectNccl(options, local_rank);
  throw CollectiveError(
      fmt::format("unknown process-group backend `{}`; this runtime has gloo and nccl", backend));
}

}  // namespace accel::rt::distributed
