// A rank at its own long work says so: loading a large CSV file repeats the work last named on
// the progress pipe, so the launcher's watchdog does not take a slow load for a stalled rank (a
// dataset that took longer than the collective timeout used to stop the job). Its own binary:
// the pipe is read from ACCEL_PROGRESS_FD once per process.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "runtime/data/dataset.h"
#include "runtime/support/progress.h"

namespace accel::rt {
namespace {

TEST(ProgressHeartbeat, LoadingACsvFileSaysTheRankIsAtWork) {
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  ::fcntl(fds[0], F_SETFL, O_NONBLOCK);
  ::setenv(progress::kEnvFd, std::to_string(fds[1]).c_str(), 1);
  progress::Working("building the model and the data loaders");

  const std::string path = (std::filesystem::temp_directory_path() / "accel_heartbeat_test.csv").string();
  {
    std::ofstream csv(path);
    csv << "a,b,y\n";
    for (int row = 0; row < 10000; ++row) csv << row << "," << row * 2 << "," << row % 3 << "\n";
  }
  char buffer[4096];
  ssize_t before = ::read(fds[0], buffer, sizeof buffer);  // the Working line
  ASSERT_GT(before, 0);
  llvm::Expected<data::Dataset> dataset = data::LoadCsv(path, {}, {"y"}, data::TargetKind::kRegression);
  ASSERT_TRUE(static_cast<bool>(dataset)) << llvm::toString(dataset.takeError());
  ssize_t during = ::read(fds[0], buffer, sizeof buffer);
  ASSERT_GT(during, 0) << "the loader said nothing while it read 10,000 rows";
  EXPECT_EQ(std::string(buffer, static_cast<size_t>(during)), "S building the model and the data loaders\n");
  std::filesystem::remove(path);
  ::close(fds[0]);
  ::close(fds[1]);
}

}  // namespace
}  // namespace accel::rt
