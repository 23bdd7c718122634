// A rank at its own long work says so: loading a large CSV file and verifying a checkpoint
// repeat the work last named on the progress pipe, so the launcher's watchdog does not take a
// slow load for a stalled rank (a dataset that took longer than the collective timeout used to
// stop the job). Its own binary: the pipe is read from ACCEL_PROGRESS_FD once per process.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <chrono>
#include <string>
#include <thread>

#include "runtime/checkpoint/checkpoint_dir.h"
#include "runtime/data/dataset.h"
#include "runtime/support/progress.h"

namespace accel::rt {
namespace {

// The pipe the launcher would read: set up once, before the first word.
int ProgressPipe() {
  static const int read_end = [] {
    int fds[2];
    if (::pipe(fds) != 0) return -1;
    ::fcntl(fds[0], F_SETFL, O_NONBLOCK);
    ::setenv(progress::kEnvFd, std::to_string(fds[1]).c_str(), 1);
    return fds[0];
  }();
  return read_end;
}

// What the pipe holds now.
std::string Said() {
  char buffer[4096];
  ssize_t got = ::read(ProgressPipe(), buffer, sizeof buffer);
  return got > 0 ? std::string(buffer, static_cast<size_t>(got)) : "";
}

TEST(ProgressHeartbeat, LoadingACsvFileSaysTheRankIsAtWork) {
  ASSERT_GE(ProgressPipe(), 0);
  progress::Working("building the model and the data loaders");

  const std::string path = (std::filesystem::temp_directory_path() / "accel_heartbeat_test.csv").string();
  {
    std::ofstream csv(path);
    csv << "a,b,y\n";
    for (int row = 0; row < 10000; ++row) csv << row << "," << row * 2 << "," << row % 3 << "\n";
  }
  ASSERT_NE(Said(), "");  // the Working line
  // The heartbeat says at most one line a second.
  std::this_thread::sleep_for(std::chrono::milliseconds(1100));
  llvm::Expected<data::Dataset> dataset = data::LoadCsv(path, {}, {"y"}, data::TargetKind::kRegression);
  ASSERT_TRUE(static_cast<bool>(dataset)) << llvm::toString(dataset.takeError());
  EXPECT_EQ(Said(), "S building the model and the data loaders\n") << "the loader said nothing in 10,000 rows";
  std::filesystem::remove(path);
}

TEST(ProgressHeartbeat, VerifyingACheckpointSaysTheRankIsAtWork) {
  ASSERT_GE(ProgressPipe(), 0);
  const std::string directory = (std::filesystem::temp_directory_path() / "accel_heartbeat_checkpoint").string();
  std::filesystem::remove_all(directory);
  const std::string bytes(1000, 'x');
  ASSERT_FALSE(static_cast<bool>(checkpoint::WriteCheckpointDirectory(directory, {{"a.bin", {bytes}}}, 1)));
  progress::Working("restoring the training state");
  ASSERT_NE(Said(), "");
  std::this_thread::sleep_for(std::chrono::milliseconds(1100));
  llvm::Expected<checkpoint::VerifiedCheckpoint> verified = checkpoint::VerifyCheckpointDirectory(directory);
  ASSERT_TRUE(static_cast<bool>(verified)) << llvm::toString(verified.takeError());
  EXPECT_EQ(Said(), "S restoring the training state\n") << "verification said nothing";
  std::filesystem::remove_all(directory);
}

}  // namespace
}  // namespace accel::rt
