// `estimate-memory` on a sharded checkpoint of 10 GB of tensors, against just reading and
// parsing the same headers. The shards are sparse files: their headers are written by Accel's
// safetensors encoder and the data sections are holes, so the disk holds a few kilobytes.
#include <benchmark/benchmark.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "runtime/checkpoint/safetensors.h"
#include "runtime/memory/estimate.h"

namespace {

namespace fs = std::filesystem;
namespace checkpoint = accel::rt::checkpoint;
namespace memory = accel::rt::memory;

// A Llama-like decoder in bf16: hidden 4096, MLP 11008, vocabulary 32000, 24 layers:
// 24 x 404,766,720 + 2 x 262,144,000 + 8,192 = 10,238,697,472 bytes in 219 tensors.
constexpr int64_t kHidden = 4096, kMlp = 11008, kVocab = 32000;
constexpr int kLayers = 24;
constexpr uint64_t kShardLimit = 2'000'000'000;  // max_shard_size="2GB": 6 shards

struct Tensor {
  std::string name;
  std::vector<int64_t> shape;
};

std::vector<Tensor> Model() {
  std::vector<Tensor> tensors = {{"model.embed_tokens.weight", {kVocab, kHidden}}};
  for (int i = 0; i < kLayers; ++i) {
    std::string layer = fmt::format("model.layers.{}.", i);
    for (const char* proj : {"q_proj", "k_proj", "v_proj", "o_proj"}) {
      tensors.push_back({layer + "self_attn." + proj + ".weight", {kHidden, kHidden}});
    }
    tensors.push_back({layer + "mlp.gate_proj.weight", {kMlp, kHidden}});
    tensors.push_back({layer + "mlp.up_proj.weight", {kMlp, kHidden}});
    tensors.push_back({layer + "mlp.down_proj.weight", {kHidden, kMlp}});
    tensors.push_back({layer + "input_layernorm.weight", {kHidden}});
    tensors.push_back({layer + "post_attention_layernorm.weight", {kHidden}});
  }
  tensors.push_back({"model.norm.weight", {kHidden}});
  tensors.push_back({"lm_head.weight", {kVocab, kHidden}});
  return tensors;
}

// Writes the shards and the index once per process; returns the checkpoint directory.
const fs::path& Checkpoint() {
  static fs::path dir = [] {
    fs::path out = fs::temp_directory_path() / fmt::format("accel_bench_memory_{}", ::getpid());
    fs::create_directories(out);
    std::vector<Tensor> model = Model();
    // The encoder only checks byte counts: the views point into reserved, inaccessible address
    // space that is never read, so no memory backs the 10 GB.
    size_t largest = static_cast<size_t>(kVocab * kHidden * 2);
    void* reserved = ::mmap(nullptr, largest, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    const char* base = static_cast<const char*>(reserved);
    // Split in key order as the hub does: a new shard when the next tensor would pass the limit.
    std::vector<std::vector<checkpoint::TensorRef>> shards(1);
    uint64_t shard_bytes = 0;
    for (const Tensor& t : model) {
      uint64_t bytes = 2;
      for (int64_t d : t.shape) bytes *= static_cast<uint64_t>(d);
      if (shard_bytes + bytes > kShardLimit && !shards.back().empty()) {
        shards.emplace_back();
        shard_bytes = 0;
      }
      shards.back().push_back({t.name, "BF16", t.shape, std::string_view(base, bytes)});
      shard_bytes += bytes;
    }
    llvm::json::Object weight_map;
    for (size_t k = 0; k < shards.size(); ++k) {
      std::string file = fmt::format("model-{:05}-of-{:05}.safetensors", k + 1, shards.size());
      llvm::Expected<std::string> header = checkpoint::EncodeHeader(shards[k], {{"format", "pt"}}, nullptr);
      if (!header) {
        fmt::print(stderr, "{}\n", llvm::toString(header.takeError()));
        std::exit(1);
      }
      uint64_t data = 0;
      for (const checkpoint::TensorRef& t : shards[k]) {
        data += t.bytes.size();
        weight_map[t.name] = file;
      }
      std::ofstream((out / file).string(), std::ios::binary) << *header;
      // The data section as a hole: the file has its full size and no blocks.
      fs::resize_file(out / file, header->size() + data);
    }
    ::munmap(reserved, largest);
    llvm::json::Object index{{"metadata", llvm::json::Object{{"total_size", 10'238'697'472}}},
                             {"weight_map", std::move(weight_map)}};
    std::ofstream((out / "model.safetensors.index.json").string())
        << llvm::formatv("{0:2}", llvm::json::Value(std::move(index))).str() << "\n";
    return out;
  }();
  return dir;
}

// Baseline: open each shard, read its length prefix and header, parse the JSON. No checks, no
// index, no model.
void ReadHeadersOnly(benchmark::State& state) {
  std::vector<std::string> shards;
  for (const fs::directory_entry& entry : fs::directory_iterator(Checkpoint())) {
    if (entry.path().extension() == ".safetensors") shards.push_back(entry.path().string());
  }
  for (auto _ : state) {
    size_t tensors = 0;
    for (const std::string& path : shards) {
      int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
      uint64_t length = 0;
      if (::pread(fd, &length, 8, 0) != 8) state.SkipWithError("short read");
      std::string header(length, '\0');
      if (::pread(fd, header.data(), length, 8) != static_cast<ssize_t>(length))
        state.SkipWithError("short read");
      ::close(fd);
      llvm::Expected<llvm::json::Value> json = llvm::json::parse(header);
      if (!json) {
        state.SkipWithError("bad header");
        llvm::consumeError(json.takeError());
        break;
      }
      tensors += json->getAsObject()->size();
    }
    benchmark::DoNotOptimize(tensors);
  }
}
BENCHMARK(ReadHeadersOnly)->Name("estimate_memory_10GB/baseline:read_headers")->Unit(benchmark::kMillisecond);

// The index, every shard's header checked against ST-001..ST-010.
void ReadCheckpointHeaders(benchmark::State& state) {
  std::string index = (Checkpoint() / "model.safetensors.index.json").string();
  for (auto _ : state) {
    llvm::Expected<memory::CheckpointHeaders> headers = memory::ReadCheckpointHeaders(index);
    if (!headers) {
      state.SkipWithError(llvm::toString(headers.takeError()).c_str());
      break;
    }
    benchmark::DoNotOptimize(headers->tensors.size());
  }
}
BENCHMARK(ReadCheckpointHeaders)
    ->Name("estimate_memory_10GB/read_checkpoint_headers")
    ->Unit(benchmark::kMillisecond);

// The whole command as `accelrun estimate-memory` runs it: headers, tree, sizes, the largest
// layer, a device map that splits layers over two GPUs, the cpu and disk, and the text report.
void EstimateMemory(benchmark::State& state) {
  std::vector<std::string> args = {Checkpoint().string(),
                                   "--max-memory",
                                   "0=3GB,1=3GB,cpu=3GB",
                                   "--no-split",
                                   "model.layers.*",
                                   "--dtype",
                                   "bf16"};
  memory::EstimateEnvironment environment{[] { return std::optional<uint64_t>(); }};
  for (auto _ : state) {
    memory::CommandResult result = memory::RunEstimateMemoryCommand(args, environment);
    if (result.exit_code != 0) {
      state.SkipWithError(result.err.c_str());
      break;
    }
    benchmark::DoNotOptimize(result.out.size());
  }
}
BENCHMARK(EstimateMemory)
    ->Name("estimate_memory_10GB/accelrun_estimate_memory")
    ->Unit(benchmark::kMillisecond);

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  std::error_code ec;
  fs::remove_all(Checkpoint(), ec);
  return 0;
}
