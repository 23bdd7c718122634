#include "runtime/launch/launcher.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <optional>

#include <fmt/format.h>

namespace accel::rt::launch {
namespace {

using Clock = std::chrono::steady_clock;

struct Failure {
  int rank = -1;
  ExitStatus status;
};

bool IsPeerFailure(const ExitStatus& status) {
  return !status.signaled && status.code == kWorkerExitPeerFailure;
}

std::string DescribeFailure(const Failure& failure) {
  std::string text = fmt::format("rank {} (pid {}) failed with {}", failure.rank, failure.status.pid,
                                 failure.status.Describe());
  if (IsPeerFailure(failure.status)) text += " (peer failure: a collective or the rendezvous failed)";
  return text;
}

// One supervision: the workers, their output, and who is still running.
class Supervisor {
 public:
  Supervisor(const LaunchOptions& options, ProcessSpawner& spawner)
      : options_(options),
        spawner_(spawner),
        output_(options.prefix_output, options.tail_lines, options.print) {}

  LaunchResult Run();

 private:
  // Relays output for up to `timeout`.
  void Pump(std::chrono::milliseconds timeout) {
    for (OutputChunk& chunk : spawner_.ReadOutput(timeout)) Route(chunk);
  }
  void Route(const OutputChunk& chunk) {
    auto it = rank_of_.find(chunk.pid);
    if (it == rank_of_.end()) return;
    output_.Add(it->second, chunk.stream, chunk.bytes);
    if (chunk.eof) output_.Finish(it->second, chunk.stream);
  }
  // Bookkeeping for a reaped worker: its remaining output is relayed before anything else is
  // said about it. Returns its rank, or -1 for a child that is not ours.
  int Reaped(const ExitStatus& exit) {
    auto it = running_.find(exit.pid);
    if (it == running_.end()) return -1;
    int rank = it->second;
    running_.erase(it);
    for (OutputChunk& chunk : spawner_.DrainOutput(exit.pid)) Route(chunk);
    // The line a worker left unfinished is still its last word.
    output_.Finish(rank, OutputStream::kStdout);
    output_.Finish(rank, OutputStream::kStderr);
    return rank;
  }
  void StopAll();
  std::string Report(const Failure& named, const std::vector<Failure>& others, size_t stopped) const;

  const LaunchOptions& options_;
  ProcessSpawner& spawner_;
  WorkerOutput output_;
  std::map<pid_t, int> rank_of_;  // every worker started, running or not
  std::map<pid_t, int> running_;  // pid -> rank
  // Workers that failed, reaped in this supervision: their process groups may still hold
  // children, which are stopped too. Workers that succeeded are left alone, since their ids
  // may belong to other processes by now.
  std::vector<pid_t> failed_;
};

void Supervisor::StopAll() {
  for (pid_t pid : failed_) spawner_.Signal(pid, SIGTERM);
  for (const auto& [pid, rank] : running_) spawner_.Signal(pid, SIGTERM);
  auto deadline = Clock::now() + options_.grace;
  while (!running_.empty() && Clock::now() < deadline) {
    Pump(std::chrono::milliseconds(20));
    while (std::optional<ExitStatus> exit = spawner_.WaitAny(std::chrono::milliseconds(0))) Reaped(*exit);
  }
  for (pid_t pid : failed_) spawner_.Signal(pid, SIGKILL);
  for (const auto& [pid, rank] : running_) spawner_.Signal(pid, SIGKILL);
  // SIGKILL cannot be ignored, but a process stuck in the kernel (a hung network file system)
  // dies only when the kernel lets it: wait for it, within reason, rather than leave it behind.
  auto kill_deadline = Clock::now() + std::chrono::seconds(30);
  while (!running_.empty() && Clock::now() < kill_deadline) {
    Pump(std::chrono::milliseconds(20));
    while (std::optional<ExitStatus> exit = spawner_.WaitAny(std::chrono::milliseconds(0))) Reaped(*exit);
  }
}

std::string Supervisor::Report(const Failure& named, const std::vector<Failure>& others,
                               size_t stopped) const {
  std::string text = DescribeFailure(named);
  text += fmt::format("; stopped {} other worker{}", stopped, stopped == 1 ? "" : "s");
  if (IsPeerFailure(named.status)) {
    text +=
        "\nno worker on this machine failed on its own: the cause is a rank on another machine, "
        "or one that never joined";
  }
  for (const Failure& other : others) {
    text += fmt::format("\nthen {}", DescribeFailure(other));
    if (IsPeerFailure(other.status)) text += ", a consequence";
  }
  std::vector<std::string> tail = output_.Tail(named.rank);
  if (tail.empty()) {
    text += fmt::format("\nrank {} printed nothing", named.rank);
  } else {
    text += fmt::format("\nlast {} line{} of rank {}:", tail.size(), tail.size() == 1 ? "" : "s", named.rank);
    for (const std::string& line : tail) text += "\n  | " + line;
  }
  return text;
}

LaunchResult Supervisor::Run() {
  LaunchResult result;
  for (const WorkerSpec& worker : options_.workers) {
    llvm::Expected<pid_t> pid = spawner_.Spawn(worker.argv, worker.env);
    if (!pid) {
      result.message = fmt::format("cannot start rank {}: {}", worker.rank, llvm::toString(pid.takeError()));
      result.failed_rank = worker.rank;
      result.start_failed = true;
      StopAll();
      return result;
    }
    rank_of_[*pid] = worker.rank;
    running_[*pid] = worker.rank;
  }

  std::optional<Failure> root_cause;
  std::vector<Failure> peer_failures;
  Clock::time_point window_end;
  while (!running_.empty() && !root_cause) {
    if (options_.interrupted()) {
      size_t count = running_.size();
      StopAll();
      result.interrupted = true;
      result.message = fmt::format("interrupted; stopped {} worker{}", count, count == 1 ? "" : "s");
      return result;
    }
    Pump(std::chrono::milliseconds(50));
    while (std::optional<ExitStatus> exit = spawner_.WaitAny(std::chrono::milliseconds(0))) {
      int rank = Reaped(*exit);
      if (rank < 0 || exit->success()) continue;
      // A reaped worker's pid cannot have been reused while the launcher is still deciding.
      failed_.push_back(exit->pid);
      Failure failure{rank, *exit};
      if (!IsPeerFailure(*exit)) {
        root_cause = failure;
        break;
      }
      // A collective error is usually the echo of another rank's death, which can reach the
      // launcher a little later (a dying process takes time to be reaped): wait for it.
      if (peer_failures.empty()) window_end = Clock::now() + options_.root_cause_window;
      peer_failures.push_back(failure);
    }
    if (!root_cause && !peer_failures.empty() && Clock::now() >= window_end) break;
  }
  if (!root_cause && peer_failures.empty()) {
    result.success = true;
    return result;
  }
  Failure named = root_cause ? *root_cause : peer_failures.front();
  std::vector<Failure> others;
  for (const Failure& failure : peer_failures)
    if (failure.status.pid != named.status.pid) others.push_back(failure);
  size_t stopped = running_.size();
  StopAll();
  result.failed_rank = named.rank;
  result.failed_status = named.status;
  result.peer_failure_only = !root_cause;
  result.failed_tail = output_.Tail(named.rank);
  result.message = Report(named, others, stopped);
  return result;
}

}  // namespace

LaunchResult RunWorkers(const LaunchOptions& options, ProcessSpawner& spawner) {
  return Supervisor(options, spawner).Run();
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
