// One rank of a failure scenario for dist_failure_test.py: joins the group named by the
// torchrun-style environment (RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT), runs data
// operations in a loop, and injects the faults given for its rank.
//
//   dist_failure_worker --timeout-ms N [--faults SPEC --fault-rank R] [--never-join-rank R]
//                       [--iterations K] [--sharded 1]
//
// With --sharded, each iteration is one reduce-scatter instead (synchronous and asynchronous in
// turn), its result checked: a rank that dies then dies inside a reduce-scatter.
//
// Exit: 0 done, 3 a collective failed (a peer's fault: the launcher's peer-failure code),
// 1 any other error. The last stderr line says what happened.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <thread>

#include <ATen/ATen.h>
#include <fmt/format.h>

#include "runtime/distributed/operations.h"
#include "tests/support/fault_injection.h"

namespace distributed = accel::rt::distributed;

namespace {

int EnvInt(const char* name) {
  const char* value = std::getenv(name);
  return value ? std::atoi(value) : 0;
}

// Rank r contributes 1000 r + i at element i: chunk c of the sum holds
// world (c × 16 + j) + 1000 × world (world - 1) / 2 at element j.
void ReduceScatterAndCheck(distributed::Collectives& group, int iteration) {
  const int world = group.world_size();
  const int rank = group.rank();
  constexpr int kChunk = 16;
  at::Tensor input = at::arange(world * kChunk, at::kFloat) + 1000.0f * rank;
  at::Tensor output = at::empty({kChunk}, at::kFloat);
  if (iteration % 2 == 0)
    group.ReduceScatter(input, output, distributed::ReduceOp::kSum);
  else
    group.ReduceScatterAsync(input, output, distributed::ReduceOp::kSum)->Wait();
  at::Tensor expected =
      (at::arange(kChunk, at::kFloat) + rank * kChunk) * world + 500.0f * world * (world - 1);
  if (!at::equal(output, expected))
    throw std::runtime_error(
        fmt::format("reduce_scatter {} on rank {} returned a wrong chunk", iteration, rank));
}

}  // namespace

int main(int argc, char** argv) {
  int timeout_ms = 2000;
  int fault_rank = -1;
  int never_join_rank = -1;
  int iterations = 20;
  bool sharded = false;
  std::string faults;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string flag = argv[i];
    std::string value = argv[i + 1];
    if (flag == "--timeout-ms")
      timeout_ms = std::stoi(value);
    else if (flag == "--faults")
      faults = value;
    else if (flag == "--fault-rank")
      fault_rank = std::stoi(value);
    else if (flag == "--never-join-rank")
      never_join_rank = std::stoi(value);
    else if (flag == "--iterations")
      iterations = std::stoi(value);
    else if (flag == "--sharded")
      sharded = value == "1";
  }
  int rank = EnvInt("RANK");
  int world = EnvInt("WORLD_SIZE");
  const char* addr = std::getenv("MASTER_ADDR");
  // With a start gate, every rank starts its clock together, once all of them have loaded
  // LibTorch: on a busy machine loading alone can take longer than the short timeouts here.
  if (std::getenv("ACCEL_TEST_START_GATE") != nullptr) {
    std::fputs("ready\n", stdout);
    std::fflush(stdout);
    (void)std::getchar();
  }
  auto started = std::chrono::steady_clock::now();
  auto elapsed_ms = [&] {
    return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - started)
        .count();
  };
  if (rank == never_join_rank) {
    std::this_thread::sleep_for(std::chrono::hours(1));  // the test kills it
    return 0;
  }
  try {
    std::unique_ptr<distributed::Collectives> group =
        distributed::ConnectGloo({rank, world, addr ? addr : "127.0.0.1", EnvInt("MASTER_PORT"),
                                  std::chrono::milliseconds(timeout_ms)});
    distributed::FaultInjectingCollectives faulty(std::move(group), rank == fault_rank
                                                                        ? distributed::ParseFaults(faults)
                                                                        : std::vector<distributed::Fault>{});
    distributed::DataOps ops(faulty);
    for (int i = 0; i < iterations && sharded; ++i) ReduceScatterAndCheck(faulty, i);
    for (int i = 0; i < iterations && !sharded; ++i) {
      distributed::Value batch =
          distributed::Value::Dict({{"x", distributed::Value::Tensor(at::full({64, 8}, float(rank)))},
                                    {"y", distributed::Value::Tensor(at::full({64}, int64_t(i)))}});
      ops.Gather(batch);
      ops.Reduce(batch.Find("x") ? *batch.Find("x") : batch, "mean");
      ops.Broadcast(batch, 0);
    }
    ops.WaitForEveryone();
    fmt::print(stderr, "rank {}: done in {} ms\n", rank, elapsed_ms());
    // Leave the process group to the OS (see RunWorker): no teardown waits on peers.
    (void)faulty;
    std::fflush(stderr);
    _exit(0);
  } catch (const distributed::CollectiveError& error) {
    fmt::print(stderr, "rank {}: error after {} ms: {}\n", rank, elapsed_ms(), error.what());
    std::fflush(stderr);
    _exit(3);
  } catch (const std::exception& error) {
    fmt::print(stderr, "rank {}: error after {} ms: {}\n", rank, elapsed_ms(), error.what());
    std::fflush(stderr);
    _exit(1);
  }
}
