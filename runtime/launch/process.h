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

// kProgress is the worker's progress pipe (runtime/support/progress.h), read by the watchdog and
// never printed.
enum class OutputStream { kStdout, kStderr, kProgress };

// Bytes a child wrote to its stdout or stderr, which the spawner captures through pipes.
struct OutputChunk {
  pid_t pid = 0;
  OutputStream stream = OutputStream::kStdout;
  std::string bytes;
  // The stream is closed: every process holding it (the child and whatever it started) has
  // ended or closed it. `bytes` may still hold its last bytes.
  bool eof = false;
};

// Process creation, reaping and output capture, behind an interface so the launcher's policy
// can be tested with scripted children.
class ProcessSpawner {
 public:
  virtual ~ProcessSpawner() = default;
  // Starts `argv` with the current environment plus `extra_env` (which wins on conflicts).
  // The child's stdout and stderr go to pipes read by ReadOutput and DrainOutput, and so does
  // its progress pipe (descriptor kProgressFd, named by ACCEL_PROGRESS_FD). A
  // `store_listen_fd` of 0 or more is handed to the child as kStoreListenFd (HeldPort).
  virtual llvm::Expected<pid_t> Spawn(const std::vector<std::string>& argv,
                                      const std::map<std::string, std::string>& extra_env,
                                      int store_listen_fd) = 0;
  // Waits up to `timeout` for any child to end; empty if none did.
  virtual std::optional<ExitStatus> WaitAny(std::chrono::milliseconds timeout) = 0;
  // Waits up to `timeout` for output from any child; returns what arrived, possibly nothing.
  // Sleeps `timeout` when no stream is open.
  virtual std::vector<OutputChunk> ReadOutput(std::chrono::milliseconds timeout) = 0;
  // Whatever `pid` has written that is still unread, without waiting. Called after `pid` was
  // reaped, it returns everything the child wrote before it ended: no line is lost at exit.
  virtual std::vector<OutputChunk> DrainOutput(pid_t pid) = 0;
  // Sends `signal` to the child `pid` and every process it started.
  virtual void Signal(pid_t pid, int signal) = 0;
  // Whether the child `pid` is stopped (SIGSTOP, a debugger): alive, but making no progress.
  virtual bool IsStopped(pid_t pid) = 0;
};

// The descriptor a worker writes its progress lines to.
inline constexpr int kProgressFd = 3;

// Real processes: posix_spawn (each child leading its own process group, its stdout and
// stderr on non-blocking pipes), waitpid, and kill of the child's whole group.
class PosixSpawner final : public ProcessSpawner {
 public:
  PosixSpawner() = default;
  PosixSpawner(const PosixSpawner&) = delete;
  PosixSpawner& operator=(const PosixSpawner&) = delete;
  // Closes the pipes still open (held by processes the children left behind).
  ~PosixSpawner() override;

  llvm::Expected<pid_t> Spawn(const std::vector<std::string>& argv,
                              const std::map<std::string, std::string>& extra_env,
                              int store_listen_fd) override;
  std::optional<ExitStatus> WaitAny(std::chrono::milliseconds timeout) override;
  std::vector<OutputChunk> ReadOutput(std::chrono::milliseconds timeout) override;
  std::vector<OutputChunk> DrainOutput(pid_t pid) override;
  void Signal(pid_t pid, int signal) override;
  bool IsStopped(pid_t pid) override;

 private:
  struct Pipe {
    int fd = -1;
    pid_t pid = 0;
    OutputStream stream = OutputStream::kStdout;
  };
  // Reads what `pipe` holds now into `out`, at most `max_bytes`; closes it at end of file. The
  // bound matters: a child that writes as fast as it is read keeps the pipe from ever running
  // dry, and one read to exhaustion would hold all it wrote in memory (and starve the other
  // pipes and the watchdog) for as long as it kept writing. What is left is read next time.
  void ReadAvailable(Pipe& pipe, std::vector<OutputChunk>& out, size_t max_bytes);
  void CloseFinished();

  std::vector<Pipe> pipes_;
};

}  // namespace accel::rt::launch

#endif  // ACCEL_RUNTIME_LAUNCH_PROCESS_H_
