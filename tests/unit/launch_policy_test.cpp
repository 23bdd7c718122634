// The launcher's policy against scripted children: which failure is named, what is printed,
// what is kept. No process is started.
#include <gtest/gtest.h>

#include <signal.h>

#include <algorithm>
#include <set>

#include <fmt/format.h>

#include "runtime/launch/launcher.h"
#include "runtime/launch/worker_output.h"
#include "tests/unit/fake_spawner.h"

namespace accel::rt::launch {
namespace {

LaunchOptions Workers(int count, std::string* printed = nullptr) {
  LaunchOptions options;
  for (int rank = 0; rank < count; ++rank) options.workers.push_back({rank, {"/fake/accelrun"}, {}});
  options.prefix_output = count > 1;
  options.grace = std::chrono::milliseconds(1000);
  // Generous: these tests never wait for the window to pass unless it is set to 0.
  options.root_cause_window = std::chrono::minutes(5);
  options.print = [printed](OutputStream, std::string_view text) {
    if (printed) *printed += text;
  };
  return options;
}

TEST(LaunchPolicy, AllWorkersSucceed) {
  FakeSpawner spawner;
  spawner.End(0, Exited(0));
  spawner.End(1, Exited(0));
  LaunchResult result = RunWorkers(Workers(2), spawner);
  EXPECT_TRUE(result.success) << result.message;
  EXPECT_TRUE(spawner.signals().empty());
}

TEST(LaunchPolicy, RootCauseFirstIsNamedAndTheOthersStopped) {
  FakeSpawner spawner;
  spawner.Write(2, "loading\n");
  spawner.End(2, Exited(1));
  LaunchResult result = RunWorkers(Workers(3), spawner);
  EXPECT_FALSE(result.success);
  EXPECT_EQ(result.failed_rank, 2);
  EXPECT_FALSE(result.peer_failure_only);
  EXPECT_NE(result.message.find("rank 2 (pid 102) failed with exit code 1; stopped 2 other workers"),
            std::string::npos)
      << result.message;
  std::set<std::pair<pid_t, int>> terms;
  for (auto [pid, signal] : spawner.signals())
    if (signal == SIGTERM) terms.insert({pid, signal});
  EXPECT_EQ(terms, (std::set<std::pair<pid_t, int>>{{100, SIGTERM}, {101, SIGTERM}, {102, SIGTERM}}));
}

TEST(LaunchPolicy, RootCauseArrivingAfterAPeerFailureIsNamed) {
  FakeSpawner spawner;
  // Rank 1 dies; rank 0's collective fails first, and rank 1's death is reaped after it.
  spawner.Write(1, "step 7\n");
  spawner.End(0, Exited(kWorkerExitPeerFailure));
  spawner.Write(1, "out of memory\n", OutputStream::kStderr);
  spawner.End(1, Killed(SIGKILL));
  LaunchResult result = RunWorkers(Workers(2), spawner);
  EXPECT_EQ(result.failed_rank, 1);
  EXPECT_TRUE(result.failed_status.signaled);
  EXPECT_FALSE(result.peer_failure_only);
  EXPECT_EQ(result.failed_tail, (std::vector<std::string>{"step 7", "out of memory"}));
  EXPECT_EQ(result.message.rfind("rank 1 (pid 101) failed with signal 9", 0), 0u) << result.message;
  EXPECT_NE(
      result.message.find("then rank 0 (pid 100) failed with exit code 3 (peer failure: a collective or "
                          "the rendezvous failed), a consequence"),
      std::string::npos)
      << result.message;
}

TEST(LaunchPolicy, PeerFailureIsNamedWhenNoRootCauseFollows) {
  FakeSpawner spawner;
  spawner.Write(0, "rendezvous timed out\n");
  spawner.End(0, Exited(kWorkerExitPeerFailure));
  LaunchOptions options = Workers(2);
  options.root_cause_window = std::chrono::milliseconds(0);
  LaunchResult result = RunWorkers(options, spawner);
  EXPECT_EQ(result.failed_rank, 0);
  EXPECT_TRUE(result.peer_failure_only);
  EXPECT_NE(result.message.find("the cause is a rank it did not start (another task or machine), or one that "
                                "never joined"),
            std::string::npos)
      << result.message;
  EXPECT_NE(result.message.find("  | rendezvous timed out"), std::string::npos) << result.message;

  // The same failure where this launcher started every rank of the job: nobody elsewhere to blame.
  FakeSpawner whole;
  whole.End(0, Exited(kWorkerExitPeerFailure));
  whole.End(1, Exited(kWorkerExitPeerFailure));
  options.world_size = 2;
  LaunchResult all_waited = RunWorkers(options, whole);
  EXPECT_NE(
      all_waited.message.find("no worker failed on its own and none is stuck: every rank gave up waiting"),
      std::string::npos)
      << all_waited.message;
  EXPECT_EQ(all_waited.message.find("another task or machine"), std::string::npos) << all_waited.message;
}

TEST(LaunchPolicy, LinesWrittenJustBeforeExitAreNotLost) {
  FakeSpawner spawner;
  std::string printed;
  spawner.End(1, Exited(1));
  // Still in the pipe when the exit is seen.
  spawner.Write(1, "fatal: bad plan\nno newline at the end");
  LaunchResult result = RunWorkers(Workers(2, &printed), spawner);
  EXPECT_EQ(result.failed_tail, (std::vector<std::string>{"fatal: bad plan", "no newline at the end"}));
  EXPECT_NE(printed.find("[rank 1] fatal: bad plan\n[rank 1] no newline at the end\n"), std::string::npos)
      << printed;
}

TEST(LaunchPolicy, FailureReportKeepsOnlyTheLastLines) {
  FakeSpawner spawner;
  std::string lines;
  for (int i = 1; i <= 25; ++i) lines += "line " + std::to_string(i) + "\n";
  spawner.Write(0, lines);
  spawner.End(0, Exited(1));
  LaunchResult result = RunWorkers(Workers(1), spawner);
  ASSERT_EQ(result.failed_tail.size(), 20u);
  EXPECT_EQ(result.failed_tail.front(), "line 6");
  EXPECT_EQ(result.failed_tail.back(), "line 25");
  EXPECT_NE(result.message.find("last 20 lines of rank 0:"), std::string::npos);
}

TEST(LaunchPolicy, SilentWorkerIsSaidToHavePrintedNothing) {
  FakeSpawner spawner;
  spawner.End(0, Killed(SIGSEGV));
  LaunchResult result = RunWorkers(Workers(1), spawner);
  EXPECT_NE(result.message.find("rank 0 printed nothing"), std::string::npos) << result.message;
}

TEST(LaunchPolicy, SharedErrorIsPrintedOnceAndTheVerdictEndsWithIt) {
  FakeSpawner spawner;
  std::string printed;
  spawner.Write(0, "accelrun: worker rank 0 of 2 (pid 1) joins 127.0.0.1:1\n");
  spawner.Write(0, "accelrun: error: rank 0: cannot load the model m.pt: the file does not exist\n",
                OutputStream::kStderr);
  spawner.Write(1, "accelrun: error: rank 1: cannot load the model m.pt: the file does not exist\n",
                OutputStream::kStderr);
  spawner.End(0, Exited(1));
  spawner.End(1, Exited(1));
  LaunchResult result = RunWorkers(Workers(2, &printed), spawner);
  // Relayed once, by rank 0 as it came; rank 1's copy is not printed.
  size_t first = printed.find("the file does not exist");
  ASSERT_NE(first, std::string::npos) << printed;
  EXPECT_EQ(printed.find("the file does not exist", first + 1), std::string::npos) << printed;
  EXPECT_EQ(printed.find("rank 1"), std::string::npos) << printed;
  // The verdict: the named rank, what it printed before, the ranks alike, and the cause last.
  EXPECT_NE(result.message.find("last 1 line of rank 0 before its error:\n  | accelrun: worker rank 0"),
            std::string::npos)
      << result.message;
  std::string ending =
      "\nrank 1 failed with the same error\n"
      "rank 0's error: cannot load the model m.pt: the file does not exist";
  ASSERT_GE(result.message.size(), ending.size());
  EXPECT_EQ(result.message.substr(result.message.size() - ending.size()), ending) << result.message;
}

TEST(LaunchPolicy, VerdictNamesTheRankWhoseErrorCameFirst) {
  FakeSpawner spawner;
  std::string printed;
  // Rank 1's line arrives first; rank 0 is reaped first.
  spawner.Write(1, "accelrun: error: rank 1: the file does not exist\n", OutputStream::kStderr);
  spawner.Write(0, "accelrun: error: rank 0: the file does not exist\n", OutputStream::kStderr);
  spawner.End(0, Exited(1));
  spawner.End(1, Exited(1));
  LaunchResult result = RunWorkers(Workers(2, &printed), spawner);
  EXPECT_EQ(result.failed_rank, 1) << result.message;
  EXPECT_EQ(result.message.rfind("rank 1 (pid 101) failed with exit code 1", 0), 0u) << result.message;
  EXPECT_NE(result.message.find("\nrank 0 failed with the same error\n"
                                "rank 1's error: the file does not exist"),
            std::string::npos)
      << result.message;
  EXPECT_EQ(printed.find("rank 0: the file does not exist"), std::string::npos) << printed;
}

TEST(LaunchPolicy, SixteenRanksFailingAlikeGiveOneErrorOneTracebackAndOneLineOfRanks) {
  FakeSpawner spawner;
  std::string printed;
  // Every rank's forward pass fails the same way; rank 4 says so first, with a traceback.
  for (int rank : {4, 0, 1, 2, 3, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15}) {
    spawner.Write(rank,
                  fmt::format("accelrun: error: rank {}: the model's forward pass failed: RuntimeError: "
                              "mat1 and mat2 shapes cannot be multiplied (25x8 and 4x32)\n"
                              "  traceback of the scripted model (most recent call last):\n"
                              "    File \"code/__torch__.py\", line 12, in forward\n",
                              rank),
                  OutputStream::kStderr);
  }
  for (int rank : {13, 4, 0, 1, 2, 3, 5, 6, 7, 8, 9, 10, 11, 12, 14, 15}) spawner.End(rank, Exited(1));
  LaunchResult result = RunWorkers(Workers(16, &printed), spawner);
  auto count = [](const std::string& text, const std::string& what) {
    size_t n = 0;
    for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
    return n;
  };
  EXPECT_EQ(count(printed, "mat1 and mat2"), 1u) << printed;
  EXPECT_EQ(count(printed, "traceback of the scripted model"), 1u) << printed;
  EXPECT_EQ(result.failed_rank, 4) << result.message;
  EXPECT_NE(result.message.find("\nranks 0-3, 5-15 failed with the same error\n"), std::string::npos)
      << result.message;
  EXPECT_NE(result.message.find("rank 4's error: the model's forward pass failed: RuntimeError: mat1"),
            std::string::npos)
      << result.message;
  EXPECT_EQ(result.message.find("rank 13"), std::string::npos) << result.message;
  EXPECT_EQ(result.message.find("then rank"), std::string::npos)
      << "the ranks alike are one line: " << result.message;
  // The traceback was relayed with the error: the verdict does not quote it again, and the
  // result keeps the error as printed (for the run directory's failure.txt).
  EXPECT_EQ(result.message.find("traceback of the scripted model"), std::string::npos) << result.message;
  ASSERT_EQ(result.failed_error.size(), 3u);
  EXPECT_EQ(result.failed_error[0].rfind("accelrun: error: rank 4: the model's forward pass failed", 0), 0u);
  EXPECT_EQ(result.failed_error[2], "    File \"code/__torch__.py\", line 12, in forward");
}

TEST(WorkerOutput, RelaysRedrawsAsTheyComeAndEndsThemBeforeOtherLines) {
  std::string printed;
  WorkerOutput output(true, 20, [&](OutputStream, std::string_view text) { printed += text; });
  output.Add(0, OutputStream::kStdout, "\r[#---] 1/4");
  EXPECT_EQ(printed, "\r[#---] 1/4") << "a redraw is relayed without waiting for a newline";
  output.Add(0, OutputStream::kStdout, "\r[##--] 2/4");
  // A line of its own below the bar, then the bar again, then its end.
  output.Add(0, OutputStream::kStdout, "checkpoint saved\n");
  output.Add(0, OutputStream::kStdout, "\r[####] 4/4");
  output.Add(0, OutputStream::kStdout, "\n");
  EXPECT_EQ(printed, "\r[#---] 1/4\r[##--] 2/4\ncheckpoint saved\n\r[####] 4/4\r[####] 4/4\n");
  EXPECT_EQ(output.Tail(0), (std::vector<std::string>{"checkpoint saved", "[####] 4/4"}));

  // Another rank's line starts below the bar; a message over the bar replaces it, and a redraw
  // already overtaken in the same read is not shown.
  printed.clear();
  output.Add(0, OutputStream::kStdout, "\r[#---] 1/4");
  output.Add(1, OutputStream::kStdout, "ready\n");
  output.Add(0, OutputStream::kStdout, "\r[##--] 2/4\reval   \n");
  EXPECT_EQ(printed, "\r[#---] 1/4\n[rank 1] ready\n\reval   \n");
}

TEST(WorkerOutput, PrefixesWholeLinesAcrossChunks) {
  std::vector<std::pair<OutputStream, std::string>> printed;
  WorkerOutput output(true, 20, [&](OutputStream stream, std::string_view text) {
    printed.emplace_back(stream, std::string(text));
  });
  output.Add(3, OutputStream::kStdout, "hel");
  output.Add(3, OutputStream::kStderr, "warn");
  output.Add(3, OutputStream::kStdout, "lo\nwor");
  output.Add(3, OutputStream::kStderr, "ing\n");
  output.Finish(3, OutputStream::kStdout);
  using Line = std::pair<OutputStream, std::string>;
  EXPECT_EQ(printed, (std::vector<Line>{{OutputStream::kStdout, "[rank 3] hello\n"},
                                        {OutputStream::kStderr, "[rank 3] warning\n"},
                                        {OutputStream::kStdout, "[rank 3] wor\n"}}));
  EXPECT_EQ(output.Tail(3), (std::vector<std::string>{"hello", "warning", "wor"}));
  EXPECT_TRUE(output.Tail(0).empty());
}

TEST(WorkerOutput, RankZeroSpeaksWithoutPrefix) {
  std::string printed;
  WorkerOutput output(true, 20, [&](OutputStream, std::string_view text) { printed += text; });
  output.Add(0, OutputStream::kStdout, "step 1/200  loss 1.0\n");
  output.Add(1, OutputStream::kStdout, "ready\n");
  EXPECT_EQ(printed, "step 1/200  loss 1.0\n[rank 1] ready\n");
}

TEST(WorkerOutput, UnprefixedWhenAsked) {
  std::string printed;
  WorkerOutput output(false, 20, [&](OutputStream, std::string_view text) { printed += text; });
  output.Add(2, OutputStream::kStdout, "step 1/200  loss 1.0\n");
  EXPECT_EQ(printed, "step 1/200  loss 1.0\n");
}

TEST(WorkerOutput, VeryLongLineIsCutInsteadOfGrowingForever) {
  size_t lines = 0;
  WorkerOutput output(false, 20, [&](OutputStream, std::string_view) { ++lines; });
  output.Add(0, OutputStream::kStdout, std::string(200 * 1024, 'x'));
  EXPECT_GE(lines, 2u);
}

TEST(LogTail, KeepsTheNewestLines) {
  LogTail tail(2);
  tail.Add("a");
  tail.Add("b");
  tail.Add("c");
  EXPECT_EQ(std::vector<std::string>(tail.lines().begin(), tail.lines().end()),
            (std::vector<std::string>{"b", "c"}));
}

// No worker exits, but rank 1 stopped making progress in its own work while rank 0 waits for
// it: past the timeout the watchdog names rank 1, kills it (SIGTERM would not move a stopped or
// spinning process) and stops the rest.
TEST(LaunchPolicy, TheWatchdogNamesTheRankThatStoppedMakingProgress) {
  FakeSpawner spawner;
  spawner.Write(0, "W all_reduce\n", OutputStream::kProgress);
  spawner.Write(1, "S step 7\n", OutputStream::kProgress);
  LaunchOptions options = Workers(2);
  options.collective_timeout = std::chrono::milliseconds(100);
  options.watchdog_margin = std::chrono::milliseconds(100);
  options.first_word_limit = std::chrono::milliseconds(5000);
  auto started = std::chrono::steady_clock::now();
  LaunchResult result = RunWorkers(options, spawner);
  EXPECT_GE(std::chrono::steady_clock::now() - started, std::chrono::milliseconds(200));
  EXPECT_FALSE(result.success);
  EXPECT_TRUE(result.stalled);
  EXPECT_EQ(result.failed_rank, 1);
  EXPECT_NE(
      result.message.find("rank 1 (pid 101) made no progress for 0 s (last: step 7); the plan's timeout has "
                          "passed; stopped it and 1 other worker"),
      std::string::npos)
      << result.message;
  EXPECT_NE(
      std::find(spawner.signals().begin(), spawner.signals().end(), std::pair<pid_t, int>{101, SIGKILL}),
      spawner.signals().end());
}

// A rank silent in its own work (a checkpoint written, a model loaded) past the plan's timeout
// is not stalled: the timeout bounds collectives only. It is named once `work_limit` passes.
TEST(LaunchPolicy, OwnWorkIsStoppedOnlyPastTheOwnWorkLimit) {
  FakeSpawner spawner;
  spawner.Write(0, "S saving a checkpoint\n", OutputStream::kProgress);
  LaunchOptions options = Workers(1);
  options.collective_timeout = std::chrono::milliseconds(100);
  options.watchdog_margin = std::chrono::milliseconds(100);
  options.first_word_limit = std::chrono::milliseconds(5000);
  options.work_limit = std::chrono::milliseconds(1600);
  auto started = std::chrono::steady_clock::now();
  LaunchResult result = RunWorkers(options, spawner);
  EXPECT_GE(std::chrono::steady_clock::now() - started, std::chrono::milliseconds(1600));
  EXPECT_TRUE(result.stalled);
  EXPECT_EQ(result.failed_rank, 0);
  EXPECT_NE(result.message.find("rank 0 (pid 100) made no progress for 2 s (last: saving a checkpoint); "
                                "no own work of a rank stays silent for longer than 2 s; stopped it"),
            std::string::npos)
      << result.message;
}

// A rank waiting for its peers (on another machine, say) is held to the timeout, however long
// the own-work limit.
TEST(LaunchPolicy, AWaitingRankIsStoppedPastTheTimeout) {
  FakeSpawner spawner;
  spawner.Write(0, "W the rendezvous\n", OutputStream::kProgress);
  LaunchOptions options = Workers(1);
  options.collective_timeout = std::chrono::milliseconds(100);
  options.watchdog_margin = std::chrono::milliseconds(100);
  options.work_limit = std::chrono::minutes(10);
  auto started = std::chrono::steady_clock::now();
  LaunchResult result = RunWorkers(options, spawner);
  EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::seconds(60));
  EXPECT_TRUE(result.stalled);
  EXPECT_EQ(result.failed_rank, 0);
  EXPECT_NE(result.message.find("(last: waiting for its peers in the rendezvous)"), std::string::npos)
      << result.message;
}

// A stopped rank (SIGSTOP) is named as soon as its peer gives up waiting for it, without the
// window that waits for a root cause to exit.
TEST(LaunchPolicy, AStoppedRankIsNamedWhenItsPeerFailsWaiting) {
  FakeSpawner spawner;
  spawner.Write(1, "W all_reduce\n", OutputStream::kProgress);
  spawner.Stop(1);
  spawner.End(0, Exited(kWorkerExitPeerFailure));
  LaunchOptions options = Workers(2);
  options.collective_timeout = std::chrono::milliseconds(60000);
  LaunchResult result = RunWorkers(options, spawner);
  EXPECT_TRUE(result.stalled);
  EXPECT_EQ(result.failed_rank, 1);
  EXPECT_NE(result.message.find("rank 1 (pid 101) is stopped (SIGSTOP or a debugger) and made no progress"),
            std::string::npos)
      << result.message;
  EXPECT_NE(result.message.find("its peers failed waiting for it"), std::string::npos) << result.message;
  EXPECT_NE(result.message.find("before that, rank 0 (pid 100) failed with exit code 3"), std::string::npos)
      << result.message;
}

// The launcher of a stopped rank names it once the timeout has passed, without the margin the
// watchdog leaves for a collective's own error: under srun its peers' launchers are elsewhere.
TEST(LaunchPolicy, AStoppedRankIsNamedAfterTheTimeoutWithoutTheMargin) {
  FakeSpawner spawner;
  spawner.Write(0, "S step 3\n", OutputStream::kProgress);
  spawner.Stop(0);
  LaunchOptions options = Workers(1);
  options.collective_timeout = std::chrono::milliseconds(100);
  options.watchdog_margin = std::chrono::minutes(5);
  auto started = std::chrono::steady_clock::now();
  LaunchResult result = RunWorkers(options, spawner);
  EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::seconds(60));
  EXPECT_TRUE(result.stalled);
  EXPECT_NE(result.message.find("rank 0 (pid 100) is stopped (SIGSTOP or a debugger)"), std::string::npos)
      << result.message;
}

