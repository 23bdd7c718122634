#include "runtime/distributed/random.h"

#include <ATen/ATen.h>
#include <ATen/detail/CUDAHooksInterface.h>

#include <mutex>

#include <fmt/format.h>

#include "runtime/distributed/value.h"

namespace accel::rt::distributed {
namespace {

enum class RngType { kTorch, kCuda, kGenerator };

RngType ParseRngType(const std::string& name) {
  if (name == "torch") return RngType::kTorch;
  if (name == "cuda") return RngType::kCuda;
  if (name == "generator") return RngType::kGenerator;
  for (const char* other : {"xla", "npu", "mlu", "sdaa", "musa", "xpu", "hpu", "neuron"}) {
    if (name == other) {
      throw OperationError(
          fmt::format("synchronize_rng_states: `{}` generators are not available in this runtime "
                      "(it drives CPU and CUDA only)",
                      name));
    }
  }
  throw OperationError(
      fmt::format("synchronize_rng_states: unknown RNG type `{}`; use torch, cuda or generator", name));
}

// Rank 0's state of `generator` on every rank.
void Synchronize(Collectives& collectives, at::Generator& generator) {
  at::Tensor state;
  {
    std::lock_guard<std::mutex> lock(generator.mutex());
    state = generator.get_state().contiguous();
  }
  // States are host tensors; they travel on the group's device (NCCL sends device memory only).
  std::vector<at::Tensor> tensors{state.to(collectives.device())};
  collectives.Broadcast(tensors, 0);
  state = tensors[0].cpu();
  std::lock_guard<std::mutex> lock(generator.mutex());
  generator.set_state(state);
}

}  // namespace

uint64_t SetSeed(uint64_t seed, bool device_specific, int process_index, bool deterministic) {
  if (device_specific) seed += static_cast<uint64_t>(process_index);
  at::manual_seed(seed);  // the CPU generator and, where there are GPUs, every CUDA device's
  if (deterministic) at::globalContext().setDeterministicAlgorithms(true, /*warn_only=*/false);
  return seed;
}

void SynchronizeRngStates(Collectives& collectives, const std::vector<std::string>& rng_types,
                          at::Generator* generator) {
  // Validate everything first: an error after the first broadcast would strand the peers.
  std::vector<RngType> types;
  for (const std::string& name : rng_types) {
    RngType type = ParseRngType(name);
    if (type == RngType::kCuda && !(at::hasCUDA() && at::detail::getCUDAHooks().getNumGPUs() > 0)) {
      throw OperationError("synchronize_rng_states: `cuda` was asked for but CUDA is not available");
    }
    if (type == RngType::kGenerator && (generator == nullptr || !generator->defined())) {
      throw OperationError("synchronize_rng_states: `generator` was asked for but no generator was passed");
    }
    types.push_back(type);
  }
  if (!collectives.distributed()) return;
  for (RngType type : types) {
    switch (type) {
      case RngType::kTorch: {
        at::Generator cpu = at::detail::getDefaultCPUGenerator();
        Synchronize(collectives, cpu);
        break;
      }
      case RngType::kCuda: {
        // The current device's generator, as torch.cuda.get_rng_state() reads it.
        at::Generator cuda = at::detail::getCUDAHooks().getDefaultGenerator(-1);
        Synchronize(collectives, cuda);
        break;
      }
      case RngType::kGenerator:
        Synchronize(collectives, *generator);
        break;
    }
  }
}

}  // namespace accel::rt::distributed
