// Activation checkpointing's trade on the built-in Transformer: the peak of memory a training
// step allocates (activations, gradients, temporaries; c10's allocator hook, as the profiler's
// profile_memory counts) and its time, with the encoder layers recomputed in backward against
// kept, alternately in one process. Prints medians and ratios.
// Run: build/bin/bench_recompute [repetitions]
#include <ATen/ATen.h>
#include <c10/core/Allocator.h>
#include <c10/util/ThreadLocalDebugInfo.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <memory>
#include <vector>

#include <fmt/format.h>

#include "runtime/model/trainer.h"

namespace {

namespace plan = accel::plan;
using accel::rt::train::MakeTrainer;
using accel::rt::train::Trainer;

// What the CPU allocator hands out and takes back on this thread while installed.
struct PeakMemory final : c10::MemoryReportingInfoBase {
  void reportMemoryUsage(void*, int64_t size, size_t, size_t, c10::Device) override {
    live += size;
    peak = std::max(peak, live);
  }
  bool memoryProfilingEnabled() const override { return true; }
  int64_t live = 0;
  int64_t peak = 0;
};

double Median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

struct Sample {
  double ms;
  int64_t peak;
};

Sample Step(Trainer& trainer, const at::Tensor& features, const at::Tensor& targets) {
  auto memory = std::make_shared<PeakMemory>();
  auto start = std::chrono::steady_clock::now();
  {
    c10::DebugInfoGuard guard(c10::DebugInfoKind::PROFILER_STATE, memory);
    trainer.ForwardBackward(features, targets, 1.0);
  }
  double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  trainer.OptimizerStep(false);
  return {ms, memory->peak};
}

}  // namespace

int main(int argc, char** argv) {
  const int repetitions = argc > 1 ? std::atoi(argv[1]) : 9;
  // 64 tokens of 256, 6 layers of 8 heads and a 1,024-wide feed-forward block; batch 32.
  const plan::Transformer shape{64, 256, 8, 6, 1024, 10};
  std::unique_ptr<Trainer> trainers[2];
  for (int recompute = 0; recompute < 2; ++recompute) {
    plan::TrainLoop loop;
    loop.optimizer = plan::SGD{0.01, 0.9, 0};
    loop.sharding.wrap_policy = plan::WrapPolicy::transformer_based;
    loop.sharding.activation_checkpointing = recompute == 1;
    at::manual_seed(0);
    trainers[recompute] = MakeTrainer(plan::BuildModel{shape}, loop);
  }
  at::Tensor features = at::randn({32, shape.inputs});
  at::Tensor targets = at::randn({32, shape.outputs});
  for (auto& trainer : trainers) Step(*trainer, features, targets);  // warm-up
  std::vector<double> ms[2];
  int64_t peak[2] = {0, 0};
  for (int r = 0; r < repetitions; ++r) {
    for (int recompute = 0; recompute < 2; ++recompute) {
      Sample sample = Step(*trainers[recompute], features, targets);
      ms[recompute].push_back(sample.ms);
      peak[recompute] = sample.peak;  // the same every step: allocation sizes do not vary
    }
  }
  fmt::print("Transformer 64 tokens x 256, 6 layers, batch 32; forward + backward, median of {}\n",
             repetitions);
  fmt::print("| layers | peak allocated | step |\n|---|---:|---:|\n");
  fmt::print("| kept | {:.1f} MiB | {:.1f} ms |\n", peak[0] / 1048576.0, Median(ms[0]));
  fmt::print("| recomputed | {:.1f} MiB | {:.1f} ms |\n", peak[1] / 1048576.0, Median(ms[1]));
  fmt::print("| ratio | {:.2f}x | {:.2f}x |\n", static_cast<double>(peak[1]) / peak[0],
             Median(ms[1]) / Median(ms[0]));
  return 0;
}
