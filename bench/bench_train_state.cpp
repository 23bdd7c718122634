// save_state / load_state of a ~1 GiB training state (an MLP of 84 M parameters with AdamW:
// weights, exp_avg, exp_avg_sq) through train_state.h and CheckpointStore, against
// torch::save / torch::load of the same tensors (one zip archive, fdatasync added so both are
// durable) and against `dd` on the same disk in the same run. Loads start cold: the files are
// dropped from the page cache first (POSIX_FADV_DONTNEED).
// Run: build/bin/bench_train_state; bytes_per_second is the result.
#include <benchmark/benchmark.h>
#include <fcntl.h>
#include <torch/torch.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "bench/disk_baselines.h"
#include "runtime/checkpoint/checkpoint_store.h"
#include "runtime/engine/train_state.h"
#include "runtime/model/trainer.h"

namespace {

namespace fs = std::filesystem;
using namespace accel::rt;
using namespace accel::bench;

// The trainer after one AdamW step, so that every parameter has its two moment tensors.
train::Trainer& Trained() {
  static std::unique_ptr<train::Trainer> trainer = [] {
    at::manual_seed(0);
    accel::plan::TrainLoop loop;
    loop.optimizer = accel::plan::AdamW{1e-3, 0.9, 0.999, 1e-8, 0.01};
    auto t = train::MakeTrainer(
        accel::plan::BuildModel{accel::plan::MLP{4096, {4096, 4096, 4096, 4096}, 4096}}, loop);
    t->ForwardBackward(at::randn({2, 4096}), at::randn({2, 4096}));
    t->OptimizerStep();
    return t;
  }();
  return *trainer;
}

// The same tensors as a flat list, for torch::save.
std::vector<torch::Tensor> StateTensors() {
  std::vector<torch::Tensor> tensors;
  for (const auto& [name, tensor] : Trained().NamedParameters()) tensors.push_back(tensor.detach());
  for (const auto& parameter : Trained().ExportOptimizerState().parameters) {
    for (const auto& [key, tensor] : parameter.tensors) tensors.push_back(tensor);
  }
  return tensors;
}

int64_t StateBytes() {
  static int64_t bytes = [] {
    int64_t total = 0;
    for (const torch::Tensor& t : StateTensors()) total += t.numel() * t.element_size();
    return total;
  }();
  return bytes;
}

void DdWriteState(benchmark::State& state) { DdWrite(state, WorkDir("train_state"), StateBytes()); }
BENCHMARK(DdWriteState)->Apply(DiskRow)->Name("train_state_save/baseline:dd_conv_fdatasync");

// EncodeTrainingState + CheckpointStore::Save: every file written, hashed, fsynced, renamed.
void AccelSave(benchmark::State& state) {
  fs::path project = WorkDir("train_state") / "accel_save";
  uint64_t iteration = 0;
  std::vector<at::Tensor> rng{train::CaptureRngState(), train::CaptureRngState()};
  for (auto _ : state) {
    auto store = checkpoint::CheckpointStore::Open({project.string(), true, std::nullopt, iteration});
    auto files = train::EncodeTrainingState(Trained(), {1, 2, 0, 2}, rng, 0);
    if (!store || !files) {
      state.SkipWithError("setup failed");
      break;
    }
    auto saved = store->Save((*files)->files());
    if (!saved) {
      state.SkipWithError(llvm::toString(saved.takeError()).c_str());
      break;
    }
    state.PauseTiming();
    fs::remove_all(saved->path);
    ++iteration;
    state.ResumeTiming();
  }
  state.SetBytesProcessed(state.iterations() * StateBytes());
}
BENCHMARK(AccelSave)->Apply(DiskRow)->Name("train_state_save/accel_save_state");

void TorchSave(benchmark::State& state) {
  fs::path file = WorkDir("train_state") / "torch_save.pt";
  std::vector<torch::Tensor> tensors = StateTensors();
  for (auto _ : state) {
    torch::save(tensors, file.string());
    FdataSync(file);
    state.PauseTiming();
    fs::remove(file);
    state.ResumeTiming();
  }
  state.SetBytesProcessed(state.iterations() * StateBytes());
}
BENCHMARK(TorchSave)->Apply(DiskRow)->Name("train_state_save/torch_save+fdatasync");

void DdReadState(benchmark::State& state) { DdRead(state, WorkDir("train_state"), StateBytes()); }
BENCHMARK(DdReadState)->Apply(DiskRow)->Name("train_state_load/baseline:dd_cold_read");

// LoadLatest (the SHA-256 of every 8 MiB piece of every file checked against the manifest, the
// optimizer state's file read into memory, the rest through the page cache) +
// RestoreTrainingState (weights copied into the model, optimizer state built on the verified
// bytes, RNG set), files cold.
void AccelLoad(benchmark::State& state) {
  fs::path project = WorkDir("train_state") / "accel_load";
  std::vector<at::Tensor> rng{train::CaptureRngState()};
  if (!fs::exists(project / "checkpoints" / "checkpoint_0")) {  // once, not per repetition
    auto store = checkpoint::CheckpointStore::Open({project.string(), true, std::nullopt, 0});
    auto files = train::EncodeTrainingState(Trained(), {1, 2, 0, 2}, rng, 0);
    if (!store || !files) std::abort();
    auto saved = store->Save((*files)->files());
    if (!saved) {
      state.SkipWithError(llvm::toString(saved.takeError()).c_str());
      return;
    }
  }
  for (auto _ : state) {
    state.PauseTiming();
    Evict(project);
    state.ResumeTiming();
    auto store = checkpoint::CheckpointStore::Open({project.string(), true, std::nullopt, 0});
    if (!store) {
      state.SkipWithError(llvm::toString(store.takeError()).c_str());
      break;
    }
    auto loaded = store->LoadLatest(train::FilesRestoreTakes());
    if (!loaded) {
      state.SkipWithError(llvm::toString(loaded.takeError()).c_str());
      break;
    }
    auto restored = train::RestoreTrainingState(*loaded, Trained(), 0, 1, 0);
    if (!restored) {
      state.SkipWithError(llvm::toString(restored.takeError()).c_str());
      break;
    }
  }
  state.SetBytesProcessed(state.iterations() * StateBytes());
}
BENCHMARK(AccelLoad)->Apply(DiskRow)->Name("train_state_load/accel_load_state_verified_cold");

// The verification part of AccelLoad alone: LoadLatest reads every file and checks the SHA-256
// of every piece, as AccelLoad's does.
void AccelVerify(benchmark::State& state) {
  fs::path project = WorkDir("train_state") / "accel_load";
  for (auto _ : state) {
    state.PauseTiming();
    Evict(project);
    state.ResumeTiming();
    auto store = checkpoint::CheckpointStore::Open({project.string(), true, std::nullopt, 0});
    if (!store) {
      state.SkipWithError(llvm::toString(store.takeError()).c_str());
      break;
    }
    auto loaded = store->LoadLatest(train::FilesRestoreTakes());
    if (!loaded) {
      state.SkipWithError(llvm::toString(loaded.takeError()).c_str());
      break;
    }
  }
  state.SetBytesProcessed(state.iterations() * StateBytes());
}
BENCHMARK(AccelVerify)->Apply(DiskRow)->Name("train_state_load/accel_load_latest_only_cold");

void TorchLoad(benchmark::State& state) {
  fs::path file = WorkDir("train_state") / "torch_load.pt";
  torch::save(StateTensors(), file.string());
  FdataSync(file);
  for (auto _ : state) {
    state.PauseTiming();
    Evict(file);
    state.ResumeTiming();
    std::vector<torch::Tensor> tensors;
    torch::load(tensors, file.string());
    benchmark::DoNotOptimize(tensors.data());
  }
  state.SetBytesProcessed(state.iterations() * StateBytes());
}
BENCHMARK(TorchLoad)->Apply(DiskRow)->Name("train_state_load/torch_load_cold");

}  // namespace

int main(int argc, char** argv) {
  // Build and step the 1 GiB model before the clock starts: the first row must time dd alone.
  StateBytes();
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
