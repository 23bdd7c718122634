#ifndef ACCEL_RUNTIME_TOOLS_WORKER_COMMAND_H_
#define ACCEL_RUNTIME_TOOLS_WORKER_COMMAND_H_

#include <string>

namespace accel::tools {

// The arguments the launcher gives `accelrun-worker`.
struct WorkerCommandOptions {
  // The plan to run (the launcher's copy in the output directory).
  std::string plan;
  std::string output_dir;
  // The directory the plan's relative input paths are relative to: the directory of the plan
  // the user gave accelrun, or the working directory for a spec (plan_paths.h). Empty: the
  // working directory.
  std::string inputs_dir;
  // `--resume` (WorkerContext::resume) and `--allow-schedule-change`.
  std::string resume;
  bool allow_schedule_change = false;
  // The launcher's standard output is a terminal: rank 0 redraws its progress line, which the
  // launcher relays as it comes.
  bool progress_tty = false;
  // `accelrun test`: the rank runs the data operations' self-test over the job's process group
  // instead of training, and rank 0 prints each check.
  bool self_test = false;
};

// `accelrun-worker <plan.json> --output-dir <dir>`: one rank, placed by the launcher's
// environment. Exits 0, or kWorkerExitFailed, kWorkerExitUsage (unreadable plan) or
// kWorkerExitPeerFailure (a collective or the rendezvous failed) from runtime/launch/launcher.h.
int RunWorkerCommand(const WorkerCommandOptions& options);

}  // namespace accel::tools

#endif  // ACCEL_RUNTIME_TOOLS_WORKER_COMMAND_H_
