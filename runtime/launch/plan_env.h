#ifndef ACCEL_RUNTIME_LAUNCH_PLAN_ENV_H_
#define ACCEL_RUNTIME_LAUNCH_PLAN_ENV_H_

#include <map>
#include <optional>
#include <string>

#include "compiler/plan/plan.h"

namespace accel::rt::launch {

// The Accelerate variables of the worker environment that the plan determines (catalog §4.7):
// ACCELERATE_MIXED_PRECISION (the train step's precision), ACCELERATE_USE_CPU (`True`/`False`,
// as Accelerate writes it, from `compute.use_cpu` or `accelerator.cpu`), ACCELERATE_DEBUG_MODE
// (`true`, only when `compute.debug`), ACCELERATE_CPU_AFFINITY (`1`, only when
// `compute.enable_cpu_affinity`). A value missing from the plan's configuration counts as
// Accelerate's default.
std::map<std::string, std::string> AccelerateEnvironment(const plan::Plan& plan);

// Whether the spec chose the rendezvous port: false when the plan's configuration records
// `compute.main_process_port` as unset (its port is then only the default). A plan without a
// configuration counts as chosen.
bool PortChosenBySpec(const plan::Plan& plan);

// Whether the plan runs on CPUs: a Gloo process group, or `use_cpu`/`cpu` set.
bool IsCpuRun(const plan::Plan& plan);

// The intra-op threads of each worker and why.
struct ThreadChoice {
  // OMP_NUM_THREADS for the launcher to set; empty when the inherited value stands.
  std::optional<std::string> set;
  std::string value;  // the value the workers run with
  std::string from;   // what decided it, for the placement line
};

// OMP_NUM_THREADS for each worker (catalog LCH-013; the plan has no thread count): `threads_flag`
// when given; the `inherited` value when set; `cpus_per_worker` (a scheduler's CPUs per task)
// when above 0; on a CPU run `physical_cores / local_processes` when that is above 1; else 1.
ThreadChoice ChooseThreads(std::optional<int> threads_flag, const std::optional<std::string>& inherited,
                           int cpus_per_worker, bool cpu_run, int physical_cores, int local_processes);

// Physical cores of this machine (distinct core ids in /proc/cpuinfo), or the logical CPU
// count when that file says nothing.
int PhysicalCoreCount();

}  // namespace accel::rt::launch

#endif  // ACCEL_RUNTIME_LAUNCH_PLAN_ENV_H_
