#include "runtime/checkpoint/shards.h"

#include <algorithm>
#include <filesystem>
#include <set>

#include <fmt/format.h>

#include "runtime/checkpoint/atomic_file.h"
#include "runtime/checkpoint/json.h"

namespace accel::rt::checkpoint {
namespace {

bool IsDigit(char c) { return c >= '0' && c <= '9'; }

// Whether `name` is `{stem}-<digits>-of-<digits>.safetensors`: a shard of some earlier save.
bool IsShardName(std::string_view name, std::string_view stem) {
  constexpr std::string_view kSuffix = ".safetensors";
  if (name.size() <= stem.size() + kSuffix.size() || name.substr(0, stem.size()) != stem ||
      name.substr(name.size() - kSuffix.size()) != kSuffix) {
    return false;
  }
  std::string_view middle = name.substr(stem.size(), name.size() - stem.size() - kSuffix.size());
  if (middle.empty() || middle[0] != '-') return false;
  middle.remove_prefix(1);
  size_t of = middle.find("-of-");
  if (of == std::string_view::npos || of == 0 || of + 4 >= middle.size()) return false;
  std::string_view k = middle.substr(0, of), n = middle.substr(of + 4);
  return std::all_of(k.begin(), k.end(), IsDigit) && std::all_of(n.begin(), n.end(), IsDigit);
}

}  // namespace

std::vector<ShardPlan> PlanShards(const std::vector<TensorRef>& tensors, uint64_t max_shard_size,
                                  std::string_view stem) {
  std::vector<ShardPlan> shards;
  ShardPlan current;
  for (size_t i = 0; i < tensors.size(); ++i) {
    uint64_t size = tensors[i].bytes.size();
    if (size > max_shard_size) {
      // The hub appends an oversized tensor's shard at once and keeps filling the current one.
      ShardPlan own;
      own.tensors.push_back(i);
      own.bytes = size;
      shards.push_back(std::move(own));
      continue;
    }
    if (current.bytes + size > max_shard_size) {
      shards.push_back(std::move(current));
      current = ShardPlan();
    }
    current.tensors.push_back(i);
    current.bytes += size;
  }
  if (!current.tensors.empty() || shards.empty()) shards.push_back(std::move(current));
  if (shards.size() == 1) {
    shards[0].file_name = fmt::format("{}.safetensors", stem);
  } else {
    for (size_t k = 0; k < shards.size(); ++k) {
      shards[k].file_name = fmt::format("{}-{:05d}-of-{:05d}.safetensors", stem, k + 1, shards.size());
    }
  }
  return shards;
}

std::string IndexFileName(std::string_view stem) { return fmt::format("{}.safetensors.index.json", stem); }

std::string EncodeShardIndex(const std::vector<TensorRef>& tensors, const std::vector<ShardPlan>& shards) {
  // sort_keys: byte order of UTF-8 is code point order, which is how Python sorts str keys.
  std::map<std::string_view, std::string_view> weight_map;
  uint64_t total_size = 0;
  for (const ShardPlan& shard : shards) {
    for (size_t index : shard.tensors) {
      weight_map[tensors[index].name] = shard.file_name;
      total_size += tensors[index].bytes.size();
    }
  }
  std::string out =
      fmt::format("{{\n  \"metadata\": {{\n    \"total_size\": {}\n  }},\n  \"weight_map\": ", total_size);
  if (weight_map.empty()) {
    out += "{}";
  } else {
    out += "{";
    bool first = true;
    for (const auto& [name, file] : weight_map) {
      out += first ? "\n    " : ",\n    ";
      first = false;
      AppendJsonString(out, name, /*ascii_only=*/true);
      out += ": ";
      AppendJsonString(out, file, /*ascii_only=*/true);
    }
    out += "\n  }";
  }
  out += "\n}\n";
  return out;
}

std::vector<CheckpointFile> EncodedShards::Files() const {
  std::vector<CheckpointFile> files;
  for (const auto& [name, encoded] : shards) files.push_back({name, encoded.Parts()});
  if (!index_name.empty()) files.push_back({index_name, {index}});
  return files;
}

llvm::Expected<EncodedShards> EncodeShards(const std::vector<TensorRef>& tensors, uint64_t max_shard_size,
                                           std::string_view stem,
                                           const std::map<std::string, std::string>& metadata) {
  // Each shard checks its own tensors; a name repeated in two shards only shows here.
  std::set<std::string_view> names;
  for (const TensorRef& tensor : tensors) {
    if (!names.insert(tensor.name).second) {
      return llvm::createStringError(llvm::inconvertibleErrorCode(), "tensor `%s`: duplicate tensor name",
                                     tensor.name.c_str());
    }
  }
  EncodedShards out;
  std::vector<ShardPlan> plan = PlanShards(tensors, max_shard_size, stem);
  for (const ShardPlan& shard : plan) {
    std::vector<TensorRef> members;
    members.reserve(shard.tensors.size());
    for (size_t index : shard.tensors) members.push_back(tensors[index]);
    llvm::Expected<EncodedSafetensors> encoded = EncodeSafetensors(members, metadata);
    if (!encoded) {
      return llvm::createStringError(llvm::inconvertibleErrorCode(), "%s: %s", shard.file_name.c_str(),
                                     llvm::toString(encoded.takeError()).c_str());
    }
    out.shards.emplace_back(shard.file_name, std::move(*encoded));
  }
  if (plan.size() > 1) {
    out.index_name = IndexFileName(stem);
    out.index = EncodeShardIndex(tensors, plan);
  }
  return out;
}

llvm::Error SaveShardedSafetensors(const std::string& directory, const std::vector<TensorRef>& tensors,
                                   uint64_t max_shard_size, std::string_view stem) {
  namespace fs = std::filesystem;
  llvm::Expected<EncodedShards> encoded = EncodeShards(tensors, max_shard_size, stem);
  if (!encoded) {
    return llvm::createStringError(llvm::inconvertibleErrorCode(), "%s: %s", directory.c_str(),
                                   llvm::toString(encoded.takeError()).c_str());
  }
  std::set<std::string> written;
  // The index goes last: a reader that finds it finds every shard it names.
  for (const CheckpointFile& file : encoded->Files()) {
    if (llvm::Error error = WriteFileAtomically((fs::path(directory) / file.name).string(), file.parts))
      return error;
    written.insert(file.name);
  }
  // Leftovers of an earlier save would be read instead of, or mixed with, the new files.
  std::string single = fmt::format("{}.safetensors", stem), index = IndexFileName(stem);
  std::error_code ec;
  for (const fs::directory_entry& entry : fs::directory_iterator(directory, ec)) {
    std::string name = entry.path().filename().string();
    bool stale = IsShardName(name, stem) || name == single || name == index;
    if (stale && written.count(name) == 0) {
      fs::remove(entry.path(), ec);
      if (ec) {
        return llvm::createStringError(ec, "%s: cannot remove stale shard: %s", entry.path().c_str(),
                                       ec.message().c_str());
      }
    }
  }
  if (ec)
    return llvm::createStringError(ec, "%s: cannot list directory: %s", directory.c_str(),
                                   ec.message().c_str());
  return llvm::Error::success();
}

}  // namespace accel::rt::checkpoint
