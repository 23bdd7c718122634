#include "runtime/checkpoint/safetensors.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <algorithm>

#include <cerrno>
#include <cstring>
#include <optional>
#include <set>

#include <fmt/format.h>

#include "llvm/Support/JSON.h"
#include "runtime/checkpoint/atomic_file.h"

namespace accel::rt::checkpoint {
namespace {

constexpr uint64_t kMaxHeaderBytes = 100'000'000;

struct DtypeInfo {
  std::string_view name;
  unsigned bits;
};

// In the reference writer's alignment ranking (ascending): the writer sorts by descending rank.
constexpr DtypeInfo kDtypes[] = {
    {"BOOL", 8},    {"F4", 4},      {"F6_E2M3", 6}, {"F6_E3M2", 6},     {"U8", 8},          {"I8", 8},
    {"F8_E5M2", 8}, {"F8_E4M3", 8}, {"F8_E8M0", 8}, {"F8_E4M3FNUZ", 8}, {"F8_E5M2FNUZ", 8}, {"I16", 16},
    {"U16", 16},    {"F16", 16},    {"BF16", 16},   {"I32", 32},        {"U32", 32},        {"F32", 32},
    {"C64", 64},    {"F64", 64},    {"I64", 64},    {"U64", 64},
};

int DtypeRank(std::string_view dtype) {
  for (size_t i = 0; i < std::size(kDtypes); ++i) {
    if (kDtypes[i].name == dtype) return static_cast<int>(i);
  }
  return -1;
}

unsigned DtypeBits(std::string_view dtype) {
  int rank = DtypeRank(dtype);
  return rank < 0 ? 0 : kDtypes[rank].bits;
}

llvm::Error Fail(const std::string& name, const std::string& message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), "%s: %s", name.c_str(), message.c_str());
}

// JSON string literal, escaped as the reference writer (serde_json) escapes.
void AppendJsonString(std::string& out, std::string_view text) {
  out += '"';
  for (unsigned char c : text) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\b':
        out += "\\b";
        break;
      case '\f':
        out += "\\f";
        break;
      default:
        if (c < 0x20) {
          out += fmt::format("\\u{:04x}", c);
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  out += '"';
}

// Element count of `shape`, or empty on overflow.
std::optional<uint64_t> Elements(const std::vector<int64_t>& shape) {
  uint64_t count = 1;
  for (int64_t d : shape) {
    if (d < 0) return std::nullopt;
    if (d != 0 && count > UINT64_MAX / static_cast<uint64_t>(d)) return std::nullopt;
    count *= static_cast<uint64_t>(d);
  }
  return count;
}

}  // namespace

size_t DtypeSize(std::string_view dtype) {
  unsigned bits = DtypeBits(dtype);
  return bits % 8 == 0 ? bits / 8 : 0;
}

