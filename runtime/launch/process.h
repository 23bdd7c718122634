#ifndef ACCEL_RUNTIME_LAUNCH_PROCESS_H_
#define ACCEL_RUNTIME_LAUNCH_PROCESS_H_

#include <sys/types.h>

#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "llvm/Support/Error.h"

namespace accel::rt::launch {

// How a child process ended.
struct ExitStatus {
  pid_t pid = 0;
  int code = 0;    // exit code when !signaled
  int signal = 0;  // terminating signal when signaled
  bool signaled = false;

  bool success() const { return !signaled && code == 0; }
  // `exit code 3` or `signal 9 (Killed)`.
  std::string Describe() const;
};

// Process creation and reaping, behind an interface so the launcher's policy can be tested
// with scripted children.
class ProcessSpawner {
 public:
  virtual ~ProcessSpawner() = default;
  // Starts `argv` with the current environment plus `extra_env` (which wins on conflicts).
  virtual llvm::Expected<pid_t> Spawn(const std::vector<std::string>& argv,
                                      const std::map<std::string, std::string>& extra_env) = 0;
  // Waits up to `timeout` for any child to end; empty if none did.
  virtual std::optional<ExitStatus> WaitAny(std::chrono::milliseconds timeout) = 0;
  // Sends `signal` to the child `pid` and every process it started.
  virtual void Signal(pid_t pid, int signal) = 0;
};

// Real processes: posix_spawn (each child leading its own process group), waitpid, and kill
// of the child's whole group.
class PosixSpawner final : public ProcessSpawner {
 public:
  llvm::Expected<pid_t> Spawn(const std::vector<std::string>& argv,
                              const std::map<std::string, std::string>& extra_env) override;
  std::optional<ExitStatus> WaitAny(std::chrono::milliseconds timeout) override;
  void Signal(pid_t pid, int signal) override;
};

}  // namespace accel::rt::launch

#endif  // ACCEL_RUNTIME_LAUNCH_PROCESS_H_
