#ifndef ACCEL_TESTS_UNIT_FAKE_SPAWNER_H_
#define ACCEL_TESTS_UNIT_FAKE_SPAWNER_H_

// A ProcessSpawner whose children follow a script, for the launcher's policy tests: no process
// is started.
#include <deque>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "runtime/launch/process.h"

namespace accel::rt::launch {

inline ExitStatus Exited(int code) { return {0, code, 0, false}; }
inline ExitStatus Killed(int signal) { return {0, 0, signal, true}; }

// Children whose life is a script: output and exits, delivered in order. Worker `i`, the i-th
// child started (counting on across restarts), has pid 100 + i. A signal sent to a child still
// running ends it (queued after the script).
class FakeSpawner final : public ProcessSpawner {
 public:
  struct Event {
    int worker;
    std::optional<ExitStatus> exit;  // set: the child ends; else it writes `bytes`
    OutputStream stream = OutputStream::kStdout;
    std::string bytes;
  };

  void Write(int worker, std::string bytes, OutputStream stream = OutputStream::kStdout) {
    script_.push_back({worker, std::nullopt, stream, std::move(bytes)});
  }
  void End(int worker, ExitStatus status) { script_.push_back({worker, status}); }

  llvm::Expected<pid_t> Spawn(const std::vector<std::string>&, const std::map<std::string, std::string>&,
                              int) override {
    pid_t pid = 100 + static_cast<pid_t>(started_.size());
    started_.push_back(pid);
    running_.insert(pid);
    return pid;
  }
  std::optional<ExitStatus> WaitAny(std::chrono::milliseconds) override {
    if (script_.empty() || !script_.front().exit) return std::nullopt;
    Event event = script_.front();
    script_.pop_front();
    ExitStatus status = *event.exit;
    status.pid = 100 + event.worker;
    running_.erase(status.pid);
    return status;
  }
  std::vector<OutputChunk> ReadOutput(std::chrono::milliseconds) override {
    std::vector<OutputChunk> out;
    while (!script_.empty() && !script_.front().exit) {
      out.push_back({100 + script_.front().worker, script_.front().stream, script_.front().bytes, false});
      script_.pop_front();
    }
    return out;
  }
  // What is still "in the pipe" of `pid`: its queued output, wherever it is in the script.
  std::vector<OutputChunk> DrainOutput(pid_t pid) override {
    std::vector<OutputChunk> out;
    for (auto it = script_.begin(); it != script_.end();) {
      if (!it->exit && 100 + it->worker == pid) {
        out.push_back({pid, it->stream, it->bytes, false});
        it = script_.erase(it);
      } else {
        ++it;
      }
    }
    return out;
  }
  void Signal(pid_t pid, int signal) override {
    signals_.push_back({pid, signal});
    if (running_.count(pid) && !pending_.count(pid)) {
      pending_.insert(pid);
      script_.push_back({pid - 100, Killed(signal)});
    }
  }

  bool IsStopped(pid_t pid) override { return stopped_.count(pid) > 0; }
  // Worker `worker` is stopped (SIGSTOP) from now on.
  void Stop(int worker) { stopped_.insert(100 + worker); }

  const std::vector<std::pair<pid_t, int>>& signals() const { return signals_; }

 private:
  std::deque<Event> script_;
  std::vector<pid_t> started_;
  std::set<pid_t> running_;
  std::set<pid_t> pending_;
  std::vector<std::pair<pid_t, int>> signals_;
  std::set<pid_t> stopped_;
};

}  // namespace accel::rt::launch

#endif  // ACCEL_TESTS_UNIT_FAKE_SPAWNER_H_
