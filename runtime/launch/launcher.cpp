#include "runtime/launch/launcher.h"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <optional>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "runtime/launch/progress_monitor.h"

namespace accel::rt::launch {
namespace {

using Clock = std::chrono::steady_clock;

struct Failure {
  int rank = -1;
  ExitStatus status;
};

// How soon after a rank finished early a peer's failure is taken for its consequence.
constexpr std::chrono::seconds kLeftEarlyBlame{10};

// `0-3, 5, 7-15`: ascending ranks as runs.
std::string RanksAsRuns(const std::vector<int>& ranks) {
  std::vector<std::string> runs;
  for (size_t i = 0; i < ranks.size();) {
    size_t j = i;
    while (j + 1 < ranks.size() && ranks[j + 1] == ranks[j] + 1) ++j;
    runs.push_back(j == i ? std::to_string(ranks[i]) : fmt::format("{}-{}", ranks[i], ranks[j]));
    i = j + 1;
  }
  return fmt::format("{}", fmt::join(runs, ", "));
}

bool IsPeerFailureCode(const ExitStatus& status) {
  return !status.signaled && status.code == kWorkerExitPeerFailure;
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
  // Only accelrun's workers mean "a peer failed" by their exit code; a script's 3 is its own.
  bool IsPeerFailure(const ExitStatus& status) const {
    return options_.workers_speak_exit_codes && IsPeerFailureCode(status);
  }
  std::string DescribeFailure(const Failure& failure) const {
    std::string text = fmt::format("rank {} (pid {}) failed with {}", failure.rank, failure.status.pid,
                                   failure.status.Describe());
    if (IsPeerFailure(failure.status)) text += " (peer failure: a collective or the rendezvous failed)";
    return text;
  }
  LaunchResult LeftEarly(int rank, Clock::duration ago, LaunchResult result);
  // Relays output for up to `timeout`.
  void Pump(std::chrono::milliseconds timeout) {
    for (OutputChunk& chunk : spawner_.ReadOutput(timeout)) Route(chunk);
  }
  void Route(const OutputChunk& chunk) {
    auto it = rank_of_.find(chunk.pid);
    if (it == rank_of_.end()) return;
    if (chunk.stream == OutputStream::kProgress) {
      progress_.Add(it->second, chunk.bytes, Clock::now());
      return;
    }
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
    exits_[rank] = exit;
    for (OutputChunk& chunk : spawner_.DrainOutput(exit.pid)) Route(chunk);
    progress_.Ended(rank);
    // The line a worker left unfinished is still its last word.
    output_.Finish(rank, OutputStream::kStdout);
    output_.Finish(rank, OutputStream::kStderr);
    return rank;
  }
  void StopAll();
  // Ranks that printed an error line are on their way out: they get up to `limit` to exit on
  // their own, so that the verdict gives their own exit status rather than the stop signal.
  // Returns those that failed.
  std::vector<Failure> AwaitRanksWithErrors(Clock::duration limit);
  std::string Report(const Failure& named, const std::vector<Failure>& others, size_t stopped) const;
  LaunchResult Stall(const ProgressMonitor::Silence& silence, const std::vector<Failure>& waited,
                     LaunchResult result);
  std::string TailOf(int rank) const;
  // A running rank that is stopped (SIGSTOP, a debugger), with what it last said.
  std::optional<ProgressMonitor::Silence> StoppedRank() {
    for (const auto& [pid, rank] : running_) {
      if (!spawner_.IsStopped(pid)) continue;
      std::optional<ProgressMonitor::Silence> silence = progress_.Of(rank, Clock::now());
      if (silence) silence->stopped = true;
      return silence;
    }
    return std::nullopt;
  }

  const LaunchOptions& options_;
  ProcessSpawner& spawner_;
  WorkerOutput output_;
  std::map<pid_t, int> rank_of_;  // every worker started, running or not
  std::map<pid_t, int> running_;  // pid -> rank
  ProgressMonitor progress_;      // running ranks only
  // How each reaped worker ended, by rank.
  std::map<int, ExitStatus> exits_;
  // Workers that failed, reaped in this supervision: their process groups may still hold
  // children, which are stopped too. Workers that succeeded are left alone, since their ids
  // may belong to other processes by now.
  std::vector<pid_t> failed_;
};

std::vector<Failure> Supervisor::AwaitRanksWithErrors(Clock::duration limit) {
  std::vector<Failure> failed;
  auto deadline = Clock::now() + limit;
  auto pending = [this] {
    return std::any_of(running_.begin(), running_.end(),
                       [this](const auto& running) { return output_.ErrorOf(running.second).has_value(); });
  };
  while (pending() && Clock::now() < deadline) {
    Pump(std::chrono::milliseconds(20));
    while (std::optional<ExitStatus> exit = spawner_.WaitAny(std::chrono::milliseconds(0))) {
      int rank = Reaped(*exit);
      if (rank < 0 || exit->success()) continue;
      failed_.push_back(exit->pid);
      failed.push_back({rank, *exit});
    }
  }
  return failed;
}

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
    bool whole_job = options_.world_size == static_cast<int>(options_.workers.size());
    text += whole_job
                ? "\nno worker failed on its own and none is stuck: every rank gave up waiting for the "
                  "others (a network problem, or a timeout shorter than the work between collectives)"
                : "\nno worker of this launcher failed on its own: the cause is a rank it did not start "
                  "(another task or machine), or one that never joined";
  }
  for (const Failure& other : others) {
    text += fmt::format("\nthen {}", DescribeFailure(other));
    if (IsPeerFailure(other.status)) text += ", a consequence";
  }
  return text + TailOf(named.rank);
}

