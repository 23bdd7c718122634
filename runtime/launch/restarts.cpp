#include "runtime/launch/restarts.h"

#include <algorithm>

#include <fmt/format.h>

namespace accel::rt::launch {

std::chrono::milliseconds RestartBackoff(const RestartPolicy& policy, int restart) {
  std::chrono::milliseconds delay = policy.first_backoff;
  // Stops doubling at the cap, so a large restart count cannot overflow.
  for (int i = 1; i < restart && delay < policy.max_backoff; ++i) delay *= 2;
  return std::min(delay, policy.max_backoff);
}

bool IsRestartable(const LaunchResult& result) {
  if (result.success || result.interrupted || result.start_failed) return false;
  const ExitStatus& status = result.failed_status;
  return status.signaled || status.code != kWorkerExitUsage;
}

std::string DescribeCause(const LaunchResult& result) {
  const ExitStatus& status = result.failed_status;
  std::string who = fmt::format("rank {} (pid {})", result.failed_rank, status.pid);
  // The watchdog killed it: the signal was the launcher's, the cause its silence.
  if (result.stalled) return fmt::format("{} stopped making progress", who);
  if (status.signaled) return fmt::format("{} was killed by signal {}", who, status.signal);
  if (result.peer_failure_only) return fmt::format("{} lost a peer (exit code {})", who, status.code);
  return fmt::format("{} exited with code {}", who, status.code);
}

std::string WhyRestartsCannotWork(const Topology& topology) {
  if (topology.launched_by == "Slurm") {
    return "`--max-restarts` cannot work under Slurm: srun runs one accelrun per task, and a task "
           "restarted alone cannot rejoin the others; submit the job with `sbatch --requeue` and run "
           "`srun accelrun --resume auto ...` in it, so that a requeued job continues from its newest "
           "complete checkpoint (docs/launch.md)";
  }
  if (!topology.launched_by.empty()) {
    return fmt::format(
        "`--max-restarts` cannot work under {}: it runs one accelrun per task, and a task restarted "
        "alone cannot rejoin the others; start the whole job again with `accelrun --resume auto` instead",
        topology.launched_by);
  }
  if (topology.nnodes > 1) {
    return fmt::format(
        "`--max-restarts` cannot work across machines placed by hand: this accelrun starts {} of the "
        "job's {} ranks and cannot restart the others; start every machine's accelrun again with "
        "`--resume auto` instead",
        topology.slots.size(), topology.world_size);
  }
  return "";
}

LaunchId RestartLaunchId(const LaunchId& first, int attempt) {
  if (first.generated) return ResolveLaunchId(std::nullopt, Environment{}, /*one_launcher=*/true);
  return LaunchId{fmt::format("{}-restart-{}", first.id, attempt), first.from};
}

LaunchResult RunWithRestarts(const RestartPolicy& policy, const RestartHooks& hooks,
                             ProcessSpawner& spawner) {
  for (int attempt = 0;; ++attempt) {
    llvm::Expected<LaunchOptions> options = hooks.prepare(attempt);
    if (!options) {
      LaunchResult result;
      result.message = llvm::toString(options.takeError());
      return result;
    }
    LaunchResult result = RunWorkers(*options, spawner);
    if (!IsRestartable(result) || policy.max_restarts == 0) return result;
    if (attempt == policy.max_restarts) {
      result.message += fmt::format("\nno restart left: the job failed {} times, after {} restart{}",
                                    attempt + 1, attempt, attempt == 1 ? "" : "s");
      return result;
    }
    // The whole report, as the final failure would have it: the restart must not hide why.
    hooks.say(
        fmt::format("attempt {} of {} failed: {}", attempt + 1, policy.max_restarts + 1, result.message));
    int restart = attempt + 1;
    std::chrono::milliseconds delay = RestartBackoff(policy, restart);
    hooks.say(fmt::format("restart {} of {} after {}; {} in {:.1f} s", restart, policy.max_restarts,
                          DescribeCause(result), hooks.resume_note, delay.count() / 1000.0));
    if (!hooks.wait(delay)) {
      LaunchResult interrupted;
      interrupted.interrupted = true;
      interrupted.message = "interrupted while waiting to restart; no worker is running";
      return interrupted;
    }
  }
}

}  // namespace accel::rt::launch
