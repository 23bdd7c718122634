// Crash-safe safetensors writing against a plain write() of the same bytes with fsync.
#include <benchmark/benchmark.h>
#include <fcntl.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "runtime/checkpoint/safetensors.h"

namespace {

constexpr size_t kTensorBytes = 4u << 20;  // 4 MiB per tensor
constexpr int kTensors = 8;                // 32 MiB in all

// One buffer for the whole run: fresh pages cost ~14 µs each on these machines.
const std::vector<std::string>& Payload() {
  static std::vector<std::string> tensors = [] {
    std::vector<std::string> t;
    for (int i = 0; i < kTensors; ++i) t.emplace_back(kTensorBytes, static_cast<char>(i));
    return t;
  }();
  return tensors;
}

std::string Path(const char* name) { return "/tmp/accel_bench_" + std::to_string(::getpid()) + name; }

// Baseline: write the raw bytes to one file and fsync it.
void RawWrite(benchmark::State& state) {
  std::string path = Path("_raw");
  for (auto _ : state) {
    int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    for (const std::string& t : Payload()) {
      if (::write(fd, t.data(), t.size()) != static_cast<ssize_t>(t.size()))
        state.SkipWithError("write failed");
    }
    ::fsync(fd);
    ::close(fd);
  }
  ::unlink(path.c_str());
  state.SetBytesProcessed(state.iterations() * kTensorBytes * kTensors);
}
BENCHMARK(RawWrite)->Name("safetensors_write_32MiB/baseline:raw_write_fsync")->Unit(benchmark::kMillisecond);

// Header, temporary file, fsync, rename, directory fsync.
void SafetensorsWrite(benchmark::State& state) {
  std::string path = Path(".safetensors");
  std::vector<accel::rt::checkpoint::TensorRef> tensors;
  for (int i = 0; i < kTensors; ++i) {
    tensors.push_back({"layer." + std::to_string(i) + ".weight",
                       "F32",
                       {static_cast<int64_t>(kTensorBytes / 4)},
                       Payload()[i]});
  }
  for (auto _ : state) {
    if (llvm::Error error = accel::rt::checkpoint::WriteSafetensors(path, tensors)) {
      state.SkipWithError(llvm::toString(std::move(error)).c_str());
    }
  }
  ::unlink(path.c_str());
  state.SetBytesProcessed(state.iterations() * kTensorBytes * kTensors);
}
BENCHMARK(SafetensorsWrite)->Name("safetensors_write_32MiB/accel_atomic")->Unit(benchmark::kMillisecond);

// Reading with full validation (ST-001..ST-011) into memory.
void SafetensorsRead(benchmark::State& state) {
  std::string path = Path("_read.safetensors");
  std::vector<accel::rt::checkpoint::TensorRef> tensors;
  for (int i = 0; i < kTensors; ++i) {
    tensors.push_back(
        {"t" + std::to_string(i), "F32", {static_cast<int64_t>(kTensorBytes / 4)}, Payload()[i]});
  }
  if (llvm::Error error = accel::rt::checkpoint::WriteSafetensors(path, tensors)) {
    state.SkipWithError(llvm::toString(std::move(error)).c_str());
    return;
  }
  for (auto _ : state) {
    auto file = accel::rt::checkpoint::SafetensorsFile::Read(path);
    if (!file) state.SkipWithError("read failed");
    benchmark::DoNotOptimize(file);
  }
  ::unlink(path.c_str());
  state.SetBytesProcessed(state.iterations() * kTensorBytes * kTensors);
}
BENCHMARK(SafetensorsRead)
    ->Name("safetensors_write_32MiB/accel_validated_read")
    ->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
