#include "runtime/launch/launcher.h"
#include "runtime/launch/process.h"
#include "runtime/launch/rendezvous_port.h"
#include "runtime/launch/topology.h"

#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace accel::rt::launch {
namespace {

// Workers placed on node `node_rank` of `nnodes`, `count` per node, each running /bin/sh with
// a script that may branch on its rank.
LaunchOptions ShellWorkers(int count, const std::string& script, int nnodes = 1, int node_rank = 0) {
  Topology topology;
  topology.nnodes = nnodes;
  topology.node_rank = node_rank;
  topology.local_world_size = count;
  topology.world_size = nnodes * count;
  topology.master_port = 12345;
  LaunchOptions options;
  for (int local = 0; local < count; ++local) {
    Slot slot{node_rank * count + local, local};
    options.workers.push_back({slot.rank, {"/bin/sh", "-c", script}, RankEnvironment(topology, slot)});
  }
  options.grace = std::chrono::milliseconds(2000);
  options.print = [](OutputStream, std::string_view) {};
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
  LaunchOptions options =
      ShellWorkers(2,
                   "[ \"$ACCEL_WORLD_SIZE\" = 4 ] && [ \"$RANK\" = \"$ACCEL_RANK\" ] && "
                   "[ \"$ACCEL_MASTER_PORT\" = 12345 ] && [ \"$LOCAL_WORLD_SIZE\" = 2 ] && "
                   "[ \"$ACCEL_RANK\" -ge 2 ] && [ \"$SHARED\" = yes ]",
                   /*nnodes=*/2, /*node_rank=*/1);
  for (WorkerSpec& worker : options.workers) worker.env["SHARED"] = "yes";
  EXPECT_TRUE(RunWorkers(options, spawner).success);
}

TEST(Launcher, RelaysEveryLineWithItsRankEvenRightBeforeExit) {
  PosixSpawner spawner;
  // 2000 lines written as fast as possible, then exit: the last ones are still in the pipe
  // when the worker is reaped.
  LaunchOptions options = ShellWorkers(2,
                                       "i=0; while [ $i -lt 2000 ]; do echo \"line $i\"; i=$((i+1)); done; "
                                       "printf 'no newline'");
  options.prefix_output = true;
  std::map<std::string, int> lines;
  std::string all;
  options.print = [&](OutputStream stream, std::string_view text) {
    EXPECT_EQ(stream, OutputStream::kStdout);
    all += text;
    ++lines[text.rfind("[rank 1] ", 0) == 0 ? "rank 1" : "rank 0"];
  };
  ASSERT_TRUE(RunWorkers(options, spawner).success);
  EXPECT_EQ(lines["rank 0"], 2001);
  EXPECT_EQ(lines["rank 1"], 2001);
  EXPECT_NE(all.find("[rank 1] line 1999\n"), std::string::npos);
  EXPECT_NE(all.find("\nno newline\n"), std::string::npos);
  EXPECT_NE(all.find("[rank 1] no newline\n"), std::string::npos);
}

TEST(Launcher, BackgroundProcessHoldingThePipeDoesNotHoldTheLauncher) {
  PosixSpawner spawner;
  std::string pid_file = "/tmp/accel_launch_test_holder_" + std::to_string(::getpid());
  // The worker leaves a sleeper behind that inherited its stdout: the pipe never reaches end
  // of file while the sleeper lives, yet the job is over when the worker is.
  LaunchOptions options = ShellWorkers(1, "sleep 60 & echo $! > " + pid_file + "; echo done");
  std::string printed;
  options.print = [&](OutputStream, std::string_view text) { printed += text; };
  EXPECT_TRUE(RunWorkers(options, spawner).success);
  EXPECT_EQ(printed, "done\n");
  std::ifstream in(pid_file);
  pid_t holder = 0;
  if (in >> holder && holder > 0) ::kill(holder, SIGKILL);
  std::remove(pid_file.c_str());
}

TEST(Launcher, FailureReportShowsTheLastLinesOfBothStreams) {
  PosixSpawner spawner;
  LaunchOptions options = ShellWorkers(
      2, "if [ \"$ACCEL_RANK\" = 1 ]; then echo loading; echo 'bad shape' >&2; exit 4; fi; sleep 60");
  std::string errors;
  options.print = [&](OutputStream stream, std::string_view text) {
    if (stream == OutputStream::kStderr) errors += text;
  };
  LaunchResult result = RunWorkers(options, spawner);
  EXPECT_EQ(result.failed_rank, 1);
  EXPECT_EQ(result.failed_tail, (std::vector<std::string>{"loading", "bad shape"}));
  EXPECT_NE(result.message.find("last 2 lines of rank 1:\n  | loading\n  | bad shape"), std::string::npos)
      << result.message;
  EXPECT_EQ(errors, "bad shape\n");
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
  LaunchOptions options = ShellWorkers(2, "");
  for (WorkerSpec& worker : options.workers) worker.argv = {"/nonexistent/accelrun"};
  LaunchResult result = RunWorkers(options, spawner);
  EXPECT_FALSE(result.success);
  EXPECT_NE(result.message.find("cannot start rank 0"), std::string::npos) << result.message;
}

TEST(Launcher, RankThatFinishesWhileOthersRunIsNamedAfterTheLimit) {
  PosixSpawner spawner;
  // Rank 1 returns at once; rank 0 would wait for it (in a collective) for a minute.
  LaunchOptions options = ShellWorkers(2, "if [ \"$ACCEL_RANK\" = 1 ]; then exit 0; fi; sleep 60");
  options.early_exit_limit = std::chrono::milliseconds(500);
  auto started = std::chrono::steady_clock::now();
  LaunchResult result = RunWorkers(options, spawner);
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  EXPECT_FALSE(result.success);
  EXPECT_EQ(result.failed_rank, 1);
  EXPECT_NE(result.message.find("rank 1 exited successfully"), std::string::npos) << result.message;
  EXPECT_NE(result.message.find("still running (rank 0)"), std::string::npos) << result.message;
  EXPECT_LT(seconds, 10.0);
}

TEST(Launcher, PeerFailingRightAfterARankLeftEarlyBlamesTheRankThatLeft) {
  PosixSpawner spawner;
  // Rank 1 returns; rank 0's next collective then fails (over Gloo: the connection closes).
  LaunchOptions options =
      ShellWorkers(2, "if [ \"$ACCEL_RANK\" = 1 ]; then exit 0; fi; sleep 0.3; echo closed by peer; exit 1");
  options.early_exit_limit = std::chrono::milliseconds(60000);
  LaunchResult result = RunWorkers(options, spawner);
  EXPECT_FALSE(result.success);
  EXPECT_EQ(result.failed_rank, 1);
  EXPECT_NE(result.message.find("rank 1 exited successfully while its peers were still running, and rank 0"),
            std::string::npos)
      << result.message;
  EXPECT_NE(result.message.find("closed by peer"), std::string::npos) << result.message;  // rank 0's tail
}

TEST(Launcher, WithoutTheEarlyExitLimitAFailureAfterARankFinishedIsItsOwn) {
  PosixSpawner spawner;
  LaunchOptions options = ShellWorkers(2, "if [ \"$ACCEL_RANK\" = 1 ]; then exit 0; fi; sleep 0.3; exit 1");
  LaunchResult result = RunWorkers(options, spawner);
  EXPECT_EQ(result.failed_rank, 0) << result.message;
}

TEST(Launcher, RanksFinishingTogetherWithinTheLimitSucceed) {
  PosixSpawner spawner;
  LaunchOptions options = ShellWorkers(2, "if [ \"$ACCEL_RANK\" = 1 ]; then exit 0; fi; sleep 0.3");
  options.early_exit_limit = std::chrono::milliseconds(5000);
  LaunchResult result = RunWorkers(options, spawner);
  EXPECT_TRUE(result.success) << result.message;
}

TEST(Launcher, ScriptExitCodeThreeIsItsOwnFailureNotAPeers) {
  PosixSpawner spawner;
  // Exit code 3 is accelrun-worker's "a peer failed"; a script's 3 means nothing of the kind.
  LaunchOptions options = ShellWorkers(2, "if [ \"$ACCEL_RANK\" = 1 ]; then exit 3; fi; sleep 60");
  options.workers_speak_exit_codes = false;
  options.root_cause_window = std::chrono::milliseconds(20000);
  auto started = std::chrono::steady_clock::now();
  LaunchResult result = RunWorkers(options, spawner);
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  EXPECT_EQ(result.failed_rank, 1);
  EXPECT_FALSE(result.peer_failure_only);
  EXPECT_EQ(result.message.find("peer failure"), std::string::npos) << result.message;
  EXPECT_LT(seconds, 10.0);  // not held for the root-cause window
}

TEST(Launcher, HugePageTunableIsAppendedOnce) {
  EXPECT_EQ(WithHugePageMalloc(""), "glibc.malloc.hugetlb=1");
  EXPECT_EQ(WithHugePageMalloc("glibc.malloc.arena_max=2"),
            "glibc.malloc.arena_max=2:glibc.malloc.hugetlb=1");
  EXPECT_EQ(WithHugePageMalloc("glibc.malloc.hugetlb=0"), "glibc.malloc.hugetlb=0");
}

// Whether `port` can be bound on the IPv4 loopback now.
bool LoopbackPortFree(int port) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  address.sin_port = htons(static_cast<uint16_t>(port));
  const bool bound = ::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) == 0;
  ::close(fd);
  return bound;
}

