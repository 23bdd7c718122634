#ifndef ACCEL_RUNTIME_LAUNCH_LAUNCHER_H_
#define ACCEL_RUNTIME_LAUNCH_LAUNCHER_H_

#include <chrono>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/launch/process.h"
#include "runtime/launch/worker_output.h"

namespace accel::rt::launch {

// Exit codes of `accelrun-worker` (docs/launch.md).
inline constexpr int kWorkerExitFailed = 1;

inline constexpr int kWorkerExitUsage = 2;
// A collective or the rendezvous failed: a peer died, never joined, or the group's timeout
// passed. The worker is a casualty; the root cause is another rank's failure.
inline constexpr int kWorkerExitPeerFailure = 3;

// One worker to start.
struct WorkerSpec {
  int rank = 0;
  std::vector<std::string> argv;           // argv[0] must be an absolute path
  std::map<std::string, std::string> env;  // added to the launcher's environment
  // The listening socket of the port this launcher holds for the rendezvous (HeldPort), for
  // rank 0's store; -1 for every other worker, and when the port is not the launcher's.
  int store_listen_fd = -1;
};

struct LaunchOptions {
  std::vector<WorkerSpec> workers;
  // Ranks in the whole job; more than `workers` when other launchers (other tasks or
  // machines) start the rest. 0: unknown.
  int world_size = 0;
  // Prefix each line of worker output with `[rank N] `, except rank 0's (set when the job has
  // several ranks).
  bool prefix_output = false;
  // How many of a worker's last lines the failure report shows.
  size_t tail_lines = 20;
  // After one worker fails, how long the others get to exit on SIGTERM before SIGKILL.
  std::chrono::milliseconds grace{3000};
  // After a worker exits with kWorkerExitPeerFailure, how long to wait for a root-cause failure
  // (another exit code, or a signal) from another worker before naming the peer failure.
  std::chrono::milliseconds root_cause_window{3000};
  // The watchdog. A rank that says nothing on its progress pipe for longer than its limit
  // stops the job and is named: every phase of a worker, not only its collectives, has a
  // deadline. Waiting for its peers, the limit is `collective_timeout` + `watchdog_margin`; in
  // its own work (which says so again while it runs), `work_limit`; before its first word,
  // `first_word_limit`. A stopped rank (SIGSTOP) is named once `collective_timeout` has passed,
  // whatever it last said. When peers fail waiting in a collective, a rank silent in its own
  // work for at least half the timeout is whom they waited for. A collective_timeout of 0 turns
  // all of it off.
  std::chrono::milliseconds collective_timeout{0};
  std::chrono::milliseconds watchdog_margin{5000};
  std::chrono::milliseconds first_word_limit{65000};
  std::chrono::milliseconds work_limit{605000};
  // After a rank exits successfully while others still run, how long they may go on before the
  // job is stopped and that rank named (a script's rank that returned early leaves its peers
  // blocked in a collective). 0: no limit (accelrun's workers finish together by construction).
  std::chrono::milliseconds early_exit_limit{0};
  // The workers are accelrun-worker, whose exit code 3 means a peer failed; a user's script
  // gives its exit codes no such meaning.
  bool workers_speak_exit_codes = true;
  // Polled while waiting; returning true stops every worker (Ctrl-C in the launcher).
  std::function<bool()> interrupted = [] { return false; };
  // Where worker output lines go.
  WorkerOutput::Printer print = PrintToStandardStream;
};

struct LaunchResult {
  bool success = false;
  int failed_rank = -1;  // the rank named as the failure, or -1
  ExitStatus failed_status;
  // Every local failure was a peer failure: the root cause is on another machine, or a rank
  // never joined.
  bool peer_failure_only = false;
  // `interrupted` returned true: the user stopped the job; no worker failed on its own.
  bool interrupted = false;
  // A worker could not be started (its executable is missing, fork failed): nothing trained.
  bool start_failed = false;
  std::vector<std::string> failed_tail;  // the named rank's last output lines
  // The named rank's error as it was relayed: its error line and the lines indented below it (a
  // traceback); empty when it printed no error line.
  std::vector<std::string> failed_error;
  // The named rank was still running but made no progress (the watchdog, or the rank its
  // peers waited for when they failed).
  bool stalled = false;
  // For the user: which rank failed and how, what followed, its last lines; or why nothing
  // started. Several lines; no final newline.
  std::string message;
};

// Starts `options.workers` and supervises them until all succeed or one fails, relaying their
// output line by line. When a worker fails, the failure named is the first root cause: a peer
// failure (kWorkerExitPeerFailure) is named only if no other failure follows within
// `root_cause_window`. Every other worker is then stopped (SIGTERM, then SIGKILL after
// `grace`). A rank silent past the watchdog's limits, or one silent in its own work while its
// peers failed waiting, is named instead. Never returns while a child is still running; every line a child
// wrote before it ended has been printed.
LaunchResult RunWorkers(const LaunchOptions& options, ProcessSpawner& spawner);

// How long a starting worker may stay silent before its first word: the collective timeout, but
// at least a minute (loading LibTorch on a busy machine takes seconds, more than a short
// timeout), plus the watchdog's margin. 2 s gives 65 s; 120 s gives 125 s.
std::chrono::milliseconds FirstWordLimit(std::chrono::milliseconds collective_timeout,
                                         std::chrono::milliseconds watchdog_margin);

// How long a rank may stay silent in its own work: the collective timeout, but at least ten
// minutes, plus the watchdog's margin. The timeout bounds collectives only (as Accelerate's
// does); own work says so again while it runs, and this limit is for the stretches that cannot
// (one TorchScript load, one forward pass, an fsync). 60 s gives 605 s; 1800 s gives 1805 s.
std::chrono::milliseconds OwnWorkLimit(std::chrono::milliseconds collective_timeout,
                                       std::chrono::milliseconds watchdog_margin);

// The `glibc.malloc.hugetlb=1` tunable appended to `existing` (a GLIBC_TUNABLES value).
std::string WithHugePageMalloc(const std::string& existing);

}  // namespace accel::rt::launch

#endif  // ACCEL_RUNTIME_LAUNCH_LAUNCHER_H_
