#include "runtime/launch/launch_id.h"

#include <cstdint>
#include <random>

#include <fmt/format.h>

namespace accel::rt::launch {
namespace {

std::optional<std::string> Value(const Environment& env, const char* name) {
  auto it = env.find(name);
  if (it == env.end() || it->second.empty()) return std::nullopt;
  return it->second;
}

}  // namespace

std::optional<LaunchId> SchedulerLaunchId(const Environment& env) {
  // MPI first, as DetectCluster: mpirun inside a Slurm allocation inherits Slurm's variables,
  // but only mpirun's job id is one per launch.
  if (std::optional<std::string> job = Value(env, "OMPI_MCA_ess_base_jobid"))
    return LaunchId{"openmpi-" + *job, "OMPI_MCA_ess_base_jobid"};
  if (std::optional<std::string> space = Value(env, "PMIX_NAMESPACE"))
    return LaunchId{"pmix-" + *space, "PMIX_NAMESPACE"};
  std::optional<std::string> job = Value(env, "SLURM_JOB_ID");
  std::optional<std::string> step = Value(env, "SLURM_STEP_ID");
  // Without a step id this is an allocation's batch script, not one launch of its tasks.
  if (job && step) return LaunchId{fmt::format("slurm-{}.{}", *job, *step), "SLURM_JOB_ID.SLURM_STEP_ID"};
  return std::nullopt;
}

LaunchId ResolveLaunchId(const std::optional<std::string>& flag, const Environment& env, bool one_launcher) {
  if (flag) return LaunchId{*flag, "--rdzv-id"};
  if (std::optional<LaunchId> scheduler = SchedulerLaunchId(env)) return *scheduler;
  if (!one_launcher) return LaunchId{};
  std::random_device entropy;
  uint64_t random = (static_cast<uint64_t>(entropy()) << 32) | entropy();
  return LaunchId{fmt::format("local-{:016x}", random), "this launcher", /*generated=*/true};
}

int DerivedPort(std::string_view launch_id) {
  uint32_t hash = 2166136261u;  // FNV-1a: stable across builds and machines, unlike std::hash
  for (unsigned char c : launch_id) hash = (hash ^ c) * 16777619u;
  return 10000 + static_cast<int>(hash % 20000);
}

}  // namespace accel::rt::launch