// A port picked for a script's workers is one the kernel never hands out by itself: another
// job's connections cannot take it before the script's rank 0 binds it.
TEST(PickFreePort, PicksAFreePortBelowTheEphemeralRange) {
  std::ifstream file("/proc/sys/net/ipv4/ip_local_port_range");
  const std::string text((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  const int ephemeral = EphemeralPortRange(text).first;
  ASSERT_GT(ephemeral, kLowestPickedPort + 1) << "this machine's ephemeral range starts too low: " << text;
  for (int i = 0; i < 20; ++i) {
    const int port = PickFreePort();
    EXPECT_GE(port, kLowestPickedPort);
    EXPECT_LT(port, ephemeral);
    EXPECT_TRUE(LoopbackPortFree(port)) << port;
  }
}

// With every other port of [10000, 20000) taken, each pick is still one nobody holds.
TEST(PickFreePort, SkipsThePortsOthersHold) {
  rlimit files{};
  ASSERT_EQ(::getrlimit(RLIMIT_NOFILE, &files), 0);
  const rlimit before = files;
  files.rlim_cur = std::min<rlim_t>(files.rlim_max, 8192);
  ASSERT_EQ(::setrlimit(RLIMIT_NOFILE, &files), 0);
  std::vector<int> held;
  for (int port = kLowestPickedPort; port < kLowestPickedPort + 10000 && held.size() + 100 < files.rlim_cur;
       port += 2) {
    int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_ANY);
    address.sin_port = htons(static_cast<uint16_t>(port));
    if (::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) == 0) {
      held.push_back(fd);
    } else {
      ::close(fd);
    }
  }
  ASSERT_GT(held.size(), 2000u);
  for (int i = 0; i < 50; ++i) {
    const int port = PickFreePort();
    EXPECT_TRUE(LoopbackPortFree(port)) << port;
  }
  for (int fd : held) ::close(fd);
  ::setrlimit(RLIMIT_NOFILE, &before);
}

