#ifndef ACCEL_RUNTIME_TOOLS_SCRIPT_COMMAND_INTERNAL_H_
#define ACCEL_RUNTIME_TOOLS_SCRIPT_COMMAND_INTERNAL_H_

#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "compiler/cli/arguments.h"
#include "llvm/Support/Error.h"
#include "runtime/launch/accelerate/launch_flags.h"
#include "runtime/launch/accelerate/launch_plan.h"
#include "runtime/launch/cluster.h"
#include "runtime/launch/launcher.h"

// What the steps of the script mode share (script_command.h is its entry): its command line
// (script_arguments.cpp), the config file (script_config.cpp), this machine's facts
// (script_host.cpp) and the processes it starts (script_processes.cpp), which
// script_command.cpp runs in order. Not for other modes.
namespace accel::tools {

// accelrun's own options in script mode, beside Accelerate's.
struct ScriptOptions {
  bool dry_run = false;
  bool json = false;
  bool help = false;
  std::optional<std::string> rdzv_id;
  // --device cpu: a GPU config's processes join one Gloo group on CPUs (ACCELERATE_USE_CPU).
  bool rehearse_on_cpu = false;
  // How long the other ranks may run on after one finished (0: no limit).
  std::chrono::milliseconds early_exit_limit{std::chrono::minutes(30)};
  // The watchdog for ranks that speak the progress protocol (ACCEL_PROGRESS_FD).
  std::chrono::milliseconds progress_timeout{std::chrono::minutes(30)};
};

// accelrun's own options of the script mode, storing into `o`.
std::vector<cli::Option> OwnOptions(ScriptOptions& o);

// The command line cut where argparse cuts it: launch options, then the script and everything
// after it, which belongs to the script.
struct CommandLine {
  std::vector<std::string> options;
  std::string config;  // a config file given as the first argument that is not an option
  std::string script;
  std::vector<std::string> script_args;
  bool has_script = false;
};

// Cuts `args` into `line`. Returns an error message for the user (an unknown option, with a
// guess), or "".
std::string Split(const std::vector<std::string>& args, CommandLine& line);

// Accelerate's default config file: $HF_HOME/accelerate/default_config.yaml, HF_HOME defaulting
// to $XDG_CACHE_HOME/huggingface, XDG_CACHE_HOME to ~/.cache.
std::string DefaultConfigFile(const rt::launch::Environment& env);

// Checks `path` as `accelc check` does and reads it as Accelerate would. Prints the findings;
// fails on an error (what Accelerate raises on or misreads) and on a file that is not an
// Accelerate config.
std::optional<rt::launch::accelerate::ConfigFile> CheckConfig(const std::string& path);

// What `accelerate launch` would ask of this machine (GPUs, cores, python, ports, mpirun), under
// the launcher's environment `env`.
rt::launch::accelerate::Host ThisHost(const rt::launch::Environment& env);

// `bytes` random bytes as lower-case hex.
std::string RandomHex(int bytes);

// One process the launch starts, with its rank for the dry run's listing.
struct Process {
  int rank = 0;
  int local_rank = 0;
  rt::launch::WorkerSpec spec;
};

// The torchrun workers this launcher starts. Under srun or mpirun, the scheduler's placement
// wins, as it does for plans: with one task per machine each task is that machine's launcher
// (its machine rank from the scheduler unless `--machine_rank` was given); with one task per
// rank each task starts its own rank. The rendezvous host is then the scheduler's first node
// unless `main_process_ip` was given. `notes` says what the scheduler decided.
llvm::Expected<std::vector<rt::launch::accelerate::WorkerPlace>> Places(
    rt::launch::accelerate::ScriptLaunch& plan, const rt::launch::accelerate::LaunchNamespace& ns,
    const rt::launch::Environment& env, std::vector<std::string>& notes);

// Where torch's `@record` writes a failing worker's error, as torchrun lays it out: one file per
// attempt and local rank under `root`.
std::string ErrorFile(const std::string& root, int attempt, int local_rank);

// The processes of attempt `restart` at `places` (one process for a launcher that is not
// torchrun): the launch's command, its variables and torchrun's per worker, ACCEL_LAUNCH_ID when
// `launch_id` is set.
std::vector<Process> Processes(const rt::launch::accelerate::ScriptLaunch& plan,
                               const std::vector<rt::launch::accelerate::WorkerPlace>& places,
                               const rt::launch::Environment& env, int restart, const std::string& launch_id,
                               const std::string& error_root);

// --dry-run's listing of `processes`, as text or as JSON (with the launcher and warnings).
void PrintDryRunText(const std::vector<Process>& processes);
void PrintDryRunJson(const rt::launch::accelerate::ScriptLaunch& plan, const std::vector<Process>& processes);

// The line that says how `script` is launched, with `config` when one was read.
std::string Summary(const rt::launch::accelerate::ScriptLaunch& plan, size_t processes,
                    const std::string& script, const std::string& config);

// What Accelerate appends to `.deepspeed_env` for DeepSpeed's runner to export on every machine:
// each variable whose name and value are non-empty and free of `;`, newlines, `<`, `>` and
// spaces. Only the launch's variables: Accelerate writes its whole environment, the user's
// tokens included, into a file in the working directory.
void WriteDeepSpeedEnv(const std::map<std::string, std::string>& vars);

}  // namespace accel::tools

#endif  // ACCEL_RUNTIME_TOOLS_SCRIPT_COMMAND_INTERNAL_H_
