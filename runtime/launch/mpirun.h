#ifndef ACCEL_RUNTIME_LAUNCH_MPIRUN_H_
#define ACCEL_RUNTIME_LAUNCH_MPIRUN_H_

#include <string>
#include <string_view>
#include <vector>

// Starting a job through mpirun, as `accelerate launch` does for a CPU job whose config has
// `mpirun_config.mpirun_hostfile` (docs/launch.md): one task per process, each task an accelrun
// that finds its rank in MPI's variables and runs one worker.
namespace accel::rt::launch {

// The two families of mpirun command lines accelerate launch knows.
enum class MpiFlavor {
  kOpenMpi,  // `--hostfile`, `--npernode`, `--bind-to socket`
  kHydra,    // Intel MPI, MPICH and MVAPICH: `-f`, `-ppn`
};

// Which family `mpirun --version` printed `version` for: Open MPI when it says "Open MPI" (as
// accelerate launch decides) or "OpenRTE" (Open MPI's banner under its other names), else
// Hydra's flags.
MpiFlavor MpiFlavorFromVersion(std::string_view version);

// The flavor of the mpirun at `path`, from what `path --version` prints (waited for up to 30 s;
// Hydra's flags when it prints nothing).
MpiFlavor DetectMpiFlavor(const std::string& path);

// The name of a flavor for the startup line: "Open MPI" or "Intel MPI/MPICH".
std::string_view MpiFlavorName(MpiFlavor flavor);

// The command line accelerate launch builds: `mpirun` (the program found on PATH), the host
// file, the processes per machine, the total number of processes, Open MPI's binding, then
// `task` (the program each task runs, with its arguments).
std::vector<std::string> MpirunCommand(const std::string& mpirun, MpiFlavor flavor,
                                       const std::string& hostfile, int processes_per_machine,
                                       int num_processes, const std::vector<std::string>& task);

// What each task runs: `accelrun` (an absolute path) with the launcher's own arguments `args`,
// `--launcher` forced to `mpi`, so that a task without MPI's variables fails naming them instead
// of starting mpirun again.
std::vector<std::string> MpirunTask(const std::string& accelrun, const std::vector<std::string>& args);

}  // namespace accel::rt::launch

#endif  // ACCEL_RUNTIME_LAUNCH_MPIRUN_H_
