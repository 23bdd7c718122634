#include "runtime/launch/launcher.h"

#include <gtest/gtest.h>

#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <thread>

namespace accel::rt::launch {
namespace {

// Each worker runs /bin/sh with a script that may branch on its rank.
LaunchOptions ShellWorkers(int count, const std::string& script) {
  LaunchOptions options;
  options.processes_per_machine = count;
  options.master_port = 12345;
  options.worker_argv = {"/bin/sh", "-c", script};
  options.grace = std::chrono::milliseconds(2000);
  return options;
}

TEST(Launcher, AllWorkersSucceed) {
  PosixSpawner spawner;
  LaunchResult result = RunWorkers(ShellWorkers(3, "exit 0"), spawner);
  EXPECT_TRUE(result.success) << result.message;
  EXPECT_EQ(result.failed_rank, -1);
}

TEST(Launcher, NamesTheFailedRankAndStopsTheOthersQuickly) {
  PosixSpawner spawner;
  auto started = std::chrono::steady_clock::now();
  // Rank 1 fails at once; the others would sleep for a minute.
  LaunchResult result =
      RunWorkers(ShellWorkers(3, "if [ \"$ACCEL_RANK\" = 1 ]; then exit 3; fi; sleep 60"), spawner);
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  EXPECT_FALSE(result.success);
  EXPECT_EQ(result.failed_rank, 1);
  EXPECT_EQ(result.failed_status.code, 3);
  EXPECT_NE(result.message.find("rank 1"), std::string::npos) << result.message;
  EXPECT_NE(result.message.find("exit code 3"), std::string::npos) << result.message;
  EXPECT_NE(result.message.find("stopped 2 other workers"), std::string::npos) << result.message;
  EXPECT_LT(seconds, 10.0);
}

TEST(Launcher, WorkerIgnoringSigtermIsKilledAfterTheGracePeriod) {
  PosixSpawner spawner;
  LaunchOptions options =
      ShellWorkers(2, "if [ \"$ACCEL_RANK\" = 0 ]; then exit 1; fi; trap '' TERM; sleep 60");
  options.grace = std::chrono::milliseconds(500);
  auto started = std::chrono::steady_clock::now();
  LaunchResult result = RunWorkers(options, spawner);
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  EXPECT_EQ(result.failed_rank, 0);
  EXPECT_LT(seconds, 10.0);
}

TEST(Launcher, StoppingAWorkerAlsoStopsWhatItStarted) {
  PosixSpawner spawner;
  std::string pid_file = "/tmp/accel_launch_test_grandchild_" + std::to_string(::getpid());
  // Rank 0 starts a background sleeper (a grandchild of the launcher) and waits; rank 1 fails.
  LaunchResult result = RunWorkers(ShellWorkers(2, "if [ \"$ACCEL_RANK\" = 0 ]; then sleep 60 & echo $! > " +
                                                       pid_file + "; wait; else sleep 0.5; exit 1; fi"),
                                   spawner);
  EXPECT_EQ(result.failed_rank, 1);
  std::ifstream in(pid_file);
  pid_t grandchild = 0;
  ASSERT_TRUE(in >> grandchild);
  // The grandchild was SIGTERMed with its group. Orphaned, it may linger as a zombie until
  // init reaps it; a zombie runs nothing, so it counts as gone.
  auto dead = [grandchild] {
    if (::kill(grandchild, 0) != 0) return true;
    std::ifstream stat("/proc/" + std::to_string(grandchild) + "/stat");
    std::string pid, name, state;
    return stat >> pid >> name >> state && state == "Z";
  };
  bool gone = false;
  for (int i = 0; i < 50 && !gone; ++i) {
    gone = dead();
    if (!gone) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_TRUE(gone) << "pid " << grandchild << " outlived its worker";
  std::remove(pid_file.c_str());
}

TEST(Launcher, SignalDeathIsDescribed) {
  PosixSpawner spawner;
  LaunchResult result = RunWorkers(ShellWorkers(1, "kill -9 $$"), spawner);
  EXPECT_FALSE(result.success);
  EXPECT_TRUE(result.failed_status.signaled);
  EXPECT_NE(result.message.find("signal 9"), std::string::npos) << result.message;
}

TEST(Launcher, WorkersSeeTheirRankAndWorld) {
  PosixSpawner spawner;
  LaunchOptions options = ShellWorkers(2,
                                       "[ \"$ACCEL_WORLD_SIZE\" = 4 ] && [ \"$RANK\" = \"$ACCEL_RANK\" ] && "
                                       "[ \"$ACCEL_MASTER_PORT\" = 12345 ] && "
                                       "[ \"$ACCEL_RANK\" -ge 2 ] && [ \"$SHARED\" = yes ]");
  options.num_machines = 2;
  options.node_rank = 1;
  options.worker_env["SHARED"] = "yes";
  EXPECT_TRUE(RunWorkers(options, spawner).success);
}

TEST(Launcher, InterruptStopsEveryWorker) {
  PosixSpawner spawner;
  LaunchOptions options = ShellWorkers(2, "sleep 60");
  auto started = std::chrono::steady_clock::now();
  options.interrupted = [started] {
    return std::chrono::steady_clock::now() - started > std::chrono::milliseconds(300);
  };
  LaunchResult result = RunWorkers(options, spawner);
  EXPECT_FALSE(result.success);
  EXPECT_NE(result.message.find("interrupted"), std::string::npos);
}

TEST(Launcher, UnstartableWorkerIsReported) {
  PosixSpawner spawner;
  LaunchOptions options;
  options.processes_per_machine = 2;
  options.worker_argv = {"/nonexistent/accelrun"};
  LaunchResult result = RunWorkers(options, spawner);
  EXPECT_FALSE(result.success);
  EXPECT_NE(result.message.find("cannot start rank 0"), std::string::npos) << result.message;
}

TEST(Launcher, HugePageTunableIsAppendedOnce) {
  EXPECT_EQ(WithHugePageMalloc(""), "glibc.malloc.hugetlb=1");
  EXPECT_EQ(WithHugePageMalloc("glibc.malloc.arena_max=2"),
            "glibc.malloc.arena_max=2:glibc.malloc.hugetlb=1");
  EXPECT_EQ(WithHugePageMalloc("glibc.malloc.hugetlb=0"), "glibc.malloc.hugetlb=0");
}

TEST(Launcher, PicksAUsablePort) {
  int port = PickFreePort();
  EXPECT_GT(port, 0);
  EXPECT_LT(port, 65536);
}

}  // namespace
}  // namespace accel::rt::launch
