#include "runtime/launch/process.h"

#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <thread>

#include <fmt/format.h>

extern char** environ;

namespace accel::rt::launch {

std::string ExitStatus::Describe() const {
  if (signaled) {
    const char* name = strsignal(signal);
    return fmt::format("signal {} ({})", signal, name ? name : "unknown");
  }
  return fmt::format("exit code {}", code);
}

llvm::Expected<pid_t> PosixSpawner::Spawn(const std::vector<std::string>& argv,
                                          const std::map<std::string, std::string>& extra_env) {
  std::vector<std::string> env_storage;
  for (char** entry = environ; *entry != nullptr; ++entry) {
    std::string text = *entry;
    std::string key = text.substr(0, text.find('='));
    if (extra_env.count(key) == 0) env_storage.push_back(std::move(text));
  }
  for (const auto& [key, value] : extra_env) env_storage.push_back(key + "=" + value);

  std::vector<char*> c_argv;
  for (const std::string& arg : argv) c_argv.push_back(const_cast<char*>(arg.c_str()));
  c_argv.push_back(nullptr);
  std::vector<char*> c_env;
  for (std::string& entry : env_storage) c_env.push_back(entry.data());
  c_env.push_back(nullptr);

  // Each worker leads its own process group, so stopping a worker also stops whatever it
  // started (a shell's children, data-loading helpers) instead of orphaning them.
  posix_spawnattr_t attributes;
  posix_spawnattr_init(&attributes);
  posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETPGROUP);
  posix_spawnattr_setpgroup(&attributes, 0);
  pid_t pid = 0;
  int error = posix_spawn(&pid, c_argv[0], nullptr, &attributes, c_argv.data(), c_env.data());
  posix_spawnattr_destroy(&attributes);
  if (error != 0) {
    return llvm::createStringError(std::error_code(error, std::generic_category()), "cannot start `%s`: %s",
                                   argv[0].c_str(), std::strerror(error));
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

void PosixSpawner::Signal(pid_t pid, int signal) {
  // The whole group: the worker and anything it started.
  ::kill(-pid, signal);
}

}  // namespace accel::rt::launch
