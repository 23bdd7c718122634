#include "compiler/lower/target.h"

#include <algorithm>
#include <optional>
#include <string>
#include <utility>

#include <fmt/format.h>

#include "compiler/lower/plan_records.h"

namespace accel::lower {
namespace {

using spec::DistributedType;

// The device and backend of an accelerator's data-parallel type, as Accelerate's PartialState
// picks them once it has found the device; unset for the other types.
std::optional<std::pair<plan::Device, plan::Backend>> AcceleratorOf(DistributedType type) {
  using plan::Backend;
  using plan::Device;
  switch (type) {
    case DistributedType::MULTI_GPU:
    case DistributedType::FSDP:
    case DistributedType::DEEPSPEED:
      return {{Device::cuda, Backend::nccl}};
    case DistributedType::MULTI_XPU:
      return {{Device::xpu, Backend::xccl}};
    case DistributedType::MULTI_NPU:
      return {{Device::npu, Backend::hccl}};
    case DistributedType::MULTI_MLU:
      return {{Device::mlu, Backend::cncl}};
    case DistributedType::MULTI_SDAA:
      return {{Device::sdaa, Backend::tccl}};
    case DistributedType::MULTI_MUSA:
      return {{Device::musa, Backend::mccl}};
    case DistributedType::MULTI_HPU:
      return {{Device::hpu, Backend::hccl}};
    case DistributedType::MULTI_NEURON:
      return {{Device::neuron, Backend::neuron}};
    case DistributedType::NO:
    case DistributedType::MULTI_CPU:
    case DistributedType::XLA:
    case DistributedType::MEGATRON_LM:
      return std::nullopt;
  }
  InternalNoCase("distributed_type", "?");
}

// The plan's backend for the one the Accelerator names; unset for those no process group of
// accelrun's forms (MPI, SageMaker's, XLA's).
std::optional<plan::Backend> PlanBackend(spec::Backend backend) {
  switch (backend) {
    case spec::Backend::GLOO:
      return plan::Backend::gloo;
    case spec::Backend::NCCL:
      return plan::Backend::nccl;
    case spec::Backend::XCCL:
      return plan::Backend::xccl;
    case spec::Backend::HCCL:
      return plan::Backend::hccl;
    case spec::Backend::CNCL:
      return plan::Backend::cncl;
    case spec::Backend::MCCL:
      return plan::Backend::mccl;
    case spec::Backend::TCCL:
      return plan::Backend::tccl;
    case spec::Backend::NEURON:
      return plan::Backend::neuron;
    case spec::Backend::MPI:
    case spec::Backend::SMDDP:
    case spec::Backend::XLA:
      return std::nullopt;
  }
  InternalNoCase("backend", "?");
}

// Whether a DeepSpeed precision section's `enabled` turns it on: `true`, or "auto" when the job
// asks for that precision.
bool SectionOn(const sema::Value& enabled, bool job_asks) {
  if (enabled.kind == sema::Value::Kind::Bool) return enabled.bool_value;
  return sema::views::Holds<spec::Auto>(enabled) && job_asks;
}

// Precision under DeepSpeed with a JSON: its `fp16` / `bf16` sections decide, `"enabled": "auto"`
// following the job's; without a JSON the plugin passes the job's on.
plan::MixedPrecision JsonPrecision(const spec::DeepSpeedConfig& json, plan::MixedPrecision job) {
  using plan::MixedPrecision;
  std::optional<spec::DeepSpeedFp16Config> fp16 = json.fp16();
  if (fp16 && SectionOn(fp16->enabled_value(), job == MixedPrecision::fp16)) return MixedPrecision::fp16;
  std::optional<spec::DeepSpeedBf16Config> bf16 = json.bf16();
  if (bf16 && SectionOn(bf16->enabled_value(), job == MixedPrecision::bf16)) return MixedPrecision::bf16;
  return MixedPrecision::no;
}

// The job's own precision, from the Accelerator or the launch config.
plan::MixedPrecision JobPrecision(Lowering& lowering, const spec::ClusterConfig& compute,
                                  const spec::Accelerator& accelerator, const Target& target) {
  bool own = accelerator.mixed_precision().has_value();
  std::optional<spec::PrecisionType> precision = own ? accelerator.mixed_precision() : compute.mixed_precision();
  const sema::Value& where = own ? accelerator.mixed_precision_value() : compute.mixed_precision_value();
  if (!precision) return plan::MixedPrecision::no;
  switch (*precision) {
    case spec::PrecisionType::NO:
      return plan::MixedPrecision::no;
    case spec::PrecisionType::BF16:
      return plan::MixedPrecision::bf16;
    case spec::PrecisionType::FP16:
      // A GPU job keeps fp16, also when rehearsed on the CPU (the launcher runs it as bf16 and
      // says so): the plan stays the GPU job's.
      if (target.gpu_job) return plan::MixedPrecision::fp16;
      lowering.Unsupported(diag::Kind::NativeFp16OnCpu, where, "`mixed_precision = fp16` on the CPU",
                           "; fp16 autocast and its gradient scaler need CUDA, and a NO or MULTI_CPU job runs "
                           "on the CPU: use `bf16` on the CPU" +
                               std::string(kExport));
      return plan::MixedPrecision::no;
    case spec::PrecisionType::FP8:
      lowering.Unsupported(
          diag::Kind::NativeFp8, where, "`mixed_precision = fp8`",
          "; fp8 needs TransformerEngine, MS-AMP or torchao, which exist only in Python" + std::string(kExport));
      return plan::MixedPrecision::no;
  }
  InternalNoCase("mixed_precision", "?");
}

}  // namespace

Target ChooseTarget(Lowering& lowering, const spec::ClusterConfig& compute, const spec::Accelerator& accelerator) {
  DistributedType type = compute.distributed_type();
  bool use_cpu = compute.use_cpu() || accelerator.cpu();
  Target target;
  if (type == DistributedType::NO || type == DistributedType::MULTI_CPU) return target;
  if (type == DistributedType::MEGATRON_LM) {
    lowering.Unsupported(diag::Kind::NativeMegatron, compute.distributed_type_value(),
                         "`compute.distributed_type = MEGATRON_LM`",
                         "; accelrun has no tensor or pipeline parallelism: FSDP or DEEPSPEED shard a model too "
                         "large for one device" +
                             std::string(kExport));
    return target;
  }
  // Any accelerator may train in fp16; only the device is what accelrun lacks.
  target.gpu_job = true;
  std::optional<std::pair<plan::Device, plan::Backend>> device = AcceleratorOf(type);
  if (!device && !use_cpu) {
    // XLA: torch_xla compiles the step into graphs for TPU cores, with no process group of
    // its workers for a rehearsal to stand in for.
    lowering.Unsupported(
        diag::Kind::NativeAccelerator, compute.distributed_type_value(),
        fmt::format("`compute.distributed_type = {}`", sema::views::MemberName(type)),
        "; accelrun has no XLA device, and its workers form no process group: rehearse it on the CPU "
        "with `compute.use_cpu = true`, or use MULTI_GPU" +
            std::string(kExport));
    return target;
  }
  target.rehearsal = use_cpu;
  if (!use_cpu) std::tie(target.device, target.backend) = *device;
  return target;
}

plan::MixedPrecision LowerPrecision(Lowering& lowering, const spec::ClusterConfig& compute,
                                    const spec::Accelerator& accelerator, const Target& target) {
  plan::MixedPrecision job = JobPrecision(lowering, compute, accelerator, target);
  if (compute.distributed_type() == DistributedType::DEEPSPEED && lowering.deepspeed_json() != nullptr)
    return JsonPrecision(spec::DeepSpeedConfig(*lowering.deepspeed_json()), job);
  return job;
}

plan::InitProcessGroup LowerProcessGroup(Lowering& lowering, const spec::ClusterConfig& compute,
                                         const spec::Accelerator& accelerator, const Target& target) {
  spec::InitProcessGroupKwargs kwargs = accelerator.init_process_group();
  plan::InitProcessGroup init;
  init.device = target.device;
  init.rehearsal = target.rehearsal;
  // Unset: Accelerate picks the device's own backend (NCCL for GPUs, XCCL for XPUs, ...) and
  // Gloo for the CPU; a rehearsal is on the CPU.
  init.backend = target.backend;
  if (std::optional<spec::Backend> backend = kwargs.backend(); backend && !target.rehearsal) {
    // Gloo everywhere, or the device's own backend: what a process group on that device forms.
    std::optional<plan::Backend> native = PlanBackend(*backend);
    if (native && (*native == plan::Backend::gloo || *native == target.backend)) {
      init.backend = *native;
    } else {
      lowering.Unsupported(
          diag::Kind::NativeBackend, kwargs.backend_value(),
          fmt::format("`accelerator.init_process_group.backend = {}`", sema::views::SerializedValue(*backend)),
          (target.backend == plan::Backend::gloo
               ? std::string("; accelrun forms its process groups over Gloo: use `GLOO`")
               : fmt::format("; accelrun forms its process groups over Gloo, or over {} for a job on "
                             "device {}: use `GLOO`",
                             plan::EnumName(target.backend), plan::EnumName(target.device))) +
              std::string(kExport));
    }
  }
  init.timeout = kwargs.timeout();
  init.num_machines = compute.num_machines();
  // `num_processes` counts every machine's processes; -1 (unset) is one process (CFG-003).
  int64_t total = std::max<int64_t>(compute.num_processes(), 1);
  init.processes_per_machine = total / init.num_machines;
  init.main_process_ip = compute.main_process_ip().value_or("127.0.0.1");
  init.main_process_port = compute.main_process_port().value_or(29500);
  // `accelerate launch` starts mpirun when its simple launcher runs the job (a CPU job, or
  // `use_cpu`); the GPU launchers ignore the section, and so does the plan.
  if (std::optional<spec::MpirunConfig> mpirun = compute.mpirun_config(); mpirun && target.device == plan::Device::cpu) {
    if (std::optional<std::string> hostfile = mpirun->mpirun_hostfile(); hostfile && !hostfile->empty())
      init.mpirun_hostfile = SpecRelative(mpirun->mpirun_hostfile_value());
  }
  return init;
}

}  // namespace accel::lower
