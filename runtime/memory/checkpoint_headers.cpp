#include "runtime/memory/checkpoint_headers.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include <fmt/format.h>

#include "llvm/Support/JSON.h"
#include "runtime/checkpoint/safetensors.h"

namespace accel::rt::memory {
namespace {

namespace fs = std::filesystem;

constexpr uint64_t kMaxHeaderBytes = 100'000'000;

llvm::Error Fail(const std::string& name, const std::string& message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), "%s: %s", name.c_str(), message.c_str());
}

// Bits per element, or 0 for an unknown dtype. The checkpoint library knows the byte-sized
// dtypes; the packed F4 and F6 types are the only others safetensors defines.
unsigned DtypeBits(std::string_view dtype) {
  if (size_t bytes = checkpoint::DtypeSize(dtype)) return static_cast<unsigned>(bytes * 8);
  if (dtype == "F4") return 4;
  if (dtype == "F6_E2M3" || dtype == "F6_E3M2") return 6;
  return 0;
}

// Reads exactly `size` bytes at `offset`.
bool ReadAt(int fd, char* out, size_t size, uint64_t offset) {
  size_t done = 0;
  while (done < size) {
    ssize_t got = ::pread(fd, out + done, size - done, static_cast<off_t>(offset + done));
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) return false;
    done += static_cast<size_t>(got);
  }
  return true;
}

class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }

 private:
  int fd_;
};

llvm::Expected<std::string> ReadText(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Fail(path, std::string("cannot open file: ") + std::strerror(errno));
  std::ostringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
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
  Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (fd.get() < 0) return Fail(path, std::string("cannot open file: ") + std::strerror(errno));
  struct stat info {};
  if (::fstat(fd.get(), &info) != 0) {
    return Fail(path, std::string("cannot stat file: ") + std::strerror(errno));
  }
  if (!S_ISREG(info.st_mode)) return Fail(path, "not a regular file");
  uint64_t file_size = static_cast<uint64_t>(info.st_size);
  if (file_size < 8) return Fail(path, "header too small: the file is shorter than 8 bytes (ST-001)");
  unsigned char prefix[8];
  if (!ReadAt(fd.get(), reinterpret_cast<char*>(prefix), 8, 0)) return Fail(path, "short read");
  uint64_t length = 0;
  for (int i = 7; i >= 0; --i) length = (length << 8) | prefix[i];
  if (length > kMaxHeaderBytes) return Fail(path, fmt::format("header too large: {} bytes (ST-002)", length));
  if (8 + length > file_size) {
    return Fail(path,
                fmt::format("invalid header length {}: the file has {} bytes (ST-003)", length, file_size));
  }
  std::string header(length, '\0');
  if (!ReadAt(fd.get(), header.data(), length, 8)) return Fail(path, "short read");

  llvm::Expected<llvm::json::Value> parsed = llvm::json::parse(header);
  if (!parsed) {
    return Fail(path, "invalid header JSON: " + llvm::toString(parsed.takeError()) + " (ST-004/ST-005)");
  }
  const llvm::json::Object* root = parsed->getAsObject();
  if (root == nullptr) return Fail(path, "the header is not a JSON object (ST-005)");

  struct Placed {
    TensorEntry entry;
    uint64_t begin, end;
  };
  std::vector<Placed> placed;
  for (const auto& [key, value] : *root) {
    std::string name = key.str();
    const llvm::json::Object* object = value.getAsObject();
    if (name == "__metadata__") {
      if (object == nullptr) return Fail(path, "`__metadata__` is not an object (ST-005)");
      for (const auto& [meta_key, meta_value] : *object) {
        if (!meta_value.getAsString()) {
          return Fail(path, fmt::format("metadata `{}` is not a string (ST-005)", meta_key.str()));
        }
      }
      continue;
    }
    if (object == nullptr) return Fail(path, fmt::format("tensor `{}` is not an object (ST-005)", name));
    auto dtype = object->getString("dtype");
    unsigned bits = dtype ? DtypeBits(*dtype) : 0;
    if (bits == 0) return Fail(path, fmt::format("tensor `{}` has an unknown dtype (ST-005)", name));
    const llvm::json::Array* shape = object->getArray("shape");
    const llvm::json::Array* offsets = object->getArray("data_offsets");
    if (shape == nullptr || offsets == nullptr || offsets->size() != 2) {
      return Fail(path, fmt::format("tensor `{}` needs `shape` and two `data_offsets` (ST-005)", name));
    }
    Placed tensor{{name, dtype->str(), {}, path}, 0, 0};
    // Element count with overflow checks (ST-007), as in the checkpoint reader.
    uint64_t elements = 1;
    for (const llvm::json::Value& d : *shape) {
      auto dim = d.getAsInteger();
      if (!dim || *dim < 0) return Fail(path, fmt::format("tensor `{}` has an invalid shape (ST-005)", name));
      tensor.entry.shape.push_back(*dim);
      if (*dim != 0 && elements > UINT64_MAX / static_cast<uint64_t>(*dim)) {
        return Fail(path, fmt::format("tensor `{}`: shape overflows (ST-007)", name));
      }
      elements *= static_cast<uint64_t>(*dim);
    }
    if (elements != 0 && bits > UINT64_MAX / elements) {
      return Fail(path, fmt::format("tensor `{}`: shape overflows (ST-007)", name));
    }
    auto begin = (*offsets)[0].getAsInteger();
    auto end = (*offsets)[1].getAsInteger();
    if (!begin || !end || *begin < 0 || *end < 0) {
      return Fail(path, fmt::format("tensor `{}` has invalid data_offsets (ST-005)", name));
    }
    tensor.begin = static_cast<uint64_t>(*begin);
    tensor.end = static_cast<uint64_t>(*end);
    if ((elements * bits) % 8 != 0) {
      return Fail(path, fmt::format("tensor `{}` is misaligned (ST-008)", name));
    }
    if (tensor.end < tensor.begin || tensor.end - tensor.begin != elements * bits / 8) {
      return Fail(path, fmt::format("tensor `{}`: invalid shape, data type or offset (ST-009)", name));
    }
    placed.push_back(std::move(tensor));
  }
  // Sorted by offset, the tensors must tile the data section: no overlap, no hole (ST-006), and
  // end where the file ends (ST-010).
  std::sort(placed.begin(), placed.end(), [](const Placed& a, const Placed& b) {
    return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
  });
  uint64_t expected = 0;
  for (const Placed& tensor : placed) {
    if (tensor.begin != expected) {
      return Fail(path, fmt::format("tensor `{}` starts at {}, expected {}: invalid offset (ST-006)",
                                    tensor.entry.name, tensor.begin, expected));
    }
    expected = tensor.end;
  }
  if (8 + length + expected != file_size) {
    return Fail(
        path,
        fmt::format("the tensors cover {} data bytes but the file has {}: file not fully covered (ST-010)",
                    expected, file_size - 8 - length));
  }
  if (data_bytes != nullptr) *data_bytes = expected;
  std::vector<TensorEntry> tensors;
  tensors.reserve(placed.size());
  for (Placed& tensor : placed) tensors.push_back(std::move(tensor.entry));
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
