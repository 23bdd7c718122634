#include "tests/support/weights.h"

#include <filesystem>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "runtime/checkpoint/file_bytes.h"
#include "runtime/checkpoint/json.h"
#include "runtime/support/error.h"

namespace accel::rt::checkpoint {
namespace {

namespace fs = std::filesystem;

bool EndsWith(std::string_view text, std::string_view suffix) {
  return text.size() >= suffix.size() && text.substr(text.size() - suffix.size()) == suffix;
}

bool IsPickleName(std::string_view name) {
  return EndsWith(name, ".bin") || EndsWith(name, ".pt") || EndsWith(name, ".pth") || EndsWith(name, ".pkl");
}

// Why `shard` may not be opened next to its index, or empty when it is a plain file name.
// Only plain names are accepted: the hub never writes anything else, and anything else can
// reach outside the checkpoint (`../../x`, `/etc/x`, a symlinked subfolder).
std::string UnsafeShardName(const std::string& shard) {
  if (shard.empty()) return "an empty file name";
  if (shard.find('\0') != std::string::npos) return "a file name with a NUL byte";
  if (shard[0] == '/' || shard[0] == '\\') return "an absolute path";
  if (shard == "." || shard == ".." || shard.find("../") != std::string::npos ||
      shard.find("..\\") != std::string::npos || EndsWith(shard, "/..")) {
    return "a path that leaves the index's folder (path traversal)";
  }
  if (shard.find('/') != std::string::npos || shard.find('\\') != std::string::npos) {
    return "a path into a subfolder; shards must sit next to their index";
  }
  return "";
}

}  // namespace

llvm::Expected<Weights> Weights::Load(const std::string& path) {
  std::error_code ec;
  fs::file_status status = fs::status(path, ec);
  Weights weights;
  if (!fs::exists(status)) return Fail(path, "no such file or folder");
  if (fs::is_regular_file(status)) {
    llvm::Error error = EndsWith(path, ".json") ? weights.LoadIndex(path) : weights.LoadFile(path);
    if (error) return error;
    return weights;
  }
  if (!fs::is_directory(status)) return Fail(path, "not a file or a folder");
  fs::path folder(path);
  bool has_pickle = fs::exists(folder / "pytorch_model.bin", ec);
  if (fs::is_regular_file(folder / "model.safetensors", ec)) {
    if (has_pickle) {
      weights.warnings_.push_back(
          fmt::format("{}: also holds pytorch_model.bin, which Accelerate would load "
                      "instead; Accel reads model.safetensors (it reads no pickle)",
                      path));
    }
    if (llvm::Error error = weights.LoadFile((folder / "model.safetensors").string())) return error;
    return weights;
  }
  std::set<std::string> indexes;
  for (const fs::directory_entry& entry : fs::directory_iterator(folder, ec)) {
    std::string name = entry.path().filename().string();
    if (EndsWith(name, ".index.json") && entry.is_regular_file()) indexes.insert(name);
  }
  if (ec) return Fail(path, "cannot list folder: " + ec.message());
  if (indexes.size() > 1) {
    return Fail(path, fmt::format("{} index files ({}); keep one or name the one to load", indexes.size(),
                                  fmt::join(indexes, ", ")));
  }
  if (indexes.empty()) {
    if (has_pickle) {
      return Fail(path,
                  "holds pytorch_model.bin, a torch pickle; Accel reads safetensors only (convert it to "
                  "model.safetensors)");
    }
    return Fail(path, "no model.safetensors and no *.index.json in this folder");
  }
  if (llvm::Error error = weights.LoadIndex((folder / *indexes.begin()).string())) return error;
  return weights;
}

llvm::Expected<SafetensorsFile> Weights::ReadSafetensors(const std::string& path) {
  if (IsPickleName(path)) {
    return Fail(path, "a torch pickle file; Accel reads safetensors only (convert it to .safetensors)");
  }
  return SafetensorsFile::Read(path);
}

void Weights::Add(const std::string& path, SafetensorsFile file) {
  for (const auto& [name, info] : file.tensors()) file_of_.emplace(name, files_.size());
  paths_.push_back(path);
  files_.push_back(std::move(file));
}

llvm::Error Weights::LoadFile(const std::string& path) {
  llvm::Expected<SafetensorsFile> file = ReadSafetensors(path);
  if (!file) return file.takeError();
  Add(path, std::move(*file));
  return llvm::Error::success();
}

llvm::Error Weights::LoadIndex(const std::string& index_path) {
  llvm::Expected<std::shared_ptr<const FileBytes>> bytes = FileBytes::Map(index_path);
  if (!bytes) return bytes.takeError();
  JsonProblem problem = JsonProblem::kSyntax;
  llvm::Expected<JsonValue> index = ParseJson((*bytes)->view(), &problem);
  if (!index) {
    std::string message = llvm::toString(index.takeError());
    if (problem == JsonProblem::kDuplicateKey) message += " (a tensor listed twice, or a repeated field)";
    return Fail(index_path, "invalid index JSON: " + message);
  }
  if (index->kind != JsonValue::Kind::kObject) return Fail(index_path, "the index is not a JSON object");
  // Without `weight_map`, the whole object is the map (the legacy form Accelerate also reads).
  const JsonValue* weight_map = index->Find("weight_map");
  if (weight_map == nullptr) weight_map = &*index;
  if (weight_map->kind != JsonValue::Kind::kObject) return Fail(index_path, "`weight_map` is not an object");

  std::map<std::string, std::string> shard_of;
  std::map<std::string, std::string> first_tensor_of;  // for error messages
  for (const auto& [tensor, shard] : weight_map->members) {
    if (shard.kind != JsonValue::Kind::kString) {
      return Fail(index_path, fmt::format("weight_map.`{}` is not a file name string", tensor));
    }
    std::string unsafe = UnsafeShardName(shard.text);
    if (!unsafe.empty()) {
      return Fail(index_path, fmt::format("weight_map.`{}`: shard `{}` is {}", tensor, shard.text, unsafe));
    }
    shard_of.emplace(tensor, shard.text);
    first_tensor_of.emplace(shard.text, tensor);
  }
  fs::path folder = fs::path(index_path).parent_path();
  for (const auto& [shard, tensor] : first_tensor_of) {
    fs::path shard_path = folder / shard;
    std::error_code ec;
    if (!fs::exists(shard_path, ec)) {
      return Fail(index_path, fmt::format("shard `{}` (listed for `{}`) does not exist", shard, tensor));
    }
    llvm::Expected<SafetensorsFile> file = ReadSafetensors(shard_path.string());
    if (!file)
      return Fail(index_path, fmt::format("shard `{}`: {}", shard, llvm::toString(file.takeError())));
    // A name in two shards is checked before the index's claims: it is the more basic fault.
    for (const auto& [name, info] : file->tensors()) {
      auto earlier = file_of_.find(name);
      if (earlier != file_of_.end()) {
        return Fail(index_path, fmt::format("tensor `{}` is in two shards, `{}` and `{}`", name,
                                            fs::path(paths_[earlier->second]).filename().string(), shard));
      }
    }
    Add(shard_path.string(), std::move(*file));
  }
  for (const auto& [name, file_index] : file_of_) {
    std::string shard = fs::path(paths_[file_index]).filename().string();
    auto listed = shard_of.find(name);
    if (listed == shard_of.end()) {
      return Fail(index_path, fmt::format("tensor `{}` is in shard `{}` but not in the index", name, shard));
    }
    if (listed->second != shard) {
      return Fail(index_path, fmt::format("tensor `{}` is in shard `{}` but the index places it in `{}`",
                                          name, shard, listed->second));
    }
  }
  for (const auto& [tensor, shard] : shard_of) {
    if (file_of_.count(tensor) == 0) {
      return Fail(index_path,
                  fmt::format("the index places `{}` in `{}`, which does not hold it", tensor, shard));
    }
  }
  return llvm::Error::success();
}

Weights::Tensor Weights::Find(const std::string& name) const {
  auto it = file_of_.find(name);
  if (it == file_of_.end()) return {};
  const SafetensorsFile& file = files_[it->second];
  return {&file.tensors().at(name), file.Bytes(name), &paths_[it->second]};
}

std::vector<std::string> Weights::names() const {
  std::vector<std::string> out;
  out.reserve(file_of_.size());
  for (const auto& [name, index] : file_of_) out.push_back(name);
  return out;
}

}  // namespace accel::rt::checkpoint
