#include "runtime/launch/process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <iterator>
#include <thread>

#include <fmt/format.h>

#include "runtime/launch/rendezvous_port.h"
#include "runtime/support/progress.h"

extern char** environ;

namespace accel::rt::launch {
namespace {

llvm::Error SystemError(int error, const std::string& what) {
  return llvm::createStringError(std::error_code(error, std::generic_category()), "%s: %s", what.c_str(),
                                 std::strerror(error));
}

}  // namespace

std::string ExitStatus::Describe() const {
  if (signaled) {
    const char* name = strsignal(signal);
    return fmt::format("signal {} ({})", signal, name ? name : "unknown");
  }
  return fmt::format("exit code {}", code);
}

PosixSpawner::~PosixSpawner() {
  for (Pipe& pipe : pipes_) ::close(pipe.fd);
}

llvm::Expected<pid_t> PosixSpawner::Spawn(const std::vector<std::string>& argv,
                                          const std::map<std::string, std::string>& extra_env,
                                          int store_listen_fd) {
  std::vector<std::string> env_storage;
  for (char** entry = environ; *entry != nullptr; ++entry) {
    std::string text = *entry;
    std::string key = text.substr(0, text.find('='));
    if (extra_env.count(key) == 0 && key != progress::kEnvFd && key != kEnvStoreListenFd)
      env_storage.push_back(std::move(text));
  }
  for (const auto& [key, value] : extra_env) env_storage.push_back(key + "=" + value);
  env_storage.push_back(fmt::format("{}={}", progress::kEnvFd, kProgressFd));
  if (store_listen_fd >= 0) env_storage.push_back(fmt::format("{}={}", kEnvStoreListenFd, kStoreListenFd));

  std::vector<char*> c_argv;
  for (const std::string& arg : argv) c_argv.push_back(const_cast<char*>(arg.c_str()));
  c_argv.push_back(nullptr);
  std::vector<char*> c_env;
  for (std::string& entry : env_storage) c_env.push_back(entry.data());
  c_env.push_back(nullptr);

  // Close-on-exec pipes: the dup2 onto 1, 2 and kProgressFd clears the flag in the child only,
  // so no other worker inherits this one's ends. The read ends are non-blocking for DrainOutput.
  constexpr OutputStream kStreams[] = {OutputStream::kStdout, OutputStream::kStderr, OutputStream::kProgress};
  constexpr int kChildFds[] = {STDOUT_FILENO, STDERR_FILENO, kProgressFd};
  int ends[3][2] = {{-1, -1}, {-1, -1}, {-1, -1}};
  auto close_all = [&ends] {
    for (auto& pair : ends)
      for (int& fd : pair)
        if (fd >= 0) ::close(fd), fd = -1;
  };
  for (auto& pair : ends) {
    if (::pipe2(pair, O_CLOEXEC) != 0) {
      int error = errno;
      close_all();
      return SystemError(error, "cannot create the output pipes of `" + argv[0] + "`");
    }
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  for (int i = 0; i < 3; ++i) posix_spawn_file_actions_adddup2(&actions, ends[i][1], kChildFds[i]);
  // The held port's socket is close-on-exec and above 10 (HeldPort): dup2 gives the child alone
  // a copy that survives exec.
  if (store_listen_fd >= 0) posix_spawn_file_actions_adddup2(&actions, store_listen_fd, kStoreListenFd);

  // Each worker leads its own process group, so stopping a worker also stops whatever it
  // started (a shell's children, data-loading helpers) instead of orphaning them.
  posix_spawnattr_t attributes;
  posix_spawnattr_init(&attributes);
  posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETPGROUP);
  posix_spawnattr_setpgroup(&attributes, 0);
  pid_t pid = 0;
  int error = posix_spawn(&pid, c_argv[0], &actions, &attributes, c_argv.data(), c_env.data());
  posix_spawnattr_destroy(&attributes);
  posix_spawn_file_actions_destroy(&actions);
  for (auto& pair : ends) ::close(pair[1]);
  if (error != 0) {
    for (auto& pair : ends) ::close(pair[0]);
    return SystemError(error, "cannot start `" + argv[0] + "`");
  }
  for (int i = 0; i < 3; ++i) {
    ::fcntl(ends[i][0], F_SETFL, ::fcntl(ends[i][0], F_GETFL) | O_NONBLOCK);
    pipes_.push_back({ends[i][0], pid, kStreams[i]});
  }
  return pid;
}

std::optional<ExitStatus> PosixSpawner::WaitAny(std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  // Polling keeps the launcher free of SIGCHLD handlers; 20 ms is invisible next to training.
  while (true) {
    int status = 0;
    pid_t pid = ::waitpid(-1, &status, WNOHANG);
    if (pid > 0) {
      ExitStatus exit;
      exit.pid = pid;
      exit.signaled = WIFSIGNALED(status);
      exit.signal = exit.signaled ? WTERMSIG(status) : 0;
      exit.code = WIFEXITED(status) ? WEXITSTATUS(status) : 0;
      return exit;
    }
    if (pid < 0 && errno != EINTR) return std::nullopt;  // no children left
    if (std::chrono::steady_clock::now() >= deadline) return std::nullopt;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

namespace {

// What one round of the supervision loop reads from one pipe: a few reads' worth, so that every
// pipe, and the watchdog, gets its turn while a child floods its output.
constexpr size_t kReadPerRound = 256 * 1024;
// What is read from an ended child's pipes at once: more than a pipe holds (64 KiB by default, 1 MiB
// at most without privileges), so its last lines come before the verdict on it; a process it left
// behind that keeps writing is read on later rounds instead of holding the launcher here.
constexpr size_t kDrainAtExit = 4 << 20;

}  // namespace

void PosixSpawner::ReadAvailable(Pipe& pipe, std::vector<OutputChunk>& out, size_t max_bytes) {
  OutputChunk chunk{pipe.pid, pipe.stream, "", false};
  char buffer[16384];
  while (chunk.bytes.size() < max_bytes) {
    ssize_t n = ::read(pipe.fd, buffer, sizeof(buffer));
    if (n > 0) {
      chunk.bytes.append(buffer, static_cast<size_t>(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    // End of file, or an error other than "nothing more for now": the stream is over.
    if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK)) {
      chunk.eof = true;
      ::close(pipe.fd);
      pipe.fd = -1;
    }
    break;
  }
  if (!chunk.bytes.empty() || chunk.eof) out.push_back(std::move(chunk));
}

void PosixSpawner::CloseFinished() {
  pipes_.erase(std::remove_if(pipes_.begin(), pipes_.end(), [](const Pipe& pipe) { return pipe.fd < 0; }),
               pipes_.end());
}

std::vector<OutputChunk> PosixSpawner::ReadOutput(std::chrono::milliseconds timeout) {
  std::vector<OutputChunk> out;
  std::vector<pollfd> fds;
  for (const Pipe& pipe : pipes_) fds.push_back({pipe.fd, POLLIN, 0});
  // With no stream open, poll just sleeps: the caller's loop keeps its pace.
  int ready = ::poll(fds.data(), fds.size(), static_cast<int>(timeout.count()));
  if (ready <= 0) return out;
  for (size_t i = 0; i < fds.size(); ++i) {
    if (fds[i].revents != 0) ReadAvailable(pipes_[i], out, kReadPerRound);
  }
  CloseFinished();
  return out;
}

std::vector<OutputChunk> PosixSpawner::DrainOutput(pid_t pid) {
  std::vector<OutputChunk> out;
  for (Pipe& pipe : pipes_) {
    if (pipe.pid == pid) ReadAvailable(pipe, out, kDrainAtExit);
  }
  CloseFinished();
  return out;
}

bool PosixSpawner::IsStopped(pid_t pid) {
  // The state letter follows the command name, which may itself hold spaces and parentheses.
  std::ifstream stat(fmt::format("/proc/{}/stat", pid));
  std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
  size_t end = text.rfind(')');
  if (end == std::string::npos || end + 2 >= text.size()) return false;
  char state = text[end + 2];
  return state == 'T' || state == 't';
}

void PosixSpawner::Signal(pid_t pid, int signal) {
  // The whole group: the worker and anything it started.
  ::kill(-pid, signal);
}

}  // namespace accel::rt::launch
