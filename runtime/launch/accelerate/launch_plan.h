#ifndef ACCEL_RUNTIME_LAUNCH_ACCELERATE_LAUNCH_PLAN_H_
#define ACCEL_RUNTIME_LAUNCH_ACCELERATE_LAUNCH_PLAN_H_

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "llvm/Support/Error.h"
#include "runtime/launch/accelerate/launch_flags.h"
#include "runtime/launch/mpirun.h"

namespace accel::rt::launch::accelerate {

// The mpirun a config's `mpirun_config` starts the job with, and its flavor (Open MPI's flags
// differ from Intel MPI's and MVAPICH's).
struct Mpirun {
  std::string path;
  MpiFlavor flavor = MpiFlavor::kHydra;
};

// What `accelerate launch` would ask of this machine: the answers Accelerate gets from torch and
// the operating system, supplied by the caller (tests pass their own).
struct Host {
  std::map<std::string, std::string> env;  // the launcher's environment
  int cuda_devices = 0;                    // torch.cuda.device_count()
  int physical_cores = 1;                  // psutil.cpu_count(logical=False)
  int logical_cpus = 1;                    // os.cpu_count()
  std::string python;                      // sys.executable: the interpreter scripts run with
  std::string cwd;                         // the working directory, absolute
  std::function<bool(int port)> port_in_use = [](int) { return false; };
  std::function<int()> free_port = [] { return 0; };
  // A new random run id (torchrun's uuid4 for a standalone launch).
  std::function<std::string()> new_run_id = [] { return std::string("standalone"); };
  // mpirun or mpiexec from PATH, or why there is none.
  std::function<llvm::Expected<Mpirun>()> find_mpirun = [] {
    return llvm::Expected<Mpirun>(
        llvm::createStringError(llvm::inconvertibleErrorCode(), "mpirun or mpiexec were not found"));
  };
};

// How Accelerate starts the script.
enum class Runner {
  kProcess,   // one process, `command` as is: the simple launcher (NO, MULTI_CPU, --cpu), or mpirun
  kTorchrun,  // torchrun's agent: `nproc_per_node` workers on this machine, each running `command`
};

// The launch `accelerate launch` performs for a command line and config file: its topology, the
// command, and the variables it adds to the environment, computed as Accelerate's
// `_validate_launch_command` and `prepare_*_env` compute them.
struct ScriptLaunch {
  Runner runner = Runner::kProcess;
  std::string launcher;              // `simple`, `mpirun`, `torchrun` (MULTI_GPU, FSDP, ...), `deepspeed`
  std::string distributed_type;      // what decided it: `MULTI_GPU`, `FSDP`, ... or `NO`
  std::vector<std::string> command;  // the process's argv (for torchrun, each worker's)
  std::map<std::string, std::string> env;  // what Accelerate sets or changes (not the inherited rest)
  // torchrun's placement (Runner::kTorchrun).
  int nproc_per_node = 1;
  int nnodes = 1;
  int node_rank = 0;
  std::string master_addr = "127.0.0.1";
  int master_port = 29500;
  int max_restarts = 0;
  std::string role = "default";
  std::string run_id = "none";
  // DeepSpeed's multi-machine runner: Accelerate also appends the variables to `.deepspeed_env`
  // in the working directory, which the runner exports on every machine.
  bool deepspeed_env_file = false;
  // Accelerate's own warnings (defaults it filled in, a port in use).
  std::vector<std::string> warnings;
};

// The config file as Accelerate's loader reads it (`yaml.safe_load`, or `json.load`), before
// `process_config`: the top-level mapping.
struct ConfigFile {
  std::string path;
  PyDict values;
};

// Computes the launch of `script` with `script_args` for the parsed command line `ns` and the
// config file (the `--config_file`, or Accelerate's default config when it exists). Fails with
// Accelerate's own reason where `accelerate launch` raises, and where the launch needs what
// accelrun does not start (a TPU pod, SageMaker, DeepSpeed's pdsh launcher), saying what to do.
llvm::Expected<ScriptLaunch> PlanScriptLaunch(LaunchNamespace ns, const std::optional<ConfigFile>& config,
                                              const std::string& script,
                                              const std::vector<std::string>& script_args, const Host& host);

// Accelerate's check of the rendezvous port, made once the placement is final (a scheduler may
// have changed it): on machine 0 of a torchrun launch, a port something already listens on is
// replaced by a free one when this launcher starts every rank (Accelerate's standalone mode),
// else refused, as Accelerate refuses it across machines: the other ranks could not learn the
// new one.
llvm::Error CheckPort(ScriptLaunch& launch, const Host& host, bool starts_every_rank);

// Where one worker of a torchrun launch sits in the job.
struct WorkerPlace {
  int rank = 0;
  int local_rank = 0;
  int local_world_size = 1;
  int world_size = 1;
  int node_rank = 0;
  int nnodes = 1;
};

// The workers torchrun starts on this machine: local ranks 0 to nproc_per_node - 1 of machine
// `node_rank`.
std::vector<WorkerPlace> LocalPlaces(const ScriptLaunch& launch);

// torchrun's per-worker variables for the worker at `place` (its agent's `_start_workers`),
// after `restart_count` restarts: RANK, LOCAL_RANK, GROUP_RANK, ROLE_RANK, ROLE_NAME,
// LOCAL_WORLD_SIZE, WORLD_SIZE, GROUP_WORLD_SIZE, ROLE_WORLD_SIZE, MASTER_ADDR, MASTER_PORT,
// TORCHELASTIC_RESTART_COUNT, TORCHELASTIC_MAX_RESTARTS, TORCHELASTIC_RUN_ID,
// TORCHELASTIC_SIGNALS_TO_HANDLE, TORCHELASTIC_ERROR_FILE (`error_file`, where torch's `@record`
// writes a failing worker's error; unset when empty), TORCH_NCCL_ASYNC_ERROR_HANDLING (unless
// `inherited` has it), and OMP_NUM_THREADS=1 for
// several workers when nothing set it. Not TORCHELASTIC_USE_AGENT_STORE: accelrun runs no agent
// store, and a worker told to use one would wait for it forever.
std::map<std::string, std::string> TorchrunWorkerEnvironment(
    const ScriptLaunch& launch, const WorkerPlace& place, int restart_count, const std::string& error_file,
    const std::map<std::string, std::string>& inherited);

}  // namespace accel::rt::launch::accelerate

#endif  // ACCEL_RUNTIME_LAUNCH_ACCELERATE_LAUNCH_PLAN_H_