// Own work gets at least ten minutes of silence, however short the timeout, and the timeout
// itself when it is longer; the margin comes on top of either.
TEST(OwnWorkLimit, IsTheTimeoutButAtLeastTenMinutesPlusTheMargin) {
  using std::chrono::milliseconds;
  EXPECT_EQ(OwnWorkLimit(milliseconds(60000), milliseconds(5000)), milliseconds(605000));
  EXPECT_EQ(OwnWorkLimit(milliseconds(1800000), milliseconds(5000)), milliseconds(1805000));
  EXPECT_EQ(OwnWorkLimit(milliseconds(2000), milliseconds(0)), milliseconds(600000));
}

// A starting worker gets at least a minute before its first word, however short the timeout,
// and the timeout itself when it is longer; the margin comes on top of either.
TEST(FirstWordLimit, IsTheTimeoutButAtLeastAMinutePlusTheMargin) {
  using std::chrono::milliseconds;
  EXPECT_EQ(FirstWordLimit(milliseconds(2000), milliseconds(5000)), milliseconds(65000));
  EXPECT_EQ(FirstWordLimit(milliseconds(120000), milliseconds(5000)), milliseconds(125000));
  EXPECT_EQ(FirstWordLimit(milliseconds(60000), milliseconds(0)), milliseconds(60000));
}

}  // namespace
}  // namespace accel::rt::launch
