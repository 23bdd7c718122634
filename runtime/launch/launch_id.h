#ifndef ACCEL_RUNTIME_LAUNCH_LAUNCH_ID_H_
#define ACCEL_RUNTIME_LAUNCH_LAUNCH_ID_H_

#include <optional>
#include <string>
#include <string_view>

#include "runtime/launch/cluster.h"

namespace accel::rt::launch {

// The launch id every worker receives. Rank 0 publishes it in the rendezvous store; a rank
// whose id differs belongs to another launch that reached this job's address and port (two
// jobs on one node sharing a port), and is refused before it takes any rank's place.
inline constexpr const char* kEnvLaunchId = "ACCEL_LAUNCH_ID";

struct LaunchId {
  std::string id;          // empty when nothing tells this launch from another
  std::string from;        // for the startup line: `SLURM_JOB_ID.SLURM_STEP_ID`, `--rdzv-id`, ...
  bool generated = false;  // made up by this launcher: new for each launch
};

// The id a scheduler gives every task of one launch, and no other launch: OpenMPI's job id,
// the PMIx namespace, or Slurm's job and step ids. Empty when none is set (MPICH's hydra, for
// one, exports no job id).
std::optional<LaunchId> SchedulerLaunchId(const Environment& env);

// The id of this launch: `--rdzv-id` if given, else the scheduler's, else, when this launcher
// starts every rank itself (`one_launcher`), a random one. Otherwise (launchers placed by hand
// on several machines) empty: they cannot agree on one without `--rdzv-id`.
LaunchId ResolveLaunchId(const std::optional<std::string>& flag, const Environment& env, bool one_launcher);

// The rendezvous port of a scheduler's launch whose plan leaves the port unset: a hash of the
// launch id into [10000, 30000), below Linux's ephemeral ports, so two jobs sharing a node
// almost never meet on one port (both would otherwise use the plan's 29500).
int DerivedPort(std::string_view launch_id);

}  // namespace accel::rt::launch

#endif  // ACCEL_RUNTIME_LAUNCH_LAUNCH_ID_H_
