#ifndef ACCEL_COMPILER_LOWER_TARGET_H_
#define ACCEL_COMPILER_LOWER_TARGET_H_

#include "compiler/lower/lowering.h"
#include "compiler/plan/plan.h"

// Where the job's workers compute, in what precision, and the process group they form: the
// first phase of lowering, read from the launch config (`compute`) and the Accelerator.
namespace accel::lower {

// NO and MULTI_CPU jobs run on the CPU; MULTI_GPU, FSDP and DEEPSPEED are GPU jobs on CUDA
// devices over NCCL; the other accelerators' data-parallel types (MULTI_XPU, MULTI_NPU, ...)
// are jobs on their devices over the backend Accelerate picks for them, which accelrun runs only
// as rehearsals (`accelrun --device cpu`). Any of them is a rehearsal on the CPU over Gloo, with
// the same world size, when `compute.use_cpu` (or the Accelerator's `cpu`) asks for the CPU.
// XLA and Megatron-LM do not run at all.
struct Target {
  plan::Device device = plan::Device::cpu;
  plan::Backend backend = plan::Backend::gloo;  // the device's own, as Accelerate's _prepare_backend
  bool rehearsal = false;
  bool gpu_job = false;  // configured for an accelerator (fp16 allowed), whether or not it runs there
};

Target ChooseTarget(Lowering& lowering, const spec::ClusterConfig& compute, const spec::Accelerator& accelerator);

// The plan's mixed precision, decided here and nowhere else in lowering: the Accelerator's own
// argument wins over the launch config, as in Accelerate, where the launcher passes the
// config's through ACCELERATE_MIXED_PRECISION; under DeepSpeed a JSON's `fp16` / `bf16`
// sections decide, "auto" following the job's. (accelrun's CPU rehearsal later trains an fp16
// plan in bf16 and says so: the plan stays the GPU job's.)
plan::MixedPrecision LowerPrecision(Lowering& lowering, const spec::ClusterConfig& compute,
                                    const spec::Accelerator& accelerator, const Target& target);

// The process group: backend, timeout, machines and processes, rendezvous address.
plan::InitProcessGroup LowerProcessGroup(Lowering& lowering, const spec::ClusterConfig& compute,
                                         const spec::Accelerator& accelerator, const Target& target);

}  // namespace accel::lower

#endif  // ACCEL_COMPILER_LOWER_TARGET_H_
