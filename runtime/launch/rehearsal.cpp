#include "runtime/launch/rehearsal.h"

#include <fmt/format.h>

namespace accel::rt::launch {
namespace {

// The first step of type T, to change it (Plan::Find reads only).
template <typename T>
T* MutableStep(plan::Plan& plan) {
  for (plan::Step& step : plan.steps) {
    if (T* found = std::get_if<T>(&step)) return found;
  }
  return nullptr;
}

int64_t WorldSize(const plan::InitProcessGroup& init) {
  return init.num_machines * init.processes_per_machine;
}

std::string_view EngineName(const plan::Plan& plan) {
  const auto* loop = plan.Find<plan::TrainLoop>();
  if (loop == nullptr || (loop->sharding.engine == plan::ShardingEngine::ddp && loop->sharding.stage == 0))
    return "data-parallel";
  switch (loop->sharding.engine) {
    case plan::ShardingEngine::ddp:
      return "data-parallel";
    case plan::ShardingEngine::fsdp:
      return "FSDP";
    case plan::ShardingEngine::deepspeed:
      return "DeepSpeed";
  }
  return "data-parallel";
}

// `1 process`, `4 processes`.
std::string Processes(int64_t count) { return fmt::format("{} process{}", count, count == 1 ? "" : "es"); }

}  // namespace

std::vector<std::string> RehearseOnCpu(plan::Plan& plan) {
  std::vector<std::string> changes;
  auto* init = MutableStep<plan::InitProcessGroup>(plan);
  if (init == nullptr) return changes;
  if (init->device != plan::Device::cpu) {
    changes.push_back(fmt::format("device {} -> cpu", plan::EnumName(init->device)));
    if (init->backend != plan::Backend::gloo)
      changes.push_back(fmt::format("backend {} -> gloo", plan::EnumName(init->backend)));
    init->device = plan::Device::cpu;
    init->rehearsal = true;
    init->backend = plan::Backend::gloo;
  }
  if (!init->rehearsal) return changes;
  // Also for a plan compiled as a rehearsal: its precision is still the GPU job's.
  auto* loop = MutableStep<plan::TrainLoop>(plan);
  if (loop != nullptr && loop->mixed_precision == plan::MixedPrecision::fp16) {
    loop->mixed_precision = plan::MixedPrecision::bf16;
    changes.push_back(
        "mixed precision fp16 -> bf16 (a rehearsal trains in bf16; the GPU run's loss scaling is not "
        "rehearsed)");
  }
  if (!changes.empty()) plan.hash = plan::ComputeHash(plan);
  return changes;
}

std::string RehearsalBanner(const plan::Plan& plan) {
  const auto* init = plan.Find<plan::InitProcessGroup>();
  int64_t world = init != nullptr ? WorldSize(*init) : 1;
  std::string machines = init != nullptr && init->num_machines > 1
                             ? fmt::format(" (its {} machines x {} processes all on this machine)",
                                           init->num_machines, init->processes_per_machine)
                             : "";
  return fmt::format(
      "rehearsal on the CPU of an accelerator job: the {} job `{}` on {} CPU process{} over Gloo{}, not on "
      "its accelerators",
      EngineName(plan), plan.job, world, world == 1 ? "" : "es", machines);
}

std::string_view DeviceDescription(plan::Device device) {
  switch (device) {
    case plan::Device::cpu:
      return "the CPU";
    case plan::Device::cuda:
      return "CUDA GPUs";
    case plan::Device::xpu:
      return "Intel XPUs";
    case plan::Device::npu:
      return "Ascend NPUs";
    case plan::Device::mlu:
      return "Cambricon MLUs";
    case plan::Device::sdaa:
      return "Tecorigin SDAAs";
    case plan::Device::musa:
      return "Moore Threads MUSA GPUs";
    case plan::Device::hpu:
      return "Habana Gaudi HPUs";
    case plan::Device::neuron:
      return "AWS Neuron cores";
  }
  return "an accelerator";
}

std::string OtherAcceleratorError(const plan::Plan& plan, const std::string& input) {
  const auto* init = plan.Find<plan::InitProcessGroup>();
  return fmt::format(
      "`{}` is a job for {} (device {}, backend {}, {}), and accelrun's workers compute on the CPU "
      "or on CUDA devices only; nothing was started. To rehearse it on this machine: `accelrun {} --device "
      "cpu` (the same steps and world size on CPU processes over Gloo)",
      input, DeviceDescription(init->device), plan::EnumName(init->device), plan::EnumName(init->backend),
      Processes(WorldSize(*init)), input);
}

std::string NoCudaError(const plan::Plan& plan, const std::string& input, const std::string& why) {
  const auto* init = plan.Find<plan::InitProcessGroup>();
  return fmt::format(
      "`{}` is a GPU job (device cuda, {}) and {}; nothing was started. To try it here, rehearse it on "
      "the CPU: `accelrun {} --device cpu` (the same steps and world size over Gloo)",
      input, Processes(init != nullptr ? WorldSize(*init) : 1), why, input);
}

}  // namespace accel::rt::launch
