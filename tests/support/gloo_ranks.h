#ifndef ACCEL_TESTS_SUPPORT_GLOO_RANKS_H_
#define ACCEL_TESTS_SUPPORT_GLOO_RANKS_H_

// Multi-rank tests in one process: each rank a thread, joined in a Gloo group on loopback.

#include <unistd.h>

#include <chrono>
#include <future>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "runtime/distributed/collectives.h"
#include "runtime/launch/launcher.h"
#include "runtime/launch/rendezvous_port.h"

namespace accel::rt::distributed {

// Ranks as threads are exactly the case PyTorch's flight recorder cannot take (see
// KeepFlightRecorderOff); set before main, so before any thread.
inline const bool kFlightRecorderOff = (KeepFlightRecorderOff(), true);

// A launch id of this process and port: ctest runs test processes side by side, and two that
// picked the same free port must refuse each other's ranks rather than form one group (an empty
// id on both sides would match).
inline RendezvousOptions LoopbackOptions(int rank, int world, int port, int timeout_ms) {
  RendezvousOptions options;
  options.rank = rank;
  options.world_size = world;
  options.master_port = port;
  options.timeout = std::chrono::milliseconds(timeout_ms);
  options.launch_id = "test-" + std::to_string(::getpid()) + ":" + std::to_string(port);
  return options;
}

// Runs `body(rank, collectives)` on `world` threads joined into one group. When ranks fail, the
// error names every failed rank and its message: the first rank's alone may only say that a
// peer went away, when the cause is in the peer's. `sharded`: the group's reduce-scatter and
// all-gather (collectives.h).
template <typename Body>
void RunGlooRanks(int world, Body body, int timeout_ms = 10000, ShardedPath sharded = ShardedPath::kComposed) {
  int port = launch::PickFreePort();
  std::vector<std::future<void>> ranks;
  for (int rank = 0; rank < world; ++rank) {
    ranks.push_back(std::async(std::launch::async, [=] {
      std::unique_ptr<Collectives> group = ConnectGloo(LoopbackOptions(rank, world, port, timeout_ms), sharded);
      body(rank, group);
    }));
  }
  std::string failures;
  for (int rank = 0; rank < world; ++rank) {
    try {
      ranks[rank].get();
    } catch (const std::exception& error) {
      failures += "\nrank " + std::to_string(rank) + ": " + error.what();
    }
  }
  if (!failures.empty())
    throw std::runtime_error("ranks failed (loopback port " + std::to_string(port) + "):" + failures);
}

}  // namespace accel::rt::distributed

#endif  // ACCEL_TESTS_SUPPORT_GLOO_RANKS_H_
