// Elastic restarts against scripted children: which failures are restarted, how long each
// restart waits, what the user is told, and when the failure stands. No process is started.
#include <gtest/gtest.h>

#include <signal.h>

#include <string>
#include <vector>

#include "runtime/launch/launcher.h"
#include "runtime/launch/restarts.h"
#include "tests/unit/fake_spawner.h"

namespace accel::rt::launch {
namespace {

using std::chrono::milliseconds;

// Runs RunWithRestarts over `spawner` with two-worker attempts; attempt `n` plays `scripts[n]`
// (given the worker index of its first worker), and records what the hooks saw.
struct Recorder {
  std::vector<int> attempts;
  std::vector<milliseconds> waits;
  std::vector<std::string> said;
  bool interrupt_wait = false;

  LaunchResult Run(const RestartPolicy& policy, FakeSpawner& spawner,
                   const std::vector<std::function<void(FakeSpawner&, int first)>>& scripts) {
    RestartHooks hooks;
    hooks.resume_note = "resuming from the newest complete checkpoint";
    hooks.prepare = [&, this](int attempt) -> llvm::Expected<LaunchOptions> {
      attempts.push_back(attempt);
      // Scripted now: the last attempt's children have all ended and been reaped.
      scripts.at(attempt)(spawner, 2 * attempt);
      LaunchOptions options;
      for (int rank = 0; rank < 2; ++rank) options.workers.push_back({rank, {"/fake/accelrun-worker"}, {}});
      options.grace = milliseconds(1000);
      options.root_cause_window = std::chrono::minutes(5);
      options.print = [](OutputStream, std::string_view) {};
      return options;
    };
    hooks.wait = [this](milliseconds delay) {
      waits.push_back(delay);
      return !interrupt_wait;
    };
    hooks.say = [this](const std::string& line) { said.push_back(line); };
    return RunWithRestarts(policy, hooks, spawner);
  }
};

// Attempt scripts: rank 1 is SIGKILLed; rank 0 exits with `code`; both succeed.
void RankOneKilled(FakeSpawner& spawner, int first) { spawner.End(first + 1, Killed(SIGKILL)); }
auto RankZeroExits(int code) {
  return [code](FakeSpawner& spawner, int first) { spawner.End(first, Exited(code)); };
}
void BothSucceed(FakeSpawner& spawner, int first) {
  spawner.End(first, Exited(0));
  spawner.End(first + 1, Exited(0));
}

TEST(Restarts, BackoffDoublesFromOneSecondUpToThirty) {
  RestartPolicy policy;
  std::vector<long> seconds;
  for (int restart = 1; restart <= 7; ++restart)
    seconds.push_back(RestartBackoff(policy, restart).count() / 1000);
  EXPECT_EQ(seconds, (std::vector<long>{1, 2, 4, 8, 16, 30, 30}));
  EXPECT_EQ(RestartBackoff(policy, 1000).count(), 30000);
}

TEST(Restarts, OnlyWorkerFailuresAreRestartable) {
  LaunchResult killed;
  killed.failed_status = Killed(SIGKILL);
  EXPECT_TRUE(IsRestartable(killed));
  LaunchResult failed;
  failed.failed_status = Exited(kWorkerExitFailed);
  EXPECT_TRUE(IsRestartable(failed));
  LaunchResult peer;
  peer.failed_status = Exited(kWorkerExitPeerFailure);
  EXPECT_TRUE(IsRestartable(peer));
  // Would fail the same way again: a plan or arguments the worker cannot use.
  LaunchResult usage;
  usage.failed_status = Exited(kWorkerExitUsage);
  EXPECT_FALSE(IsRestartable(usage));
  LaunchResult interrupted = killed;
  interrupted.interrupted = true;
  EXPECT_FALSE(IsRestartable(interrupted));
  LaunchResult unstartable;
  unstartable.start_failed = true;
  EXPECT_FALSE(IsRestartable(unstartable));
  LaunchResult success;
  success.success = true;
  EXPECT_FALSE(IsRestartable(success));
}

TEST(Restarts, AKilledWorkerIsRestartedAndTheJobSucceeds) {
  FakeSpawner spawner;
  Recorder recorder;
  LaunchResult result = recorder.Run({.max_restarts = 2}, spawner, {RankOneKilled, BothSucceed});
  EXPECT_TRUE(result.success) << result.message;
  EXPECT_EQ(recorder.attempts, (std::vector<int>{0, 1}));
  EXPECT_EQ(recorder.waits, (std::vector<milliseconds>{milliseconds(1000)}));
  ASSERT_EQ(recorder.said.size(), 2u);
  EXPECT_EQ(recorder.said[0].rfind("attempt 1 of 3 failed: rank 1 (pid 101) failed with signal 9", 0), 0u)
      << recorder.said[0];
  EXPECT_EQ(recorder.said[1],
            "restart 1 of 2 after rank 1 (pid 101) was killed by signal 9; resuming from the newest complete "
            "checkpoint in 1.0 s");
}

TEST(Restarts, WhenTheRestartsRunOutTheLastFailureStands) {
  FakeSpawner spawner;
  Recorder recorder;
  LaunchResult result =
      recorder.Run({.max_restarts = 2}, spawner, {RankOneKilled, RankZeroExits(1), RankOneKilled});
  EXPECT_FALSE(result.success);
  EXPECT_EQ(recorder.attempts, (std::vector<int>{0, 1, 2}));
  EXPECT_EQ(recorder.waits, (std::vector<milliseconds>{milliseconds(1000), milliseconds(2000)}));
  EXPECT_EQ(recorder.said[3],
            "restart 2 of 2 after rank 0 (pid 102) exited with code 1; resuming from the newest complete "
            "checkpoint in 2.0 s");
  // The third attempt's rank 1 (the sixth child) is named, not an earlier failure.
  EXPECT_EQ(result.failed_rank, 1);
  EXPECT_EQ(result.failed_status.pid, 105);
  EXPECT_EQ(result.message.rfind("rank 1 (pid 105) failed with signal 9", 0), 0u) << result.message;
  EXPECT_NE(result.message.find("\nno restart left: the job failed 3 times, after 2 restarts"),
            std::string::npos)
      << result.message;
}

TEST(Restarts, AUsageErrorIsNotRestarted) {
  FakeSpawner spawner;
  Recorder recorder;
  LaunchResult result = recorder.Run({.max_restarts = 3}, spawner, {RankZeroExits(kWorkerExitUsage)});
  EXPECT_FALSE(result.success);
  EXPECT_EQ(recorder.attempts, (std::vector<int>{0}));
  EXPECT_TRUE(recorder.waits.empty());
  EXPECT_TRUE(recorder.said.empty());
  EXPECT_EQ(result.message.find("no restart left"), std::string::npos) << result.message;
}

TEST(Restarts, WithoutRestartsTheFirstFailureStandsAsBefore) {
  FakeSpawner spawner;
  Recorder recorder;
  LaunchResult result = recorder.Run({}, spawner, {RankOneKilled});
  EXPECT_EQ(result.failed_status.pid, 101);
  EXPECT_TRUE(recorder.said.empty());
  EXPECT_EQ(result.message.find("restart"), std::string::npos) << result.message;
}

TEST(Restarts, AnInterruptDuringTheWaitStartsNothing) {
  FakeSpawner spawner;
  Recorder recorder;
  recorder.interrupt_wait = true;
  LaunchResult result = recorder.Run({.max_restarts = 2}, spawner, {RankOneKilled, BothSucceed});
  EXPECT_FALSE(result.success);
  EXPECT_TRUE(result.interrupted);
  EXPECT_EQ(recorder.attempts, (std::vector<int>{0}));
  EXPECT_NE(result.message.find("interrupted while waiting to restart"), std::string::npos) << result.message;
}

TEST(Restarts, APeerFailureAloneIsCalledOne) {
  LaunchResult result;
  result.failed_rank = 0;
  result.failed_status = Exited(kWorkerExitPeerFailure);
  result.failed_status.pid = 41;
  result.peer_failure_only = true;
  EXPECT_EQ(DescribeCause(result), "rank 0 (pid 41) lost a peer (exit code 3)");
}

TEST(Restarts, AStalledRankIsRestartedAndCalledSo) {
  LaunchResult result;
  result.failed_rank = 1;
  result.failed_status.pid = 42;
  result.stalled = true;
  EXPECT_TRUE(IsRestartable(result));
  EXPECT_EQ(DescribeCause(result), "rank 1 (pid 42) stopped making progress");
}

TEST(Restarts, OnlyALauncherOfEveryRankMayRestart) {
  Topology local;
  local.world_size = local.local_world_size = 2;
  local.slots = {{0, 0}, {1, 1}};
  EXPECT_EQ(WhyRestartsCannotWork(local), "");

  Topology slurm = local;
  slurm.launched_by = "Slurm";
  slurm.slots = {{1, 1}};
  EXPECT_NE(WhyRestartsCannotWork(slurm).find("`sbatch --requeue`"), std::string::npos);
  Topology mpi = slurm;
  mpi.launched_by = "OpenMPI";
  EXPECT_NE(WhyRestartsCannotWork(mpi).find("cannot work under OpenMPI"), std::string::npos);

  Topology by_hand = local;
  by_hand.nnodes = 2;
  by_hand.world_size = 4;
  EXPECT_NE(WhyRestartsCannotWork(by_hand).find("this accelrun starts 2 of the job's 4 ranks"),
            std::string::npos)
      << WhyRestartsCannotWork(by_hand);
}

TEST(Restarts, EachAttemptHasItsOwnLaunchId) {
  LaunchId generated = ResolveLaunchId(std::nullopt, {}, /*one_launcher=*/true);
  LaunchId again = RestartLaunchId(generated, 1);
  EXPECT_TRUE(again.generated);
  EXPECT_NE(again.id, generated.id);
  EXPECT_EQ(again.id.rfind("local-", 0), 0u);
  LaunchId chosen = ResolveLaunchId(std::string("job7"), {}, true);
  EXPECT_EQ(RestartLaunchId(chosen, 2).id, "job7-restart-2");
}

}  // namespace
}  // namespace accel::rt::launch
