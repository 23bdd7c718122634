// Accel's data operations against the raw c10d calls Accelerate makes, on 2 ranks over Gloo
// (threads of this process on loopback; each side has its own process group, same machine,
// same run). Cases: one 4 KiB tensor, one 64 MiB tensor, a nested structure of 100 small
// tensors (1 KiB each). Baselines follow catalog §5.2 for the Gloo backend: gather =
// all_gather into per-rank buffers + cat, per leaf; broadcast = one broadcast per leaf;
// reduce = clone + all_reduce per leaf. Prints medians (µs) and ratios (baseline / ours).
//
//   bench_dist_ops [--repetitions N]
#include <ATen/ATen.h>

#include <algorithm>
#include <barrier>
#include <chrono>
#include <functional>
#include <future>
#include <map>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include "runtime/distributed/operations.h"
#include "runtime/launch/rendezvous_port.h"

namespace distributed = accel::rt::distributed;

namespace {

constexpr int kWorld = 2;

c10::intrusive_ptr<c10d::ProcessGroupGloo> RawGroup(int rank, int port) {
  c10d::TCPStoreOptions options;
  options.port = static_cast<uint16_t>(port);
  options.isServer = rank == 0;
  options.numWorkers = kWorld;
  options.waitWorkers = true;
  options.timeout = std::chrono::seconds(30);
  auto store = c10::make_intrusive<c10d::TCPStore>("127.0.0.1", options);
  auto gloo = c10d::ProcessGroupGloo::Options::create(std::chrono::seconds(30));
  gloo->devices.push_back(c10d::ProcessGroupGloo::createDeviceForHostname("127.0.0.1"));
  return c10::make_intrusive<c10d::ProcessGroupGloo>(store, rank, kWorld, gloo);
}

std::vector<at::Tensor> Leaves(const std::string& shape) {
  if (shape == "4KiB") return {at::rand({1024})};
  if (shape == "64MiB") return {at::rand({16 * 1024 * 1024})};
  std::vector<at::Tensor> leaves;
  for (int i = 0; i < 100; ++i) leaves.push_back(at::rand({256}));
  return leaves;
}

distributed::Value AsValue(const std::vector<at::Tensor>& leaves) {
  if (leaves.size() == 1) return distributed::Value::Tensor(leaves[0]);
  std::vector<distributed::Value> items;
  for (const at::Tensor& leaf : leaves) items.push_back(distributed::Value::Tensor(leaf));
  return distributed::Value::List(std::move(items));
}

// Accelerate's Gloo paths, one collective per leaf.
void RawGather(c10d::ProcessGroupGloo& group, const std::vector<at::Tensor>& leaves) {
  for (const at::Tensor& leaf : leaves) {
    std::vector<std::vector<at::Tensor>> outputs(1);
    for (int r = 0; r < kWorld; ++r) outputs[0].push_back(at::empty_like(leaf));
    std::vector<at::Tensor> inputs{leaf};
    group.allgather(outputs, inputs)->wait();
    at::cat(outputs[0], 0);
  }
}

void RawBroadcast(c10d::ProcessGroupGloo& group, const std::vector<at::Tensor>& leaves) {
  for (const at::Tensor& leaf : leaves) {
    std::vector<at::Tensor> one{leaf};
    group.broadcast(one)->wait();
  }
}

void RawReduce(c10d::ProcessGroupGloo& group, const std::vector<at::Tensor>& leaves) {
  for (const at::Tensor& leaf : leaves) {
    std::vector<at::Tensor> one{leaf.clone()};
    group.allreduce(one)->wait();
  }
}

double Median(std::vector<double> samples) {
  std::sort(samples.begin(), samples.end());
  return samples[samples.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  int repetitions = 0;  // 0: per case default
  for (int i = 1; i + 1 < argc; ++i) {
    if (std::string(argv[i]) == "--repetitions") repetitions = std::stoi(argv[i + 1]);
  }
  const std::vector<std::string> shapes = {"4KiB", "64MiB", "nested 100x1KiB"};
  const std::vector<std::string> ops = {"gather", "broadcast", "reduce"};
  // results[shape][op][variant] = median µs (rank 0's view)
  std::map<std::string, std::map<std::string, std::map<std::string, double>>> results;
  int ours_port = accel::rt::launch::PickFreePort();
  int raw_port = accel::rt::launch::PickFreePort();
  std::barrier sync(kWorld);

  auto rank_main = [&](int rank) {
    std::unique_ptr<distributed::Collectives> ours =
        distributed::ConnectGloo({rank, kWorld, "127.0.0.1", ours_port, std::chrono::milliseconds(30000)});
    auto raw = RawGroup(rank, raw_port);
    distributed::DataOps checked(*ours);
    distributed::DataOps unchecked(*ours, distributed::DataOpsOptions{false});
    for (const std::string& shape : shapes) {
      std::vector<at::Tensor> leaves = Leaves(shape);
      distributed::Value value = AsValue(leaves);
      int reps = repetitions > 0 ? repetitions : shape == "64MiB" ? 15 : 200;
      for (const std::string& op : ops) {
        std::map<std::string, std::function<void()>> variants = {
            {"raw c10d",
             [&] {
               if (op == "gather")
                 RawGather(*raw, leaves);
               else if (op == "broadcast")
                 RawBroadcast(*raw, leaves);
               else
                 RawReduce(*raw, leaves);
             }},
            {"accel",
             [&] {
               if (op == "gather")
                 checked.Gather(value);
               else if (op == "broadcast")
                 checked.Broadcast(value);
               else
                 checked.Reduce(value, "sum");
             }},
            {"accel, no layout check",
             [&] {
               if (op == "gather")
                 unchecked.Gather(value);
               else if (op == "broadcast")
                 unchecked.Broadcast(value);
               else
                 unchecked.Reduce(value, "sum");
             }},
        };
        for (auto& [variant, body] : variants) {
          body();  // warm-up: buffers allocated, connections hot
          std::vector<double> samples;
          for (int i = 0; i < reps; ++i) {
            sync.arrive_and_wait();
            auto start = std::chrono::steady_clock::now();
            body();
            samples.push_back(
                std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count());
          }
          if (rank == 0) results[shape][op][variant] = Median(samples);
        }
      }
    }
    sync.arrive_and_wait();
  };
  std::vector<std::future<void>> ranks;
  for (int rank = 0; rank < kWorld; ++rank) ranks.push_back(std::async(std::launch::async, rank_main, rank));
  for (auto& rank : ranks) rank.get();

  fmt::print("| case | op | raw c10d (µs) | accel (µs) | ratio | accel, no layout check (µs) | ratio |\n");
  fmt::print("|---|---|---:|---:|---:|---:|---:|\n");
  for (const std::string& shape : shapes) {
    for (const std::string& op : ops) {
      auto& r = results[shape][op];
      double raw = r["raw c10d"];
      fmt::print("| {} | {} | {:.0f} | {:.0f} | {:.2f}x | {:.0f} | {:.2f}x |\n", shape, op, raw, r["accel"],
                 raw / r["accel"], r["accel, no layout check"], raw / r["accel, no layout check"]);
    }
  }
  fmt::print(
      "\nratio = raw c10d / accel (above 1: accel is faster); 2 ranks, Gloo on loopback, median per case\n");
  return 0;
}
