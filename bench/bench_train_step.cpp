// The training executor's overhead per optimizer step: accelrun's worker loop (RunWorker on
// one process: data loader, accumulation bookkeeping, reducer, scheduler, metrics) against
// the loop a user writes by hand in LibTorch for the same model, optimizer, data and batch
// (index_select a shuffled batch, forward, mse_loss, zero_grad, backward, step). Both run
// `steps` steps, alternately, `repetitions` times; the table gives median milliseconds per step
// and the executor's overhead in percent. bench/train_scaling.py measures 2-rank scaling.
// Run: build/bin/bench_train_step [repetitions]
#include <torch/torch.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "runtime/data/dataset.h"
#include "runtime/train/worker.h"

namespace {

using accel::plan::Plan;
namespace plan = accel::plan;

struct Workload {
  const char* name;
  int64_t inputs;
  std::vector<int64_t> hidden;
  int64_t outputs;
  int64_t samples;
  int64_t batch;
  int64_t steps;
};

double Median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

Plan MakePlan(const Workload& w, const std::string& dir) {
  Plan p;
  p.job = "bench";
  p.steps.push_back(plan::InitProcessGroup{plan::Backend::gloo, 60000, 1, 1, "127.0.0.1", 29500});
  p.steps.push_back(plan::Seed{1});
  p.steps.push_back(plan::BuildModel{plan::MLP{w.inputs, w.hidden, w.outputs}});
  plan::BuildDataloader data;
  data.dataset = plan::SyntheticRegression{w.samples, w.inputs, w.outputs, /*noise=*/0.01, /*seed=*/7};
  data.batch_size = w.batch;
  data.shuffle = true;
  data.use_seedable_sampler = true;
  data.data_seed = 1;
  p.steps.push_back(data);
  plan::TrainLoop loop;
  loop.steps = w.steps;
  loop.log_every = w.steps;
  loop.optimizer = plan::AdamW{1e-3, 0.9, 0.999, 1e-8, 0.01};
  p.steps.push_back(loop);
  p.steps.push_back(plan::SaveModel{dir, "model.safetensors"});
  return p;
}

// Seconds per step of the hand-written LibTorch loop.
double HandWritten(const Workload& w) {
  torch::manual_seed(1);
  torch::nn::Sequential net;
  int64_t width = w.inputs;
  for (int64_t h : w.hidden) {
    net->push_back(torch::nn::Linear(width, h));
    net->push_back(torch::nn::ReLU());
    width = h;
  }
  net->push_back(torch::nn::Linear(width, w.outputs));
  torch::optim::AdamW optimizer(net->parameters(), torch::optim::AdamWOptions(1e-3).weight_decay(0.01));
  accel::rt::data::Dataset data =
      accel::rt::data::GenerateSyntheticRegression(w.samples, w.inputs, w.outputs, 0.01, 7);
  auto generator = at::make_generator<at::CPUGeneratorImpl>(1);
  torch::Tensor order = at::randperm(w.samples, generator);
  int64_t per_epoch = w.samples / w.batch, position = 0;
  auto started = std::chrono::steady_clock::now();
  for (int64_t step = 0; step < w.steps; ++step) {
    if (position == per_epoch) {
      order = at::randperm(w.samples, generator);
      position = 0;
    }
    torch::Tensor rows = order.narrow(0, position++ * w.batch, w.batch);
    torch::Tensor x = data.features.index_select(0, rows), y = data.targets.index_select(0, rows);
    optimizer.zero_grad();
    torch::Tensor loss = torch::mse_loss(net->forward(x), y);
    loss.backward();
    optimizer.step();
    (void)loss.item<float>();  // a user logs the loss; the executor reads it every step too
  }
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count() / w.steps;
}

double Executor(const Workload& w, const std::string& dir) {
  accel::rt::train::WorkerContext context;
  context.output_dir = dir;
  llvm::Expected<accel::rt::train::RunSummary> summary =
      accel::rt::train::RunWorker(MakePlan(w, dir), context);
  if (!summary) {
    fmt::print(stderr, "bench_train_step: {}\n", llvm::toString(summary.takeError()));
    std::exit(1);
  }
  return summary->wall_seconds / w.steps;
}

}  // namespace

int main(int argc, char** argv) {
  int repetitions = argc > 1 ? std::atoi(argv[1]) : 7;
  std::string dir = (std::filesystem::temp_directory_path() / "accel-bench-train-step").string();
  const std::vector<Workload> workloads = {
      {"quickstart MLP 16-64-64-1, batch 32", 16, {64, 64}, 1, 2048, 32, 400},
      {"MLP 256-1024-1024-16, batch 64", 256, {1024, 1024}, 16, 8192, 64, 100},
      {"MLP 256-1024-1024-16, batch 128", 256, {1024, 1024}, 16, 8192, 128, 60},
  };
  fmt::print("{:<40} {:>14} {:>14} {:>10}\n", "workload (1 process, AdamW)", "hand ms/step",
             "accelrun ms/step", "overhead");
  for (const Workload& w : workloads) {
    std::vector<double> hand, executor;
    HandWritten(w);  // warm up allocator and BLAS
    for (int r = 0; r < repetitions; ++r) {
      hand.push_back(HandWritten(w));
      // The executor prints its progress lines; keep the table readable.
      std::fflush(stdout);
      int saved = dup(1);
      std::FILE* null = std::fopen("/dev/null", "w");
      dup2(fileno(null), 1);
      executor.push_back(Executor(w, dir));
      std::fflush(stdout);
      dup2(saved, 1);
      close(saved);
      std::fclose(null);
    }
    double h = Median(hand) * 1e3, e = Median(executor) * 1e3;
    fmt::print("{:<40} {:>14.4f} {:>16.4f} {:>+9.1f}%\n", w.name, h, e, (e / h - 1) * 100);
  }
  std::filesystem::remove_all(dir);
  return 0;
}