llvm::Expected<std::string> EncodeHeader(const std::vector<TensorRef>& tensors,
                                         const std::map<std::string, std::string>& metadata,
                                         std::vector<size_t>* order) {
  std::set<std::string_view> names;
  for (const TensorRef& t : tensors) {
    if (t.name == "__metadata__") return Fail(t.name, "`__metadata__` is reserved and cannot name a tensor");
    if (!names.insert(t.name).second) return Fail(t.name, "duplicate tensor name");
    unsigned bits = DtypeBits(t.dtype);
    if (bits == 0) return Fail(t.name, fmt::format("unknown dtype `{}`", t.dtype));
    std::optional<uint64_t> count = Elements(t.shape);
    if (!count || (*count * bits) % 8 != 0 || *count * bits / 8 != t.bytes.size()) {
      return Fail(t.name, fmt::format("{} bytes do not match dtype {} and shape of {} elements",
                                      t.bytes.size(), t.dtype, count ? *count : 0));
    }
  }
  std::vector<size_t> indices(tensors.size());
  for (size_t i = 0; i < indices.size(); ++i) indices[i] = i;
  // Larger alignment first keeps every tensor aligned to its element size.
  std::stable_sort(indices.begin(), indices.end(), [&](size_t a, size_t b) {
    int ra = DtypeRank(tensors[a].dtype), rb = DtypeRank(tensors[b].dtype);
    if (ra != rb) return ra > rb;
    return tensors[a].name < tensors[b].name;
  });

  std::string header = "{";
  bool first = true;
  if (!metadata.empty()) {
    header += "\"__metadata__\":{";
    for (const auto& [key, value] : metadata) {
      if (!first) header += ',';
      first = false;
      AppendJsonString(header, key);
      header += ':';
      AppendJsonString(header, value);
    }
    header += '}';
    first = false;
  }
  uint64_t offset = 0;
  for (size_t index : indices) {
    const TensorRef& t = tensors[index];
    if (!first) header += ',';
    first = false;
    AppendJsonString(header, t.name);
    header += fmt::format(":{{\"dtype\":\"{}\",\"shape\":[{}],\"data_offsets\":[{},{}]}}", t.dtype,
                          fmt::join(t.shape, ","), offset, offset + t.bytes.size());
    offset += t.bytes.size();
  }
  header += '}';
  // Pad with spaces so the data section starts 8-byte aligned.
  header.append((8 - header.size() % 8) % 8, ' ');

  std::string out(8, '\0');
  uint64_t length = header.size();
  for (int i = 0; i < 8; ++i) out[i] = static_cast<char>((length >> (8 * i)) & 0xff);
  out += header;
  if (order) *order = std::move(indices);
  return out;
}

llvm::Error WriteSafetensors(const std::string& path, const std::vector<TensorRef>& tensors,
                             const std::map<std::string, std::string>& metadata) {
  std::vector<size_t> order;
  llvm::Expected<std::string> header = EncodeHeader(tensors, metadata, &order);
  if (!header) return header.takeError();
  std::vector<std::string_view> parts{*header};
  for (size_t index : order) parts.push_back(tensors[index].bytes);
  return WriteFileAtomically(path, parts);
}

llvm::Expected<SafetensorsFile> SafetensorsFile::Read(const std::string& path) {
  // One allocation of the exact size and one read: a growing stream buffer would copy the
  // file several times and touch every fresh page again.
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Fail(path, std::string("cannot open file: ") + std::strerror(errno));
  struct stat info {};
  if (::fstat(fd, &info) != 0) {
    ::close(fd);
    return Fail(path, std::string("cannot stat file: ") + std::strerror(errno));
  }
  std::string bytes(static_cast<size_t>(info.st_size), '\0');
  size_t done = 0;
  while (done < bytes.size()) {
    ssize_t got = ::read(fd, bytes.data() + done, bytes.size() - done);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) {
      ::close(fd);
      return Fail(path, "short read");
    }
    done += static_cast<size_t>(got);
  }
  ::close(fd);
  return Parse(std::move(bytes), path);
}

