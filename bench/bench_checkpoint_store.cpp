// Saving and loading a 1 GiB state through CheckpointStore (16 F32 tensors of 64 MiB, sharded
// at "256MB" as save_model would), against `dd` on the same disk in the same run: the disk's
// limit for a synced sequential write (`conv=fdatasync`) and for a cold sequential read.
// Loads start cold: the checkpoint's pages are dropped from the page cache first
// (POSIX_FADV_DONTNEED, no root needed), so they measure the disk plus verification.
// Run: build/bin/bench_checkpoint_store (or scripts/bench.sh); bytes_per_second is the result.
#include <benchmark/benchmark.h>
#include <fcntl.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "bench/disk_baselines.h"
#include "runtime/checkpoint/checkpoint_store.h"
#include "runtime/checkpoint/shards.h"

namespace {

namespace fs = std::filesystem;
using namespace accel::rt::checkpoint;
using namespace accel::bench;

constexpr size_t kTensorBytes = size_t{64} << 20;
constexpr int kTensors = 16;  // 1 GiB
constexpr int64_t kStateBytes = int64_t{kTensorBytes} * kTensors;

const std::vector<std::string>& Payload() {
  static std::vector<std::string> tensors = [] {
    std::vector<std::string> t;
    for (int i = 0; i < kTensors; ++i) t.emplace_back(kTensorBytes, static_cast<char>(i + 1));
    return t;
  }();
  return tensors;
}

std::vector<TensorRef> Tensors() {
  std::vector<TensorRef> tensors;
  for (int i = 0; i < kTensors; ++i) {
    tensors.push_back({"layers." + std::to_string(i) + ".weight",
                       "F32",
                       {static_cast<int64_t>(kTensorBytes / 4)},
                       Payload()[i]});
  }
  return tensors;
}

void DdWriteState(benchmark::State& state) { DdWrite(state, WorkDir("checkpoint"), kStateBytes); }
BENCHMARK(DdWriteState)->Apply(DiskRow)->Name("checkpoint_save_1GiB/baseline:dd_conv_fdatasync");

// Encode, write 4 shards + index + manifest, hash, fsync every file and folder, rename.
void StoreSave(benchmark::State& state) {
  fs::path project = WorkDir("checkpoint") / "save";
  std::vector<TensorRef> tensors = Tensors();
  uint64_t iteration = 0;
  for (auto _ : state) {
    llvm::Expected<CheckpointStore> store =
        CheckpointStore::Open({project.string(), true, std::nullopt, iteration});
    llvm::Expected<EncodedShards> shards = EncodeShards(tensors, 256'000'000);
    if (!store || !shards) {
      state.SkipWithError("setup failed");
      break;
    }
    llvm::Expected<SaveResult> saved = store->Save(shards->Files());
    if (!saved) {
      state.SkipWithError(llvm::toString(saved.takeError()).c_str());
      break;
    }
    state.PauseTiming();
    fs::remove_all(saved->path);
    ++iteration;
    state.ResumeTiming();
  }
  state.SetBytesProcessed(state.iterations() * kStateBytes);
}
BENCHMARK(StoreSave)->Apply(DiskRow)->Name("checkpoint_save_1GiB/accel_checkpoint_store_save");

void DdReadState(benchmark::State& state) { DdRead(state, WorkDir("checkpoint"), kStateBytes); }
BENCHMARK(DdReadState)->Apply(DiskRow)->Name("checkpoint_load_1GiB/baseline:dd_cold_read");

// A saved checkpoint for the load rows, written once.
const fs::path& LoadProject() {
  static fs::path project = [] {
    fs::path path = WorkDir("checkpoint") / "load";
    llvm::Expected<CheckpointStore> store = CheckpointStore::Open({path.string(), true, std::nullopt, 0});
    llvm::Expected<EncodedShards> shards = EncodeShards(Tensors(), 256'000'000);
    if (!store || !shards || !store->Save(shards->Files())) std::abort();
    return path;
  }();
  return project;
}

// LoadLatest (map, size and SHA-256 of every file against the manifest), then every shard
// parsed and validated: the tensors are ready as views into the mapped files.
void Load(benchmark::State& state, bool cold) {
  const fs::path& project = LoadProject();
  for (auto _ : state) {
    if (cold) {
      state.PauseTiming();
      Evict(project);
      state.ResumeTiming();
    }
    llvm::Expected<CheckpointStore> store = CheckpointStore::Open({project.string(), true, std::nullopt, 0});
    if (!store) {
      state.SkipWithError(llvm::toString(store.takeError()).c_str());
      break;
    }
    llvm::Expected<VerifiedCheckpoint> loaded = store->LoadLatest();
    if (!loaded) {
      state.SkipWithError(llvm::toString(loaded.takeError()).c_str());
      break;
    }
    size_t tensors = 0;
    for (const auto& [name, bytes] : loaded->files) {
      if (name.size() < 12 || name.substr(name.size() - 12) != ".safetensors") continue;
      llvm::Expected<SafetensorsFile> file = loaded->Safetensors(name);
      if (!file) state.SkipWithError("invalid shard");
      tensors += file ? file->tensors().size() : 0;
    }
    if (tensors != kTensors) state.SkipWithError("tensors missing");
  }
  state.SetBytesProcessed(state.iterations() * kStateBytes);
}
BENCHMARK_CAPTURE(Load, cold, true)
    ->Apply(DiskRow)
    ->Name("checkpoint_load_1GiB/accel_load_latest_verified_cold");
BENCHMARK_CAPTURE(Load, warm, false)
    ->Apply(DiskRow)
    ->Name("checkpoint_load_1GiB/accel_load_latest_verified_page_cache");

}  // namespace

BENCHMARK_MAIN();
