#include "runtime/memory/checkpoint_headers.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "llvm/Support/JSON.h"
#include "runtime/checkpoint/safetensors.h"
#include "runtime/checkpoint/sharded_index.h"
#include "runtime/memory/dtype.h"
#include "runtime/support/error.h"

namespace accel::rt::memory {
namespace {

namespace fs = std::filesystem;

llvm::Expected<std::string> ReadText(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Fail(path, std::string("cannot open file: ") + std::strerror(errno));
  std::ostringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

// Accel's own sharded checkpoint (`sharded_state.index.json`, docs/checkpoints.md): the index
// holds every model tensor's full shape and dtype, which is all an estimate reads; the ranks'
// slices are not opened.
llvm::Expected<CheckpointHeaders> ReadShardedStateIndex(const std::string& index_path) {
  llvm::Expected<std::string> text = ReadText(index_path);
  if (!text) return text.takeError();
  llvm::Expected<checkpoint::ShardedIndex> index = checkpoint::ParseShardedIndex(*text, index_path);
  if (!index) return index.takeError();
  CheckpointHeaders headers;
  headers.index = index_path;
  double bytes = 0;
  for (const auto& [name, tensor] : index->model) {
    headers.tensors.push_back(TensorEntry{name, tensor.dtype, tensor.shape, index_path});
    std::optional<Dtype> dtype = DtypeOfSafetensors(tensor.dtype);
    std::optional<uint64_t> count = checkpoint::ElementCount(tensor.shape);
    if (dtype && count) bytes += dtype->bytes * static_cast<double>(*count);
  }
  headers.data_bytes = static_cast<uint64_t>(bytes);
  return headers;
}

llvm::Expected<CheckpointHeaders> ReadIndex(const std::string& index_path) {
  llvm::Expected<std::string> text = ReadText(index_path);
  if (!text) return text.takeError();
  llvm::Expected<llvm::json::Value> parsed = llvm::json::parse(*text);
  if (!parsed) return Fail(index_path, "invalid JSON: " + llvm::toString(parsed.takeError()));
  const llvm::json::Object* root = parsed->getAsObject();
  if (root == nullptr) return Fail(index_path, "the index is not a JSON object");
  // Accelerate takes `weight_map` if present, else the whole object (the legacy layout).
  const llvm::json::Object* weight_map = root;
  std::string where;
  if (const llvm::json::Value* map = root->get("weight_map")) {
    weight_map = map->getAsObject();
    where = "weight_map.";
    if (weight_map == nullptr) return Fail(index_path, "`weight_map` is not an object");
  }
  std::map<std::string, std::string> shard_of;
  for (const auto& [key, value] : *weight_map) {
    auto file = value.getAsString();
    if (!file || file->empty()) {
      return Fail(index_path, fmt::format("`{}{}` is not a shard file name", where, key.str()));
    }
    shard_of[key.str()] = file->str();
  }
  CheckpointHeaders headers;
  headers.index = index_path;
  // Shards: the sorted unique file names, relative to the index's folder.
  std::set<std::string> shard_names;
  for (const auto& [tensor, file] : shard_of) shard_names.insert(file);
  fs::path folder = fs::path(index_path).parent_path();
  std::map<std::string, std::string> found_in;  // tensor → shard file name
  size_t unlisted = 0;
  for (const std::string& shard : shard_names) {
    std::string shard_path = (folder / shard).string();
    if (fs::path(shard).extension() != ".safetensors") {
      return Fail(index_path, fmt::format("shard `{}` is not a safetensors file; estimate-memory reads "
                                          "safetensors headers only",
                                          shard));
    }
    uint64_t data_bytes = 0;
    llvm::Expected<std::vector<TensorEntry>> tensors = ReadSafetensorsHeader(shard_path, &data_bytes);
    if (!tensors) return tensors.takeError();
    headers.files.push_back(shard_path);
    headers.data_bytes += data_bytes;
    for (TensorEntry& entry : *tensors) {
      auto [at, fresh] = found_in.emplace(entry.name, shard);
      if (!fresh) {
        return Fail(index_path, fmt::format("tensor `{}` is in two shards: `{}` and `{}`", entry.name,
                                            at->second, shard));
      }
      if (shard_of.count(entry.name) == 0) ++unlisted;
      headers.tensors.push_back(std::move(entry));
    }
  }
  for (const auto& [tensor, shard] : shard_of) {
    auto at = found_in.find(tensor);
    if (at == found_in.end() || at->second != shard) {
      return Fail(index_path, fmt::format("`{}{}` names shard `{}`, whose header has no such tensor", where,
                                          tensor, shard));
    }
  }
  if (unlisted > 0) {
    headers.warnings.push_back(
        fmt::format("{} tensor{} in the shards {} not listed in `{}`; counted anyway, as "
                    "loading the shards would load them",
                    unlisted, unlisted == 1 ? "" : "s", unlisted == 1 ? "is" : "are",
                    fs::path(index_path).filename().string()));
  }
  return headers;
}

}  // namespace

llvm::Expected<std::vector<TensorEntry>> ReadSafetensorsHeader(const std::string& path,
                                                               uint64_t* data_bytes) {
  // The checkpoint reader maps the file and validates every ST rule against the header and
  // the file's size; mapping reads no tensor data, so a 10 GB checkpoint costs its headers.
  llvm::Expected<checkpoint::SafetensorsFile> file = checkpoint::SafetensorsFile::Read(path);
  if (!file) return file.takeError();
  std::vector<std::pair<uint64_t, TensorEntry>> placed;
  uint64_t end = 0;
  for (const auto& [name, info] : file->tensors()) {
    placed.push_back({info.begin, TensorEntry{name, info.dtype, info.shape, path}});
    end = std::max(end, info.end);
  }
  // In file order, as the header lists the data: the tree keeps it where names do not decide.
  std::sort(placed.begin(), placed.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  if (data_bytes != nullptr) *data_bytes = end;
  std::vector<TensorEntry> tensors;
  tensors.reserve(placed.size());
  for (auto& [offset, entry] : placed) tensors.push_back(std::move(entry));
  return tensors;
}

llvm::Expected<CheckpointHeaders> ReadCheckpointHeaders(const std::string& path) {
  std::error_code ec;
  fs::file_status status = fs::status(path, ec);
  if (ec || !fs::exists(status)) return Fail(path, "no such file or directory");
  std::string file = path;
  if (fs::is_directory(status)) {
    // Accelerate's order, less the torch pickle it would take first. Every call takes an
    // error_code: an unreadable directory is an error message, not an exception.
    fs::path dir(path);
    std::vector<std::string> indexes;
    for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
      std::string name = it->path().filename().string();
      if (name.size() > 11 && name.compare(name.size() - 11, 11, ".index.json") == 0) indexes.push_back(name);
    }
    if (ec) return Fail(path, "cannot list the directory: " + ec.message());
    std::sort(indexes.begin(), indexes.end());
    if (fs::exists(dir / "model.safetensors", ec)) {
      file = (dir / "model.safetensors").string();
    } else if (indexes.size() == 1) {
      file = (dir / indexes[0]).string();
    } else if (indexes.size() > 1) {
      return Fail(path, fmt::format("the directory has {} index files ({}); pass one of them", indexes.size(),
                                    fmt::join(indexes, ", ")));
    } else if (fs::exists(dir / "pytorch_model.bin", ec)) {
      return Fail(path,
                  "`pytorch_model.bin` is a torch pickle; estimate-memory reads safetensors headers only");
    } else {
      return Fail(path, "the directory has no `model.safetensors` and no `*.index.json`");
    }
  }
  if (fs::path(file).filename() == checkpoint::kShardedIndexName) return ReadShardedStateIndex(file);
  if (fs::path(file).extension() == ".json") return ReadIndex(file);
  if (fs::path(file).extension() == ".bin") {
    return Fail(file, "a torch pickle; estimate-memory reads safetensors headers only");
  }
  CheckpointHeaders headers;
  llvm::Expected<std::vector<TensorEntry>> tensors = ReadSafetensorsHeader(file, &headers.data_bytes);
  if (!tensors) return tensors.takeError();
  headers.files.push_back(file);
  headers.tensors = std::move(*tensors);
  return headers;
}

}  // namespace accel::rt::memory