llvm::Expected<SafetensorsFile> SafetensorsFile::Parse(std::string bytes, const std::string& name) {
  SafetensorsFile file;
  if (bytes.size() < 8) return Fail(name, "header too small: the file is shorter than 8 bytes (ST-001)");
  uint64_t length = 0;
  for (int i = 7; i >= 0; --i) length = (length << 8) | static_cast<unsigned char>(bytes[i]);
  if (length > kMaxHeaderBytes) return Fail(name, fmt::format("header too large: {} bytes (ST-002)", length));
  if (8 + length > bytes.size()) {
    return Fail(
        name, fmt::format("invalid header length {}: the file has {} bytes (ST-003)", length, bytes.size()));
  }
  std::string_view header(bytes.data() + 8, length);
  llvm::Expected<llvm::json::Value> parsed = llvm::json::parse(llvm::StringRef(header.data(), header.size()));
  if (!parsed)
    return Fail(name, "invalid header JSON: " + llvm::toString(parsed.takeError()) + " (ST-004/ST-005)");
  const llvm::json::Object* root = parsed->getAsObject();
  if (root == nullptr) return Fail(name, "the header is not a JSON object (ST-005)");

  std::vector<std::pair<std::string, TensorInfo>> ordered;
  for (const auto& [key, value] : *root) {
    std::string tensor_name = key.str();
    const llvm::json::Object* object = value.getAsObject();
    if (tensor_name == "__metadata__") {
      if (object == nullptr) return Fail(name, "`__metadata__` is not an object (ST-005)");
      for (const auto& [meta_key, meta_value] : *object) {
        auto text = meta_value.getAsString();
        if (!text) return Fail(name, fmt::format("metadata `{}` is not a string (ST-005)", meta_key.str()));
        file.metadata_[meta_key.str()] = text->str();
      }
      continue;
    }
    if (object == nullptr)
      return Fail(name, fmt::format("tensor `{}` is not an object (ST-005)", tensor_name));
    TensorInfo info;
    auto dtype = object->getString("dtype");
    if (!dtype || DtypeRank(*dtype) < 0) {
      return Fail(name, fmt::format("tensor `{}` has an unknown dtype (ST-005)", tensor_name));
    }
    info.dtype = dtype->str();
    const llvm::json::Array* shape = object->getArray("shape");
    const llvm::json::Array* offsets = object->getArray("data_offsets");
    if (shape == nullptr || offsets == nullptr || offsets->size() != 2) {
      return Fail(name,
                  fmt::format("tensor `{}` needs `shape` and two `data_offsets` (ST-005)", tensor_name));
    }
    for (const llvm::json::Value& d : *shape) {
      auto dim = d.getAsInteger();
      if (!dim || *dim < 0)
        return Fail(name, fmt::format("tensor `{}` has an invalid shape (ST-005)", tensor_name));
      info.shape.push_back(*dim);
    }
    auto begin = (*offsets)[0].getAsInteger();
    auto end = (*offsets)[1].getAsInteger();
    if (!begin || !end || *begin < 0 || *end < 0) {
      return Fail(name, fmt::format("tensor `{}` has invalid data_offsets (ST-005)", tensor_name));
    }
    info.begin = static_cast<uint64_t>(*begin);
    info.end = static_cast<uint64_t>(*end);
    std::optional<uint64_t> count = Elements(info.shape);
    unsigned bits = DtypeBits(info.dtype);
    if (!count || (*count != 0 && bits > UINT64_MAX / *count)) {
      return Fail(name, fmt::format("tensor `{}`: shape overflows (ST-007)", tensor_name));
    }
    if ((*count * bits) % 8 != 0)
      return Fail(name, fmt::format("tensor `{}` is misaligned (ST-008)", tensor_name));
    if (info.end < info.begin || info.end - info.begin != *count * bits / 8) {
      return Fail(name, fmt::format("tensor `{}`: invalid shape, data type or offset (ST-009)", tensor_name));
    }
    ordered.emplace_back(tensor_name, info);
  }
  // Sorted by offset, the tensors must tile the data section exactly: no overlap, no hole.
  std::sort(ordered.begin(), ordered.end(), [](const auto& a, const auto& b) {
    return a.second.begin != b.second.begin ? a.second.begin < b.second.begin : a.second.end < b.second.end;
  });
  uint64_t expected = 0;
  for (const auto& [tensor_name, info] : ordered) {
    if (info.begin != expected) {
      return Fail(name, fmt::format("tensor `{}` starts at {}, expected {}: invalid offset (ST-006)",
                                    tensor_name, info.begin, expected));
    }
    expected = info.end;
  }
  if (8 + length + expected != bytes.size()) {
    return Fail(
        name,
        fmt::format("the tensors cover {} data bytes but the file has {}: file not fully covered (ST-010)",
                    expected, bytes.size() - 8 - length));
  }
  for (auto& [tensor_name, info] : ordered) file.tensors_.emplace(tensor_name, info);
  file.data_offset_ = 8 + length;
  file.bytes_ = std::move(bytes);
  return file;
}

std::string_view SafetensorsFile::Bytes(const std::string& name) const {
  auto it = tensors_.find(name);
  if (it == tensors_.end()) return {};
  return std::string_view(bytes_).substr(data_offset_ + it->second.begin, it->second.end - it->second.begin);
}

}  // namespace accel::rt::checkpoint
