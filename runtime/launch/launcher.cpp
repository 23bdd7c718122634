#include "runtime/launch/launcher.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <fmt/format.h>

namespace accel::rt::launch {
namespace {

// Stops every worker still running and reaps them all before returning. `exited` are workers
// already reaped: their process groups may still hold children, which are stopped too.
void StopAll(std::map<pid_t, int>& running, const std::vector<pid_t>& exited, ProcessSpawner& spawner,
             std::chrono::milliseconds grace) {
  for (pid_t pid : exited) spawner.Signal(pid, SIGTERM);
  for (const auto& [pid, rank] : running) spawner.Signal(pid, SIGTERM);
  auto deadline = std::chrono::steady_clock::now() + grace;
  while (!running.empty() && std::chrono::steady_clock::now() < deadline) {
    if (std::optional<ExitStatus> exit = spawner.WaitAny(std::chrono::milliseconds(50)))
      running.erase(exit->pid);
  }
  for (pid_t pid : exited) spawner.Signal(pid, SIGKILL);
  for (const auto& [pid, rank] : running) spawner.Signal(pid, SIGKILL);
  // SIGKILL cannot be ignored, but a process stuck in the kernel (a hung network file system)
  // dies only when the kernel lets it: wait for it, within reason, rather than leave it behind.
  auto kill_deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (!running.empty() && std::chrono::steady_clock::now() < kill_deadline) {
    std::optional<ExitStatus> exit = spawner.WaitAny(std::chrono::milliseconds(1000));
    if (exit) running.erase(exit->pid);
  }
}

}  // namespace

LaunchResult RunWorkers(const LaunchOptions& options, ProcessSpawner& spawner) {
  LaunchResult result;
  int world_size = options.processes_per_machine * options.num_machines;
  std::map<pid_t, int> running;  // pid -> global rank
  std::vector<pid_t> exited;
  for (int local = 0; local < options.processes_per_machine; ++local) {
    int rank = options.node_rank * options.processes_per_machine + local;
    std::map<std::string, std::string> env = options.worker_env;
    env[kEnvRank] = env["RANK"] = std::to_string(rank);
    env[kEnvLocalRank] = env["LOCAL_RANK"] = std::to_string(local);
    env[kEnvWorldSize] = env["WORLD_SIZE"] = std::to_string(world_size);
    env["LOCAL_WORLD_SIZE"] = std::to_string(options.processes_per_machine);
    env[kEnvMasterAddr] = env["MASTER_ADDR"] = options.master_addr;
    env[kEnvMasterPort] = env["MASTER_PORT"] = std::to_string(options.master_port);
    llvm::Expected<pid_t> pid = spawner.Spawn(options.worker_argv, env);
    if (!pid) {
      result.message = fmt::format("cannot start rank {}: {}", rank, llvm::toString(pid.takeError()));
      result.failed_rank = rank;
      StopAll(running, exited, spawner, options.grace);
      return result;
    }
    running[*pid] = rank;
  }

  while (!running.empty()) {
    if (options.interrupted()) {
      result.message =
          fmt::format("interrupted; stopped {} worker{}", running.size(), running.size() == 1 ? "" : "s");
      StopAll(running, exited, spawner, options.grace);
      return result;
    }
    std::optional<ExitStatus> exit = spawner.WaitAny(std::chrono::milliseconds(200));
    if (!exit) continue;
    auto it = running.find(exit->pid);
    if (it == running.end()) continue;  // not one of ours
    int rank = it->second;
    running.erase(it);
    if (exit->success()) continue;
    // The failed worker was reaped just now, so its pid (and group id) cannot have been
    // reused yet: stop what it left behind too. Workers that finished earlier are left alone,
    // since their ids may belong to other processes by now.
    exited.push_back(exit->pid);
    result.failed_rank = rank;
    result.failed_status = *exit;
    size_t others = running.size();
    StopAll(running, exited, spawner, options.grace);
    result.message = fmt::format("rank {} (pid {}) failed with {}; stopped {} other worker{}", rank,
                                 exit->pid, exit->Describe(), others, others == 1 ? "" : "s");
    return result;
  }
  result.success = true;
  return result;
}

int PickFreePort() {
  // Bound to 127.0.0.1 and released at once: rank 0's store binds it a moment later. Another
  // process could take it in between; the store then fails to bind and the job fails fast.
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return 0;
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  address.sin_port = 0;
  socklen_t length = sizeof(address);
  int port = 0;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) == 0 &&
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) == 0) {
    port = ntohs(address.sin_port);
  }
  ::close(fd);
  return port;
}

std::string WithHugePageMalloc(const std::string& existing) {
  if (existing.find("glibc.malloc.hugetlb") != std::string::npos) return existing;
  return existing.empty() ? "glibc.malloc.hugetlb=1" : existing + ":glibc.malloc.hugetlb=1";
}

}  // namespace accel::rt::launch
