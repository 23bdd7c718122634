#include "runtime/support/progress.h"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <limits>
#include <map>
#include <mutex>
#include <string>
#include <utility>

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

// The work last named, read by a loader's threads too (StillWorking), and by the ranks a test
// runs as threads: behind a lock.
std::mutex& WorkLock() {
  static std::mutex lock;
  return lock;
}

std::string& WorkNamed() {
  static std::string work = "starting";
  return work;
}

std::string CurrentWork() {
  std::lock_guard<std::mutex> lock(WorkLock());
  return WorkNamed();
}

// Names `what` as the work, and returns the work named before.
std::string NameWork(std::string_view what) {
  std::lock_guard<std::mutex> lock(WorkLock());
  return std::exchange(WorkNamed(), std::string(what));
}

// The BeatListeners alive, by id. One rank per process in a job; tests run ranks as threads.
struct Listeners {
  std::mutex mutex;
  int next_id = 0;
  std::map<int, std::function<void()>> beats;
};

Listeners& BeatListeners() {
  static Listeners listeners;
  return listeners;
}

void Beat() {
  Listeners& listeners = BeatListeners();
  std::lock_guard<std::mutex> lock(listeners.mutex);
  for (auto& [id, beat] : listeners.beats) beat();
}

// Whether this call to StillWorking or StillWaitingForWork may speak: at most once an interval.
bool MaySpeakAgain() {
  // Called from a loader's threads too (checkpoint verification runs on every core): one of
  // them wins each second. The work's name is set on the main thread, which waits for them.
  static std::atomic<int64_t> last_said{std::numeric_limits<int64_t>::min() / 2};
  const int64_t now = std::chrono::duration_cast<std::chrono::milliseconds>(
                          std::chrono::steady_clock::now().time_since_epoch())
                          .count();
  int64_t last = last_said.load(std::memory_order_relaxed);
  const int64_t interval = still_working_interval_ms.load(std::memory_order_relaxed);
  return now - last >= interval && last_said.compare_exchange_strong(last, now, std::memory_order_relaxed);
}

}  // namespace

void Working(std::string_view what) {
  NameWork(what);
  Send(kWorkingTag, what);
  Beat();
}

void Waiting(std::string_view what) { Send(kWaitingTag, what); }

void Resumed() { Send(kWorkingTag, CurrentWork()); }

void StillWorking() {
  if (!MaySpeakAgain()) return;
  Send(kWorkingTag, CurrentWork());
  Beat();
}

void StillWaitingForWork() {
  if (MaySpeakAgain()) Send(kWorkingTag, CurrentWork());
}

// Names the work without a beat: the work named is this rank's waiting for its peers' work.
ScopedWork::ScopedWork(std::string_view what) : outer_(NameWork(what)) { Send(kWorkingTag, what); }

ScopedWork::~ScopedWork() {
  NameWork(outer_);
  Send(kWorkingTag, outer_);
}

BeatListener::BeatListener(std::function<void()> beat) {
  Listeners& listeners = BeatListeners();
  std::lock_guard<std::mutex> lock(listeners.mutex);
  id_ = listeners.next_id++;
  listeners.beats.emplace(id_, std::move(beat));
}

BeatListener::~BeatListener() {
  Listeners& listeners = BeatListeners();
  std::lock_guard<std::mutex> lock(listeners.mutex);
  listeners.beats.erase(id_);
}

void SetStillWorkingInterval(std::chrono::milliseconds interval) {
  still_working_interval_ms.store(interval.count(), std::memory_order_relaxed);
}

}  // namespace accel::rt::progress
