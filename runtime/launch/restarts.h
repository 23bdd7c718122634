#ifndef ACCEL_RUNTIME_LAUNCH_RESTARTS_H_
#define ACCEL_RUNTIME_LAUNCH_RESTARTS_H_

#include <chrono>
#include <functional>
#include <string>

#include "llvm/Support/Error.h"
#include "runtime/launch/launch_id.h"
#include "runtime/launch/launcher.h"
#include "runtime/launch/process.h"
#include "runtime/launch/topology.h"

// Elastic restarts, as torchrun's `--max-restarts`: a job whose worker died or failed is
// stopped as a whole and started again, each new attempt resuming from the newest complete
// checkpoint, until it succeeds or the restarts run out (docs/launch.md).
namespace accel::rt::launch {

struct RestartPolicy {
  // How many times a failed job is started again; 0 lets the first failure stand.
  int max_restarts = 0;
  // The wait before the first restart; doubled for each one after, up to `max_backoff`. A
  // failure that repeats at once (a worker that crashes on start) then costs little.
  std::chrono::milliseconds first_backoff{1000};
  std::chrono::milliseconds max_backoff{30000};
};

// The wait before restart `restart` (1 for the first): `first_backoff` doubled `restart - 1`
// times, at most `max_backoff`.
std::chrono::milliseconds RestartBackoff(const RestartPolicy& policy, int restart);

// Whether starting the job again could end otherwise: a worker died or failed. Not when the
// job succeeded, the user interrupted it, a worker could not be started, or a worker exited
// with kWorkerExitUsage (a plan or arguments it cannot read, which fail the same way again).
bool IsRestartable(const LaunchResult& result);

// The failure a restart follows, in a few words: `rank 1 (pid 42) was killed by signal 9`,
// `rank 0 (pid 41) exited with code 1`, `rank 0 (pid 41) lost a peer (exit code 3)`.
std::string DescribeCause(const LaunchResult& result);

// Why restarts cannot work for a launcher placed as `topology`, or "" when they can: only a
// launcher that starts every rank of the job can stop and start them all. Under srun or mpirun
// (one launcher per task) or by hand across machines, one launcher restarting its own ranks
// could never rejoin the others; the message says what to do instead (for Slurm, requeue).
std::string WhyRestartsCannotWork(const Topology& topology);

// The launch id of restart `attempt` (1 for the first restart), so that a straggler of an
// earlier attempt is refused at the new rendezvous: a new random id when `first` was made up
// by this launcher, else `first` with `-restart-<attempt>` appended (`--rdzv-id` given).
LaunchId RestartLaunchId(const LaunchId& first, int attempt);

// What RunWithRestarts asks of the caller.
struct RestartHooks {
  // The workers of attempt `attempt`: 0 for the first launch, then one per restart. Each
  // attempt needs its own rendezvous (port, launch id) and resumes from the newest complete
  // checkpoint. An error ends the job with that message.
  std::function<llvm::Expected<LaunchOptions>(int attempt)> prepare;
  // Sleeps `delay`, returning false as soon as the user interrupts (nothing is restarted).
  std::function<bool(std::chrono::milliseconds delay)> wait;
  // A line for the user about a failed attempt or a restart; no final newline.
  std::function<void(const std::string& line)> say;
  // What a restart resumes from, for the restart line: `resuming from the newest complete
  // checkpoint` or, when the plan saves none, `starting over: the plan saves no checkpoints`.
  std::string resume_note;
};

// Runs attempt 0, and after each restartable failure (IsRestartable) waits RestartBackoff,
// says why it restarts (`restart 1 of 2 after rank 1 (pid 42) was killed by signal 9; resuming
// from the newest complete checkpoint in 1.0 s`)
// and runs the next attempt, at most `policy.max_restarts` times. Returns the last attempt's
// result; when the restarts ran out, its message also says how many there were. Every worker
// of an attempt has ended before the next one starts (RunWorkers never returns earlier).
LaunchResult RunWithRestarts(const RestartPolicy& policy, const RestartHooks& hooks, ProcessSpawner& spawner);

}  // namespace accel::rt::launch

#endif  // ACCEL_RUNTIME_LAUNCH_RESTARTS_H_