std::string Supervisor::TailOf(int rank) const {
  std::vector<std::string> tail = output_.Tail(rank);
  if (tail.empty()) return fmt::format("\nrank {} printed nothing", rank);
  // What the rank printed before its error: the error line and what is indented below it (a
  // traceback) were relayed as they came, and the error ends the verdict.
  std::optional<std::string> error = output_.ErrorOf(rank);
  auto error_line = [](const std::string& line) { return line.rfind(kWorkerErrorPrefix, 0) == 0; };
  if (error) tail.erase(std::find_if(tail.begin(), tail.end(), error_line), tail.end());
  std::string text;
  if (!tail.empty()) {
    text += fmt::format("\nlast {} line{} of rank {}{}:", tail.size(), tail.size() == 1 ? "" : "s", rank,
                        error ? " before its error" : "");
    for (const std::string& line : tail) text += "\n  | " + line;
  }
  if (!error) return text;
  std::vector<int> alike = output_.RanksWithError(rank);
  alike.erase(std::remove(alike.begin(), alike.end(), rank), alike.end());
  if (!alike.empty()) {
    text += fmt::format("\n{} {} failed with the same error", alike.size() == 1 ? "rank" : "ranks",
                        RanksAsRuns(alike));
  }
  // The cause, last: what a reader of a long log finds at its end.
  return text + fmt::format("\nrank {}'s error: {}", rank, *error);
}

// Names `silence`'s rank, still running but making no progress, as the failure, after the ranks
// in `waited` failed waiting for it (or none did, and the watchdog fired); stops every worker.
LaunchResult Supervisor::Stall(const ProgressMonitor::Silence& silence, const std::vector<Failure>& waited,
                               LaunchResult result) {
  pid_t pid = 0;
  for (const auto& [running_pid, rank] : running_)
    if (rank == silence.rank) pid = running_pid;
  size_t stopped = running_.size() - 1;
  // Stopped (SIGSTOP) or spinning, it would not act on SIGTERM.
  spawner_.Signal(pid, SIGKILL);
  StopAll();
  std::string text = fmt::format("rank {} (pid {}) {}made no progress for {}", silence.rank, pid,
                                 silence.stopped ? "is stopped (SIGSTOP or a debugger) and " : "",
                                 ProgressMonitor::Describe(silence));
  // Silent in its own work past the long limit, no timeout was involved: say which limit.
  const bool past_work_limit = !silence.waiting && !silence.stopped && !silence.last.empty() &&
                               silence.silent_for > options_.work_limit;
  if (!waited.empty())
    text += "; its peers failed waiting for it";
  else if (past_work_limit)
    text += fmt::format("; no own work of a rank stays silent for longer than {:.0f} s",
                        std::chrono::duration<double>(options_.work_limit).count());
  else
    text += "; the plan's timeout has passed";
  text += fmt::format("; stopped it and {} other worker{}", stopped, stopped == 1 ? "" : "s");
  for (const Failure& other : waited)
    text += fmt::format("\nbefore that, {}, a consequence", DescribeFailure(other));
  result.failed_rank = silence.rank;
  result.failed_status.pid = pid;
  result.stalled = true;
  result.failed_tail = output_.Tail(silence.rank);
  result.failed_error = output_.ErrorAsPrinted(silence.rank);
  result.message = text + TailOf(silence.rank);
  return result;
}

