#include "runtime/support/progress.h"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <limits>
#include <cstdlib>
#include <string>

namespace accel::rt::progress {
namespace {

// The pipe to the launcher, opened once; -1 when there is none.
int ProgressFd() {
  static const int fd = [] {
    const char* text = std::getenv(kEnvFd);
    if (text == nullptr) return -1;
    int value = std::atoi(text);
    if (value < 0 || ::fcntl(value, F_GETFD) < 0) return -1;
    // Never block a step on a launcher that is not reading.
    ::fcntl(value, F_SETFL, ::fcntl(value, F_GETFL) | O_NONBLOCK);
    return value;
  }();
  return fd;
}

void Send(char tag, std::string_view what) {
  int fd = ProgressFd();
  if (fd < 0) return;
  std::string line;
  line.reserve(what.size() + 3);
  line += tag;
  line += ' ';
  line += what.substr(0, 200);
  line += '\n';
  // One write of under PIPE_BUF bytes is atomic: the launcher never reads half a line.
  ssize_t ignored = ::write(fd, line.data(), line.size());
  (void)ignored;
}

std::atomic<int64_t> still_working_interval_ms{1000};

// The work last named; a worker's collectives all run on its main thread.
std::string& CurrentWork() {
  static std::string work = "starting";
  return work;
}

}  // namespace

void Working(std::string_view what) {
  CurrentWork() = std::string(what);
  Send(kWorkingTag, what);
}

void Waiting(std::string_view what) { Send(kWaitingTag, what); }

void Resumed() { Send(kWorkingTag, CurrentWork()); }

void StillWorking() {
  // Called from a loader's threads too (checkpoint verification runs on every core): one of
  // them wins each second. The work's name is set on the main thread, which waits for them.
  static std::atomic<int64_t> last_said{std::numeric_limits<int64_t>::min() / 2};
  const int64_t now = std::chrono::duration_cast<std::chrono::milliseconds>(
                          std::chrono::steady_clock::now().time_since_epoch())
                          .count();
  int64_t last = last_said.load(std::memory_order_relaxed);
  const int64_t interval = still_working_interval_ms.load(std::memory_order_relaxed);
  if (now - last < interval || !last_said.compare_exchange_strong(last, now, std::memory_order_relaxed))
    return;
  Send(kWorkingTag, CurrentWork());
}

void SetStillWorkingInterval(std::chrono::milliseconds interval) {
  still_working_interval_ms.store(interval.count(), std::memory_order_relaxed);
}

}  // namespace accel::rt::progress
