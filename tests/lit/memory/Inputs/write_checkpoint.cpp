// memory_write_checkpoint SPEC OUT_DIR [--shards N]: writes the checkpoint SPEC describes with
// Accel's safetensors writer, so lit tests can run `accelrun estimate-memory` on a checkpoint
// Accel wrote. SPEC is read for lines holding `TENSOR: <name> <DTYPE> [d0,d1,...]` (anywhere
// on the line, so a lit test can describe its own checkpoint); data bytes are zeros.
// One shard: OUT_DIR/model.safetensors. N shards: model-0000k-of-0000N.safetensors, tensors in
// SPEC order split into N runs, plus model.safetensors.index.json as the Hugging Face hub
// writes it (metadata.total_size, weight_map, sorted keys, indent 2).
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "runtime/checkpoint/safetensors.h"

namespace {

namespace checkpoint = accel::rt::checkpoint;

struct Spec {
  std::string name;
  std::string dtype;
  std::vector<int64_t> shape;
};

int Fail(const std::string& message) {
  fmt::print(stderr, "memory_write_checkpoint: error: {}\n", message);
  return 2;
}

bool ParseShape(const std::string& text, std::vector<int64_t>& shape) {
  if (text.size() < 2 || text.front() != '[' || text.back() != ']') return false;
  std::stringstream items(text.substr(1, text.size() - 2));
  std::string item;
  while (std::getline(items, item, ',')) {
    if (item.empty() || item.find_first_not_of("0123456789") != std::string::npos) return false;
    shape.push_back(std::stoll(item));
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3 && !(argc == 5 && std::string(argv[3]) == "--shards")) {
    return Fail("usage: memory_write_checkpoint SPEC OUT_DIR [--shards N]");
  }
  size_t shards = argc == 5 ? std::stoul(argv[4]) : 1;
  std::ifstream in(argv[1]);
  if (!in) return Fail(fmt::format("cannot read `{}`", argv[1]));
  std::vector<Spec> specs;
  std::string line;
  while (std::getline(in, line)) {
    size_t at = line.find("TENSOR:");
    if (at == std::string::npos) continue;
    std::stringstream words(line.substr(at + 7));
    Spec spec;
    std::string shape;
    if (!(words >> spec.name >> spec.dtype >> shape) || !ParseShape(shape, spec.shape)) {
      return Fail(fmt::format("bad tensor line `{}`", line));
    }
    specs.push_back(std::move(spec));
  }
  if (specs.empty() || shards == 0 || shards > specs.size())
    return Fail("need at least one tensor per shard");

  std::filesystem::path dir(argv[2]);
  std::filesystem::create_directories(dir);
  // Zero bytes for every tensor; reserved up front so the views stay valid.
  std::vector<std::string> data;
  data.reserve(specs.size());
  std::vector<std::vector<checkpoint::TensorRef>> refs(shards);
  llvm::json::Object weight_map;
  uint64_t total = 0;
  for (size_t i = 0; i < specs.size(); ++i) {
    const Spec& spec = specs[i];
    uint64_t elements = 1;
    for (int64_t d : spec.shape) elements *= static_cast<uint64_t>(d);
    size_t element = checkpoint::DtypeSize(spec.dtype);
    if (element == 0) return Fail(fmt::format("`{}`: dtype {} is not byte-sized", spec.name, spec.dtype));
    data.emplace_back(elements * element, '\0');
    total += data.back().size();
    size_t shard = i * shards / specs.size();
    refs[shard].push_back({spec.name, spec.dtype, spec.shape, data.back()});
    weight_map[spec.name] = fmt::format("model-{:05}-of-{:05}.safetensors", shard + 1, shards);
  }
  for (size_t k = 0; k < shards; ++k) {
    std::string file =
        shards == 1 ? "model.safetensors" : fmt::format("model-{:05}-of-{:05}.safetensors", k + 1, shards);
    if (llvm::Error error = checkpoint::WriteSafetensors((dir / file).string(), refs[k])) {
      return Fail(llvm::toString(std::move(error)));
    }
  }
  if (shards > 1) {
    // llvm::json::Object prints its keys sorted, as the hub's json.dumps(sort_keys=True) does.
    llvm::json::Object index{{"metadata", llvm::json::Object{{"total_size", static_cast<int64_t>(total)}}},
                             {"weight_map", std::move(weight_map)}};
    std::ofstream((dir / "model.safetensors.index.json").string())
        << llvm::formatv("{0:2}", llvm::json::Value(std::move(index))).str() << "\n";
  }
  return 0;
}
