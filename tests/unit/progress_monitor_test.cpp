// The watchdog's view of each rank: what it last said on its progress pipe and when, and whom
// to blame when the job stops making progress.
#include <gtest/gtest.h>

#include "runtime/launch/progress_monitor.h"

namespace accel::rt::launch {
namespace {

using Clock = ProgressMonitor::Clock;
using std::chrono::seconds;

TEST(ProgressMonitor, CompleteLinesUpdateARankPartialOnesWait) {
  ProgressMonitor monitor;
  Clock::time_point t0 = Clock::now();
  monitor.Started(1, t0);
  monitor.Add(1, "S step 1\nW all_", t0 + seconds(1));
  std::optional<ProgressMonitor::Silence> at2 = monitor.Of(1, t0 + seconds(2));
  ASSERT_TRUE(at2.has_value());
  EXPECT_EQ(at2->last, "step 1");
  EXPECT_FALSE(at2->waiting);
  EXPECT_EQ(at2->silent_for, seconds(1));
  monitor.Add(1, "reduce\n", t0 + seconds(3));  // the line's end arrives later
  EXPECT_EQ(monitor.Of(1, t0 + seconds(3))->last, "all_reduce");
  EXPECT_TRUE(monitor.Of(1, t0 + seconds(3))->waiting);
  EXPECT_EQ(ProgressMonitor::Describe(*monitor.Of(1, t0 + seconds(10))),
            "7 s (last: waiting for its peers in all_reduce)");
  monitor.Ended(1);
  EXPECT_FALSE(monitor.Of(1, t0 + seconds(10)).has_value());
}

TEST(ProgressMonitor, TheRankWorkingAloneIsBlamedBeforeTheRanksWaitingForIt) {
  ProgressMonitor monitor;
  Clock::time_point t0 = Clock::now();
  for (int rank : {0, 1, 2}) monitor.Started(rank, t0);
  monitor.Add(0, "W all_reduce\n", t0);           // waiting the longest
  monitor.Add(1, "S step 4\n", t0 + seconds(1));  // stuck in its own work
  monitor.Add(2, "W all_reduce\n", t0 + seconds(2));
  // Within the limit, nobody is blamed.
  EXPECT_FALSE(monitor.Stalled(t0 + seconds(5), {seconds(5), seconds(5), seconds(60)}).has_value());
  std::optional<ProgressMonitor::Silence> blamed =
      monitor.Stalled(t0 + seconds(8), {seconds(5), seconds(5), seconds(60)});
  ASSERT_TRUE(blamed.has_value());
  EXPECT_EQ(blamed->rank, 1);
  EXPECT_EQ(blamed->last, "step 4");

  // When everyone waits, the longest silent is named.
  monitor.Add(1, "W broadcast\n", t0 + seconds(1));
  EXPECT_EQ(monitor.Stalled(t0 + seconds(8), {seconds(5), seconds(5), seconds(60)})->rank, 0);
}

// A launcher stopped (SIGSTOP) for longer than the timeout and then continued killed a healthy
// job, blaming a rank that had waited in a collective for a moment: the time the launcher did
// not run is not the ranks' silence.
TEST(ProgressMonitor, TimeTheLauncherDidNotRunIsNoRanksSilence) {
  ProgressMonitor monitor;
  Clock::time_point t0 = Clock::now();
  monitor.Started(0, t0);
  monitor.Tick(t0);
  monitor.Add(0, "W all_reduce\n", t0 + std::chrono::milliseconds(40));
  monitor.Tick(t0 + std::chrono::milliseconds(50));
  // The launcher's next turn comes 70 s later.
  const Clock::time_point later = t0 + seconds(70) + std::chrono::milliseconds(50);
  monitor.Tick(later);
  EXPECT_FALSE(monitor.Stalled(later, {seconds(60), seconds(60), seconds(60)}).has_value());
  EXPECT_LT(monitor.Of(0, later)->silent_for, seconds(1));
  // Silence while the launcher runs still counts.
  Clock::time_point t = later;
  for (int turn = 0; turn < 1300; ++turn) monitor.Tick(t += std::chrono::milliseconds(50));
  ASSERT_TRUE(monitor.Stalled(t, {seconds(60), seconds(60), seconds(60)}).has_value());
  EXPECT_EQ(monitor.Stalled(t, {seconds(60), seconds(60), seconds(60)})->rank, 0);
}

TEST(ProgressMonitor, StartingGetsItsOwnLimit) {
  ProgressMonitor monitor;
  Clock::time_point t0 = Clock::now();
  monitor.Started(0, t0);
  monitor.Started(1, t0);
  monitor.Add(0, "S step 1\n", t0 + seconds(1));
  // Rank 1 is still loading LibTorch at 10 s: past the step limit, within the first-word one.
  std::optional<ProgressMonitor::Silence> at10 =
      monitor.Stalled(t0 + seconds(10), {seconds(5), seconds(5), seconds(60)});
  ASSERT_TRUE(at10.has_value());
  EXPECT_EQ(at10->rank, 0);
  std::optional<ProgressMonitor::Silence> at61 =
      monitor.Stalled(t0 + seconds(61), {seconds(100), seconds(100), seconds(60)});
  ASSERT_TRUE(at61.has_value());
  EXPECT_EQ(at61->rank, 1);
  EXPECT_EQ(ProgressMonitor::Describe(*at61), "61 s (last: nothing yet, still starting)");
}

// A rank in its own work (a checkpoint written, a model loaded) is held to the generous limit,
// a rank waiting for its peers to the collective timeout: a save slower than the timeout used
// to stop the job, though only collectives are bounded by it.
TEST(ProgressMonitor, OwnWorkAndWaitingHaveTheirOwnLimits) {
  ProgressMonitor monitor;
  Clock::time_point t0 = Clock::now();
  for (int rank : {0, 1}) monitor.Started(rank, t0);
  monitor.Add(0, "S saving a checkpoint\n", t0);
  monitor.Add(1, "S step 3\n", t0);
  const ProgressMonitor::Limits limits{/*waiting=*/seconds(65), /*working=*/seconds(605),
                                       /*first_word=*/seconds(65)};
  // Both silent in their own work past the collective timeout: within the own-work limit.
  EXPECT_FALSE(monitor.Stalled(t0 + seconds(300), limits).has_value());
  // Rank 1 now waits for rank 0 (still saving): past the timeout, the wait is what stalls.
  monitor.Add(1, "W all_reduce\n", t0 + seconds(300));
  EXPECT_FALSE(monitor.Stalled(t0 + seconds(365), limits).has_value());
  std::optional<ProgressMonitor::Silence> waited = monitor.Stalled(t0 + seconds(366), limits);
  ASSERT_TRUE(waited.has_value());
  EXPECT_EQ(waited->rank, 1);
  EXPECT_TRUE(waited->waiting);
  // Past the own-work limit, the silent worker is named before the rank waiting for it.
  std::optional<ProgressMonitor::Silence> silent = monitor.Stalled(t0 + seconds(606), limits);
  ASSERT_TRUE(silent.has_value());
  EXPECT_EQ(silent->rank, 0);
  EXPECT_EQ(silent->last, "saving a checkpoint");
  // Saying the work again (the heartbeat) restarts its clock.
  monitor.Add(0, "S saving a checkpoint\n", t0 + seconds(600));
  EXPECT_EQ(monitor.Stalled(t0 + seconds(606), limits)->rank, 1);
}

TEST(ProgressMonitor, TheSilentWorkerIgnoresWaitingAndRecentRanks) {
  ProgressMonitor monitor;
  Clock::time_point t0 = Clock::now();
  for (int rank : {0, 1, 2}) monitor.Started(rank, t0);
  monitor.Add(0, "W all_reduce\n", t0);
  monitor.Add(1, "S step 9\n", t0 + seconds(2));
  monitor.Add(2, "S step 9\n", t0 + seconds(9));
  std::optional<ProgressMonitor::Silence> silent = monitor.SilentWorker(t0 + seconds(10), seconds(3));
  ASSERT_TRUE(silent.has_value());
  EXPECT_EQ(silent->rank, 1);
  EXPECT_FALSE(monitor.SilentWorker(t0 + seconds(10), seconds(9)).has_value());
  // Lines that are not progress lines change nothing.
  monitor.Add(1, "garbage\nX\n", t0 + seconds(10));
  EXPECT_EQ(monitor.Of(1, t0 + seconds(10))->last, "step 9");
}

}  // namespace
}  // namespace accel::rt::launch
