#ifndef ACCEL_RUNTIME_LAUNCH_REHEARSAL_H_
#define ACCEL_RUNTIME_LAUNCH_REHEARSAL_H_

#include <string>
#include <string_view>
#include <vector>

#include "compiler/plan/plan.h"

// A GPU job rehearsed on the CPU (`accelrun --device cpu`, or a plan compiled with
// `compute.use_cpu`): the same steps, sharding and world size, on CPU processes over Gloo, so
// that a job meant for a GPU cluster can be tried on one machine first (docs/launch.md).
namespace accel::rt::launch {

// Turns a plan whose device is an accelerator (cuda, xpu, ...) into its rehearsal on the CPU:
// device cpu, `rehearsal` true, backend gloo. A rehearsal (one made here or compiled as one) with fp16 runs
// bf16 without loss scaling, as rehearsals always have (the worker runs fp16 with its loss scaler
// on the CPU too, which tests/e2e/loss_scaling_test.py checks on its own). Returns what changed, one line each, for the
// launcher to print; empty for a plan that is neither. The plan's hash is recomputed when
// anything changed. A CPU plan that is no rehearsal is left as it is.
std::vector<std::string> RehearseOnCpu(plan::Plan& plan);

// The line that opens a rehearsal's output: which accelerator job, on how many CPU processes.
std::string RehearsalBanner(const plan::Plan& plan);

// The accelerator a plan's device names, for messages: "CUDA GPUs", "Intel XPUs", ...
std::string_view DeviceDescription(plan::Device device);

// The error for a plan for an accelerator other than CUDA GPUs (device xpu, npu, ...), which
// accelrun's workers cannot compute on: it names `--device cpu`, the way to rehearse it here.
std::string OtherAcceleratorError(const plan::Plan& plan, const std::string& input);

// The error for a GPU plan on a host whose LibTorch sees no CUDA device (`why`, e.g. "the
// workers' LibTorch 2.11.0 (CUDA 13.0) sees no CUDA device"), suggesting the rehearsal.
std::string NoCudaError(const plan::Plan& plan, const std::string& input, const std::string& why);

}  // namespace accel::rt::launch

#endif  // ACCEL_RUNTIME_LAUNCH_REHEARSAL_H_
