#ifndef ACCEL_RUNTIME_TOOLS_LAUNCH_COMMAND_H_
#define ACCEL_RUNTIME_TOOLS_LAUNCH_COMMAND_H_

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "compiler/plan/plan.h"
#include "runtime/launch/topology.h"

namespace accel::tools {

// The usage text of `accelrun`.
std::string LaunchUsage();

// Whether `name` (`--output-dir`) is an option of the native launcher that takes a value, read
// from its option table: script mode's detection must not take that value for a script.
bool LaunchOptionTakesValue(std::string_view name);

// The command line of `accelrun [options] <spec | plan>`.
struct LaunchCommandOptions {
  std::string input;
  // --set PATH=VALUE, in order, and --num-processes N (as `compute.num_processes=N`, after
  // them): overrides of a spec, applied before it is lowered as `accelc build --set` applies
  // them. A compiled plan takes neither.
  std::vector<std::string> overrides;
  std::optional<int> num_processes;
  std::string output_dir;
  rt::launch::PlacementFlags placement;
  std::optional<int> cpu_threads;  // --num-cpu-threads-per-process
  // --device cpu: a plan for an accelerator (device cuda, xpu, ...) runs as its rehearsal on CPU
  // processes over Gloo; --device cuda: the plan must be a CUDA plan. Unset: the plan's device,
  // which must be cpu or cuda.
  std::optional<plan::Device> device;
  bool dry_run = false;
  // `accelrun test`: the workers run the data operations' self-test instead of training.
  bool self_test = false;
  // --resume: `auto` or a checkpoint directory; empty starts fresh (docs/checkpoints.md).
  std::string resume;
  // --allow-schedule-change: a resume may change the learning-rate schedule (with a warning).
  bool allow_schedule_change = false;
  // --max-restarts: how many times a failed job is started again, resuming from its newest
  // complete checkpoint; only where this launcher starts every rank.
  std::optional<int> max_restarts;
  // --own-work-limit: seconds a rank may say nothing in its own work before the watchdog stops
  // the job (default: the plan's timeout, but at least 600; launch::OwnWorkLimit).
  std::optional<int> own_work_limit;
  // --program: the executable each rank runs instead of accelrun-worker (a user's own loop on
  // the Accelerator, docs/accelerator.md); it gets the worker's arguments and environment.
  std::string program;
  bool help = false;  // -h, --help: print the usage, start nothing
  // The arguments as given (without the program name and `test`): what each task runs when the
  // plan starts its job through mpirun.
  std::vector<std::string> args;
};

// Parses `args` (without the program name). Returns an error message for the user, or ""
// (also when `--help` is anywhere, which sets `options.help` and nothing else).
std::string ParseLaunchArguments(const std::vector<std::string>& args, LaunchCommandOptions& options);

// Compiles or loads the plan, decides the placement, then starts and supervises the workers,
// or with --dry-run prints what it would start. Returns the process exit code: 0, 1 (a worker
// failed), 2 (usage or plan errors) or 128 + the signal that interrupted it.
int RunLaunchCommand(const LaunchCommandOptions& options, const char* argv0);

}  // namespace accel::tools

#endif  // ACCEL_RUNTIME_TOOLS_LAUNCH_COMMAND_H_
