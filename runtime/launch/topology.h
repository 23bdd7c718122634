#ifndef ACCEL_RUNTIME_LAUNCH_TOPOLOGY_H_
#define ACCEL_RUNTIME_LAUNCH_TOPOLOGY_H_

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "llvm/Support/Error.h"
#include "runtime/launch/cluster.h"

namespace accel::rt::launch {

// Environment variables every worker receives (torchrun's names are set too, so code written
// for torchrun finds its rank).
inline constexpr const char* kEnvRank = "ACCEL_RANK";
inline constexpr const char* kEnvLocalRank = "ACCEL_LOCAL_RANK";
inline constexpr const char* kEnvWorldSize = "ACCEL_WORLD_SIZE";
inline constexpr const char* kEnvMasterAddr = "ACCEL_MASTER_ADDR";
inline constexpr const char* kEnvMasterPort = "ACCEL_MASTER_PORT";

// One worker this launcher starts.
struct Slot {
  int rank = 0;
  int local_rank = 0;
};

// Where this launcher's workers sit in the job.
struct Topology {
  std::string launched_by;  // empty for a local launch; else `Slurm`, `OpenMPI`, ...
  int world_size = 1;
  int nnodes = 1;
  int node_rank = 0;
  int local_world_size = 1;
  std::vector<Slot> slots;  // every local rank (local launch), or this task's one rank
  // CPUs the scheduler gave each worker (one worker per task), or 0 when it did not say.
  int cpus_per_worker = 0;
  std::string master_addr = "127.0.0.1";
  int master_port = 0;
};

// RANK, LOCAL_RANK, WORLD_SIZE, LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT and their ACCEL_
// twins for the worker in `slot`.
std::map<std::string, std::string> RankEnvironment(const Topology& topology, const Slot& slot);

// What this launcher's own lines start with. Empty for the launcher that runs rank 0: it speaks
// for the job, alone. Every other launcher of the job (one per srun or mpirun task, or per
// machine of a launch by hand) marks its lines with `[rank N] ` when it runs one worker, or
// `[node N] ` when it runs several, as worker lines are marked.
std::string LauncherPrefix(const Topology& topology);

// What the plan's init_process_group step asks for.
struct PlanPlacement {
  int num_machines = 1;
  int processes_per_machine = 1;
  std::string main_process_ip = "127.0.0.1";
  int main_process_port = 29500;
  // Whether the spec set the port; if not, a scheduler's launch derives one from its job id.
  bool main_process_port_set = true;
};

// The command line's placement flags; unset ones defer to the scheduler or the plan.
struct PlacementFlags {
  LauncherKind launcher = LauncherKind::kAuto;
  std::optional<int> nnodes;
  std::optional<int> node_rank;
  std::optional<int> nproc_per_node;
  std::optional<std::string> master_addr;
  std::optional<int> master_port;      // 0 asks for a free port (one machine only)
  std::optional<std::string> rdzv_id;  // the launch id every launcher of the job shares
};

struct Placement {
  Topology topology;
  // `launched by Slurm: rank 3 of 8 (local rank 1 of 4, node 1 of 2)` or
  // `local launch: 2 processes on 1 machine`.
  std::string summary;
  std::string rendezvous_from;  // where the address and port came from
  // Each value that overrides the plan, said explicitly (`--nproc-per-node 4 overrides ...`).
  std::vector<std::string> notes;
};

// Decides who runs where. A scheduler (per `flags.launcher`, detected in `env`) wins over the
// plan's process counts, with a note when they differ; --nnodes, --node-rank and
// --nproc-per-node then are errors. Locally, the flags win over the plan, with a note. The
// rendezvous address: --master-addr, then (scheduler only) MASTER_ADDR, the scheduler's first
// node, then the plan's. The port: --master-port, then (scheduler only) MASTER_PORT, then on
// one machine without a scheduler `pick_port()`, then (scheduler only, the spec leaving the
// port unset) one derived from the scheduler's job id, else the plan's. Fails with a message for
// the user for out-of-range values and conflicting flags.
llvm::Expected<Placement> ResolvePlacement(const PlanPlacement& plan, const PlacementFlags& flags,
                                           const Environment& env, const std::function<int()>& pick_port);

}  // namespace accel::rt::launch

#endif  // ACCEL_RUNTIME_LAUNCH_TOPOLOGY_H_
