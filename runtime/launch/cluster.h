#ifndef ACCEL_RUNTIME_LAUNCH_CLUSTER_H_
#define ACCEL_RUNTIME_LAUNCH_CLUSTER_H_

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "llvm/Support/Error.h"

namespace accel::rt::launch {

// Environment variables by name; tests pass their own instead of the process environment.
using Environment = std::map<std::string, std::string>;

// The process environment as a map.
Environment CurrentEnvironment();

// Who placed this launcher: `--launcher auto|local|slurm|mpi`.
enum class LauncherKind { kAuto, kLocal, kSlurm, kMpi };

// Parses `auto`, `local`, `slurm` or `mpi`.
std::optional<LauncherKind> ParseLauncherKind(std::string_view text);

// This launcher's place when a scheduler started it as one task of many: it then starts
// exactly one worker, with the scheduler's rank.
struct ClusterTask {
  std::string scheduler;  // `Slurm`, `OpenMPI`, `MVAPICH2`, `MPI (PMI)`
  int rank = 0;
  int world_size = 1;
  int local_rank = 0;
  int local_world_size = 1;
  int node_rank = 0;
  int nnodes = 1;
  // The rendezvous host the scheduler implies (Slurm: the first node of the job), or empty.
  std::string master_addr;
  std::string master_addr_from;  // the variable it came from, for the startup line
  // CPUs the scheduler gave this task (Slurm's SLURM_CPUS_PER_TASK), or 0 when it did not say.
  int cpus_per_task = 0;
};

// Reads the scheduler's variables from `env`. With kAuto, the first of OpenMPI
// (OMPI_COMM_WORLD_*), MVAPICH2 (MV2_COMM_WORLD_*), PMI (PMI_RANK/PMI_SIZE) and Slurm
// (SLURM_PROCID/SLURM_NTASKS in an `srun` step, i.e. with SLURM_STEP_ID) that is present;
// MPI comes first because `mpirun` inside a Slurm allocation also inherits Slurm's variables.
// kSlurm and kMpi require their variables. Empty for kLocal and for kAuto with no scheduler.
// Fails naming the variable when one is missing (when forced), not a number, or out of range.
llvm::Expected<std::optional<ClusterTask>> DetectCluster(const Environment& env, LauncherKind kind);

// Expands a Slurm host list (`node[01-03,07],gpu5`, `rack1-n[2-4]`, `r[1-2]-n[1-2]`) into host
// names, in order; zero padding is kept (`n[08-10]` → n08 n09 n10). Fails with the position
// of the problem for an empty list or host, an unbalanced bracket, a range that is not
// `a-b` with digits and a <= b, or more than 100000 hosts.
llvm::Expected<std::vector<std::string>> ExpandNodeList(std::string_view list);

}  // namespace accel::rt::launch

#endif  // ACCEL_RUNTIME_LAUNCH_CLUSTER_H_
