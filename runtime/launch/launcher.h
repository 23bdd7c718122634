#ifndef ACCEL_RUNTIME_LAUNCH_LAUNCHER_H_
#define ACCEL_RUNTIME_LAUNCH_LAUNCHER_H_

#include <chrono>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "runtime/launch/process.h"

namespace accel::rt::launch {

// Environment variables every worker receives (torchrun's names are set too, so code written
// for torchrun finds its rank).
inline constexpr const char* kEnvRank = "ACCEL_RANK";
inline constexpr const char* kEnvLocalRank = "ACCEL_LOCAL_RANK";
inline constexpr const char* kEnvWorldSize = "ACCEL_WORLD_SIZE";
inline constexpr const char* kEnvMasterAddr = "ACCEL_MASTER_ADDR";
inline constexpr const char* kEnvMasterPort = "ACCEL_MASTER_PORT";

struct LaunchOptions {
  int processes_per_machine = 1;
  int num_machines = 1;
  int node_rank = 0;
  std::string master_addr = "127.0.0.1";
  int master_port = 0;
  std::vector<std::string> worker_argv;           // argv[0] must be an absolute path
  std::map<std::string, std::string> worker_env;  // added to every worker's environment
  // After one worker fails, how long the others get to exit on SIGTERM before SIGKILL.
  std::chrono::milliseconds grace{3000};
  // Polled while waiting; returning true stops every worker (Ctrl-C in the launcher).
  std::function<bool()> interrupted = [] { return false; };
};

struct LaunchResult {
  bool success = false;
  int failed_rank = -1;  // the first rank that failed, or -1
  ExitStatus failed_status;
  std::string message;  // for the user: which rank failed and how, or why nothing started
};

// Starts one worker per local rank and supervises them until all succeed or one fails. When a
// worker fails, every other worker is stopped (SIGTERM, then SIGKILL after `grace`) and the
// result names the rank that failed first. Never returns while a child is still running.
LaunchResult RunWorkers(const LaunchOptions& options, ProcessSpawner& spawner);

// An unused TCP port on the loopback interface, for a single-machine rendezvous; 0 on failure.
int PickFreePort();

// The `glibc.malloc.hugetlb=1` tunable appended to `existing` (a GLIBC_TUNABLES value).
std::string WithHugePageMalloc(const std::string& existing);

}  // namespace accel::rt::launch

#endif  // ACCEL_RUNTIME_LAUNCH_LAUNCHER_H_