// Names `rank`, which finished `ago` while the others kept running, as the failure; stops them.
// A rank that leaves early leaves its peers waiting for it in their next collective.
LaunchResult Supervisor::LeftEarly(int rank, Clock::duration ago, LaunchResult result) {
  std::vector<int> waiting;
  for (const auto& [pid, running_rank] : running_) waiting.push_back(running_rank);
  std::sort(waiting.begin(), waiting.end());
  size_t stopped = running_.size();
  StopAll();
  result.failed_rank = rank;
  result.stalled = true;
  result.failed_tail = output_.Tail(rank);
  result.failed_error = output_.ErrorAsPrinted(rank);
  result.message = fmt::format(
      "rank {} exited successfully {:.0f} s before its peers, which were still running (rank{} {}): a rank "
      "that "
      "leaves early leaves the others waiting for it in their next collective; stopped {} worker{} (the "
      "limit is "
      "--early-exit-timeout)",
      rank, std::chrono::duration<double>(ago).count(), waiting.size() == 1 ? "" : "s",
      fmt::join(waiting, ", "), stopped, stopped == 1 ? "" : "s");
  result.message += TailOf(rank);
  return result;
}

LaunchResult Supervisor::Run() {
  LaunchResult result;
  for (const WorkerSpec& worker : options_.workers) {
    llvm::Expected<pid_t> pid = spawner_.Spawn(worker.argv, worker.env, worker.store_listen_fd);
    if (!pid) {
      result.message = fmt::format("cannot start rank {}: {}", worker.rank, llvm::toString(pid.takeError()));
      result.failed_rank = worker.rank;
      result.start_failed = true;
      StopAll();
      return result;
    }
    rank_of_[*pid] = worker.rank;
    running_[*pid] = worker.rank;
    progress_.Started(worker.rank, Clock::now());
  }

  std::optional<Failure> root_cause;
  std::vector<Failure> peer_failures;
  Clock::time_point window_end;
  // The first rank that finished while others still ran, and when.
  std::optional<std::pair<int, Clock::time_point>> first_done;
  while (!running_.empty() && !root_cause) {
    if (options_.interrupted()) {
      size_t count = running_.size();
      StopAll();
      result.interrupted = true;
      result.message = fmt::format("interrupted; stopped {} worker{}", count, count == 1 ? "" : "s");
      return result;
    }
    progress_.Tick(Clock::now());
    Pump(std::chrono::milliseconds(50));
    while (std::optional<ExitStatus> exit = spawner_.WaitAny(std::chrono::milliseconds(0))) {
      int rank = Reaped(*exit);
      if (rank >= 0 && exit->success() && !first_done && !running_.empty()) first_done = {rank, Clock::now()};
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
    if (options_.early_exit_limit.count() > 0 && first_done && !running_.empty() && peer_failures.empty() &&
        Clock::now() - first_done->second >= options_.early_exit_limit)
      return LeftEarly(first_done->first, Clock::now() - first_done->second, std::move(result));
    if (options_.collective_timeout.count() > 0 && !root_cause) {
      // A stopped rank needs no margin: nothing it could still say would change the verdict.
      // Looked for only once some rank has been silent for the whole timeout.
      const ProgressMonitor::Limits whole_timeout{options_.collective_timeout, options_.collective_timeout,
                                                  options_.first_word_limit};
      if (progress_.Stalled(Clock::now(), whole_timeout)) {
        if (std::optional<ProgressMonitor::Silence> stopped = StoppedRank();
            stopped && stopped->silent_for >= options_.collective_timeout)
          return Stall(*stopped, peer_failures, std::move(result));
      }
      // A wait for peers is bounded by the timeout; own work, which says so while it runs, only
      // by the generous limit (a slow save or model load is not a stall).
      const ProgressMonitor::Limits limits{options_.collective_timeout + options_.watchdog_margin,
                                           options_.work_limit, options_.first_word_limit};
      if (std::optional<ProgressMonitor::Silence> silence = progress_.Stalled(Clock::now(), limits)) {
        // The first rank past the limit may be one waiting for the rank really stuck.
        std::optional<ProgressMonitor::Silence> blamed = StoppedRank();
        if (!blamed) blamed = progress_.SilentWorker(Clock::now(), options_.collective_timeout / 2);
        return Stall(blamed ? *blamed : *silence, peer_failures, std::move(result));
      }
      // Every failure so far is a rank that gave up waiting in a collective. A rank of this
      // launcher that is stopped, or silent in its own work (spinning, deadlocked), is whom they
      // waited for.
      if (!peer_failures.empty()) {
        if (std::optional<ProgressMonitor::Silence> stopped = StoppedRank())
          return Stall(*stopped, peer_failures, std::move(result));
        if (std::optional<ProgressMonitor::Silence> silent =
                progress_.SilentWorker(Clock::now(), options_.collective_timeout / 2))
          return Stall(*silent, peer_failures, std::move(result));
      }
    }
  }
  if (!root_cause && peer_failures.empty()) {
    result.success = true;
    return result;
  }
  Failure named = root_cause ? *root_cause : peer_failures.front();
  // A rank that left just before its peer failed is the cause: the failure is the peer's next
  // collective finding it gone (`Connection closed by peer`).
  if (options_.early_exit_limit.count() > 0 && first_done &&
      Clock::now() - first_done->second <= kLeftEarlyBlame) {
    size_t stopped = running_.size();
    StopAll();
    result.failed_rank = first_done->first;
    result.stalled = true;
    result.failed_tail = output_.Tail(named.rank);
    result.failed_error = output_.ErrorAsPrinted(named.rank);
    result.message = fmt::format(
        "rank {} exited successfully while its peers were still running, and {} {:.1f} s later: a rank that "
        "leaves "
        "early breaks its peers' next collective; stopped {} other worker{}",
        first_done->first, DescribeFailure(named),
        std::chrono::duration<double>(Clock::now() - first_done->second).count(), stopped,
        stopped == 1 ? "" : "s");
    result.message += TailOf(named.rank);
    return result;
  }
  for (Failure& failure : AwaitRanksWithErrors(options_.grace)) peer_failures.push_back(failure);
  size_t stopped = running_.size();
  StopAll();
  // Ranks that failed alike (one missing file, one shape error) exit in any order: the one named
  // is the one whose error line came first, which the console shows.
  if (std::optional<int> first = output_.ErrorPrintedBy(named.rank); first && *first != named.rank) {
    auto exit = exits_.find(*first);
    if (exit != exits_.end() && !exit->second.success()) named = Failure{*first, exit->second};
  }
  // Ranks that failed with the named rank's own error are one line of the verdict (TailOf).
  std::optional<std::string> named_error = output_.ErrorOf(named.rank);
  std::vector<Failure> others;
  for (const Failure& failure : peer_failures) {
    bool alike = named_error && output_.ErrorOf(failure.rank) == named_error;
    if (failure.status.pid != named.status.pid && !alike) others.push_back(failure);
  }
  result.failed_rank = named.rank;
  result.failed_status = named.status;
  result.peer_failure_only = !root_cause;
  result.failed_tail = output_.Tail(named.rank);
  result.failed_error = output_.ErrorAsPrinted(named.rank);
  result.message = Report(named, others, stopped);
  return result;
}

}  // namespace

LaunchResult RunWorkers(const LaunchOptions& options, ProcessSpawner& spawner) {
  return Supervisor(options, spawner).Run();
}

std::string WithHugePageMalloc(const std::string& existing) {
  if (existing.find("glibc.malloc.hugetlb") != std::string::npos) return existing;
  return existing.empty() ? "glibc.malloc.hugetlb=1" : existing + ":glibc.malloc.hugetlb=1";
}

std::chrono::milliseconds FirstWordLimit(std::chrono::milliseconds collective_timeout,
                                         std::chrono::milliseconds watchdog_margin) {
  return std::max(collective_timeout, std::chrono::milliseconds(60000)) + watchdog_margin;
}

std::chrono::milliseconds OwnWorkLimit(std::chrono::milliseconds collective_timeout,
                                       std::chrono::milliseconds watchdog_margin) {
  return std::max(collective_timeout, std::chrono::milliseconds(std::chrono::minutes(10))) + watchdog_margin;
}

}  // namespace accel::rt::launch
