// The collectives of sharded data parallelism on 2 and 4 ranks over Gloo (threads of this process
// on loopback), float32 inputs of 1 to 64 MiB, by the path a group takes (ShardedPath): the
// composed reduce-scatter (an all-to-all and a local sum) and Gloo's own `_reduce_scatter_base`,
// each against an all-reduce of the same input, and the reduce-scatter every back end has by
// default (an all-reduce of a copy, keeping this rank's chunk); the all-gather into one slot per
// rank and Gloo's own `_allgather_base` of the same output. The variants alternate within each
// repetition, so they share the machine's state. Prints medians (ms, rank 0's view, from a
// common start) and ratios (below 1: faster).
//
//   bench_collectives [--repetitions N]
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

#include "runtime/distributed/collectives.h"
#include "runtime/launch/rendezvous_port.h"

namespace distributed = accel::rt::distributed;

namespace {

const std::vector<int> kMebibytes = {1, 4, 16, 64};
const std::vector<std::string> kVariants = {"all-reduce",         "reduce-scatter (all-reduce + slice)",
                                            "reduce-scatter",     "reduce-scatter (Gloo's own)",
                                            "all-gather (slots)", "all-gather (Gloo's own)"};

double Median(std::vector<double> samples) {
  std::sort(samples.begin(), samples.end());
  return samples[samples.size() / 2];
}

// results[mebibytes][variant] = rank 0's median in ms.
using Results = std::map<int, std::map<std::string, double>>;

Results Measure(int world, int repetitions) {
  Results results;
  int port = accel::rt::launch::PickFreePort();
  int own_port = accel::rt::launch::PickFreePort();
  std::barrier sync(world);
  auto rank_main = [&](int rank) {
    const distributed::RendezvousOptions options{rank, world, "127.0.0.1", port, std::chrono::milliseconds(120000)};
    std::unique_ptr<distributed::Collectives> group = distributed::ConnectGloo(options);
    distributed::RendezvousOptions second = options;
    second.master_port = own_port;
    std::unique_ptr<distributed::Collectives> own =
        distributed::ConnectGloo(second, distributed::ShardedPath::kNative);
    for (int mebibytes : kMebibytes) {
      const int64_t numel = int64_t{mebibytes} * 1024 * 1024 / 4;
      at::Tensor input = at::rand({numel});
      at::Tensor scratch = input.clone();
      at::Tensor output = at::empty({numel / world});
      std::map<std::string, std::function<void()>> run = {
          {"all-reduce",
           [&] {
             std::vector<at::Tensor> one{scratch};
             group->AllReduceSum(one);
           }},
          {"reduce-scatter (all-reduce + slice)",
           [&] { group->Collectives::ReduceScatter(input, output, distributed::ReduceOp::kSum); }},
          {"reduce-scatter", [&] { group->ReduceScatter(input, output, distributed::ReduceOp::kSum); }},
          {"reduce-scatter (Gloo's own)",
           [&] { own->ReduceScatter(input, output, distributed::ReduceOp::kSum); }},
          {"all-gather (slots)", [&] { group->AllGather(output, scratch); }},
          {"all-gather (Gloo's own)", [&] { own->AllGather(output, scratch); }},
      };
      std::map<std::string, std::vector<double>> samples;
      int reps = repetitions > 0 ? repetitions : mebibytes >= 16 ? 9 : 25;
      for (int i = -1; i < reps; ++i) {  // -1: warm-up (buffers, connections)
        for (const std::string& variant : kVariants) {
          sync.arrive_and_wait();
          auto start = std::chrono::steady_clock::now();
          run[variant]();
          double ms =
              std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
          if (i >= 0) samples[variant].push_back(ms);
        }
      }
      if (rank == 0) {
        for (const std::string& variant : kVariants) results[mebibytes][variant] = Median(samples[variant]);
      }
    }
    sync.arrive_and_wait();
  };
  std::vector<std::future<void>> ranks;
  for (int rank = 0; rank < world; ++rank) ranks.push_back(std::async(std::launch::async, rank_main, rank));
  for (auto& rank : ranks) rank.get();
  return results;
}

}  // namespace

int main(int argc, char** argv) {
  int repetitions = 0;  // 0: 25 up to 4 MiB, 9 above
  for (int i = 1; i + 1 < argc; ++i) {
    if (std::string(argv[i]) == "--repetitions") repetitions = std::stoi(argv[i + 1]);
  }
  fmt::print(
      "| ranks | input | all-reduce (ms) | reduce-scatter (ms) | ratio | Gloo's own (ms) | ratio | all-reduce + "
      "slice (ms) | ratio | all-gather (ms) | Gloo's own (ms) | ratio |\n");
  fmt::print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
  for (int world : {2, 4}) {
    Results results = Measure(world, repetitions);
    for (int mebibytes : kMebibytes) {
      auto& r = results[mebibytes];
      double all_reduce = r["all-reduce"];
      fmt::print("| {} | {} MiB | {:.2f} | {:.2f} | {:.2f} | {:.2f} | {:.2f} | {:.2f} | {:.2f} | {:.2f} | {:.2f} "
                 "| {:.2f} |\n",
                 world, mebibytes, all_reduce, r["reduce-scatter"], r["reduce-scatter"] / all_reduce,
                 r["reduce-scatter (Gloo's own)"], r["reduce-scatter (Gloo's own)"] / all_reduce,
                 r["reduce-scatter (all-reduce + slice)"], r["reduce-scatter (all-reduce + slice)"] / all_reduce,
                 r["all-gather (slots)"], r["all-gather (Gloo's own)"],
                 r["all-gather (Gloo's own)"] / r["all-gather (slots)"]);
    }
  }
  fmt::print(
      "\nratio = time / all-reduce's (below 1: faster), for the all-gathers Gloo's own / slots; Gloo on "
      "loopback, float32, median per case\n");
  return 0;
}