TEST(EphemeralPortRange, ReadsTheKernelsTextOrLinuxsDefault) {
  EXPECT_EQ(EphemeralPortRange("32768\t60999\n"), std::make_pair(32768, 60999));
  EXPECT_EQ(EphemeralPortRange("49152 65535"), std::make_pair(49152, 65535));
  EXPECT_EQ(EphemeralPortRange(""), std::make_pair(32768, 60999));
  EXPECT_EQ(EphemeralPortRange("5000 4000"), std::make_pair(32768, 60999));
  EXPECT_EQ(EphemeralPortRange("0 70000"), std::make_pair(32768, 60999));
}

// The launcher's own pick is held from the pick on: nothing else can bind it until the job ends,
// and no child but rank 0 (through the spawner's dup2) inherits it.
TEST(HeldPort, HoldsItsPortUntilItIsDestroyed) {
  std::optional<HeldPort> held = HeldPort::Open();
  ASSERT_TRUE(held.has_value());
  const int port = held->port();
  EXPECT_GT(port, 0);
  EXPECT_GE(held->fd(), 10);
  EXPECT_NE(::fcntl(held->fd(), F_GETFD) & FD_CLOEXEC, 0);
  EXPECT_FALSE(LoopbackPortFree(port));
  HeldPort moved = std::move(*held);
  held.reset();
  EXPECT_FALSE(LoopbackPortFree(port)) << "the moved-from port closed the socket";
  { HeldPort gone = std::move(moved); }
  EXPECT_TRUE(LoopbackPortFree(port));
}

// A worker that writes as fast as it is read keeps its pipe from running dry: one round of the
// supervision loop still reads only a bounded share of it, so the launcher holds no more than
// that in memory (it read everything up to the first empty pipe, 142 MB resident for a flood it
// could not print), and the other pipes and the watchdog get their turn.
TEST(PosixSpawner, ReadsABoundedShareOfAFloodingPipePerRound) {
  PosixSpawner spawner;
  llvm::Expected<pid_t> pid =
      spawner.Spawn({"/bin/sh", "-c", "exec dd if=/dev/zero bs=1M count=64 2>/dev/null"}, {}, -1);
  ASSERT_TRUE(static_cast<bool>(pid)) << llvm::toString(pid.takeError());
  size_t total = 0;
  size_t largest = 0;
  for (int round = 0; round < 1000 && total < (64u << 20); ++round) {
    for (const OutputChunk& chunk : spawner.ReadOutput(std::chrono::milliseconds(1000))) {
      if (chunk.stream != OutputStream::kStdout) continue;
      total += chunk.bytes.size();
      largest = std::max(largest, chunk.bytes.size());
    }
  }
  EXPECT_EQ(total, 64u << 20) << "every byte arrives, over several rounds";
  EXPECT_LE(largest, 256u * 1024 + 16 * 1024);
  spawner.Signal(*pid, SIGKILL);
  spawner.WaitAny(std::chrono::milliseconds(5000));
}

}  // namespace
}  // namespace accel::rt::launch
