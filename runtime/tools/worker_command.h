#ifndef ACCEL_RUNTIME_TOOLS_WORKER_COMMAND_H_
#define ACCEL_RUNTIME_TOOLS_WORKER_COMMAND_H_

#include <string>

#include "runtime/train/worker_arguments.h"

namespace accel::tools {

// The arguments the launcher gives `accelrun-worker`.
struct WorkerCommandOptions {
  // The plan, where its inputs are, and what the launch asks (runtime/train/worker_arguments.h).
  rt::train::WorkerArguments worker;
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
