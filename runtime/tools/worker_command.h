#ifndef ACCEL_RUNTIME_TOOLS_WORKER_COMMAND_H_
#define ACCEL_RUNTIME_TOOLS_WORKER_COMMAND_H_

#include <string>

namespace accel::tools {

// `accelrun-worker <plan.json> --output-dir <dir>`: one rank, placed by the launcher's
// environment. Exits 0, or kWorkerExitFailed, kWorkerExitUsage (unreadable plan) or
// kWorkerExitPeerFailure (a collective or the rendezvous failed) from runtime/launch/launcher.h.
// `resume` is `--resume` (WorkerContext::resume). With `self_test` (`accelrun test`), the rank
// runs the data operations' self-test over the job's process group instead of training, and
// rank 0 prints each check.
int RunWorkerCommand(const std::string& plan_path, const std::string& output_dir,
                     const std::string& resume = "", bool self_test = false);

}  // namespace accel::tools

#endif  // ACCEL_RUNTIME_TOOLS_WORKER_COMMAND_H_
