#include "runtime/checkpoint/safetensors.h"

#include <algorithm>
#include <optional>
#include <set>
#include <utility>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "runtime/checkpoint/atomic_file.h"
#include "runtime/checkpoint/dtype.h"
#include "runtime/checkpoint/json.h"
#include "runtime/support/error.h"

namespace accel::rt::checkpoint {
namespace {

// The reference writer's alignment rank: the row order of dtypes.def, ascending (the writer
// sorts by descending rank); -1 for a string that is no safetensors dtype.
int DtypeRank(std::string_view dtype) {
  std::optional<Dtype> known = DtypeOfSafetensors(dtype);
  return known ? static_cast<int>(*known) : -1;
}

// Bits per element in a file (BOOL: 8), or 0 for an unknown dtype.
unsigned DtypeBits(std::string_view dtype) {
  std::optional<Dtype> known = DtypeOfSafetensors(dtype);
  return known ? Info(*known).file_bits : 0;
}

// Bit count of a dense tensor of `shape` and `bits` per element, or empty when a dimension is
// negative or the product does not fit 64 bits (ST-007).
std::optional<uint64_t> TensorBits(const std::vector<int64_t>& shape, unsigned bits) {
  uint64_t count = 1;
  for (int64_t d : shape) {
    if (d < 0) return std::nullopt;
    if (d != 0 && count > UINT64_MAX / static_cast<uint64_t>(d)) return std::nullopt;
    count *= static_cast<uint64_t>(d);
  }
  if (count != 0 && bits > UINT64_MAX / count) return std::nullopt;
  return count * bits;
}

}  // namespace

size_t DtypeSize(std::string_view dtype) {
  unsigned bits = DtypeBits(dtype);
  return bits % 8 == 0 ? bits / 8 : 0;
}

namespace {

// What the header says of a tensor: everything but its bytes, of which only the count matters.
struct HeaderEntry {
  std::string_view name;
  std::string_view dtype;
  const std::vector<int64_t>* shape;
  uint64_t byte_count;
};

llvm::Expected<std::string> EncodeHeaderOf(const std::vector<HeaderEntry>& tensors,
                                           const std::map<std::string, std::string>& metadata,
                                           std::vector<size_t>* order) {
  std::set<std::string_view> names;
  for (const HeaderEntry& t : tensors) {
    std::string where = fmt::format("tensor `{}`", t.name);
    if (t.name == "__metadata__")
      return Fail(where + ": `__metadata__` is reserved and cannot name a tensor");
    if (!IsValidUtf8(t.name)) return Fail(where + ": the name is not valid UTF-8");
    if (!names.insert(t.name).second) return Fail(where + ": duplicate tensor name");
    unsigned bits = DtypeBits(t.dtype);
    if (bits == 0) return Fail(fmt::format("{}: unknown dtype `{}`", where, t.dtype));
    std::optional<uint64_t> total_bits = TensorBits(*t.shape, bits);
    if (!total_bits)
      return Fail(where + ": the shape has a negative dimension or its size overflows 64 bits");
    if (*total_bits % 8 != 0 || *total_bits / 8 != t.byte_count) {
      return Fail(fmt::format("{}: {} bytes do not match dtype {} and shape [{}] ({} bits)", where,
                              t.byte_count, t.dtype, fmt::join(*t.shape, ","), *total_bits));
    }
  }
  for (const auto& [key, value] : metadata) {
    if (!IsValidUtf8(key) || !IsValidUtf8(value)) {
      return Fail(fmt::format("metadata `{}`: key or value is not valid UTF-8", key));
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
    const HeaderEntry& t = tensors[index];
    if (!first) header += ',';
    first = false;
    AppendJsonString(header, t.name);
    header += fmt::format(":{{\"dtype\":\"{}\",\"shape\":[{}],\"data_offsets\":[{},{}]}}", t.dtype,
                          fmt::join(*t.shape, ","), offset, offset + t.byte_count);
    offset += t.byte_count;
  }
  header += '}';
  // Pad with spaces so the data section starts 8-byte aligned.
  header.append((8 - header.size() % 8) % 8, ' ');
  if (header.size() > kMaxHeaderBytes) {
    return Fail(fmt::format("the header would be {} bytes, over the format's limit of {} (ST-002)",
                            header.size(), kMaxHeaderBytes));
  }

  std::string out(8, '\0');
  uint64_t length = header.size();
  for (int i = 0; i < 8; ++i) out[i] = static_cast<char>((length >> (8 * i)) & 0xff);
  out += header;
  if (order) *order = std::move(indices);
  return out;
}

}  // namespace

llvm::Expected<std::string> EncodeHeader(const std::vector<TensorRef>& tensors,
                                         const std::map<std::string, std::string>& metadata,
                                         std::vector<size_t>* order) {
  std::vector<HeaderEntry> entries;
  entries.reserve(tensors.size());
  for (const TensorRef& t : tensors) entries.push_back({t.name, t.dtype, &t.shape, t.bytes.size()});
  return EncodeHeaderOf(entries, metadata, order);
}

std::vector<std::string_view> EncodedSafetensors::Parts() const {
  std::vector<std::string_view> parts;
  parts.reserve(data.size() + 1);
  parts.push_back(header);
  parts.insert(parts.end(), data.begin(), data.end());
  return parts;
}

uint64_t EncodedSafetensors::size() const {
  uint64_t total = header.size();
  for (std::string_view part : data) total += part.size();
  return total;
}

llvm::Expected<EncodedSafetensors> EncodeSafetensors(const std::vector<TensorRef>& tensors,
                                                     const std::map<std::string, std::string>& metadata) {
  std::vector<size_t> order;
  llvm::Expected<std::string> header = EncodeHeader(tensors, metadata, &order);
  if (!header) return header.takeError();
  EncodedSafetensors encoded;
  encoded.header = std::move(*header);
  for (size_t index : order) encoded.data.push_back(tensors[index].bytes);
  return encoded;
}

llvm::Expected<EncodedSafetensors> EncodeScatteredSafetensors(
    const std::vector<ScatteredTensorRef>& tensors, const std::map<std::string, std::string>& metadata) {
  std::vector<HeaderEntry> entries;
  entries.reserve(tensors.size());
  for (const ScatteredTensorRef& t : tensors) {
    uint64_t byte_count = 0;
    for (std::string_view piece : t.pieces) byte_count += piece.size();
    entries.push_back({t.name, t.dtype, &t.shape, byte_count});
  }
  std::vector<size_t> order;
  llvm::Expected<std::string> header = EncodeHeaderOf(entries, metadata, &order);
  if (!header) return header.takeError();
  EncodedSafetensors encoded;
  encoded.header = std::move(*header);
  for (size_t index : order) {
    for (std::string_view piece : tensors[index].pieces) encoded.data.push_back(piece);
  }
  return encoded;
}

llvm::Error WriteSafetensors(const std::string& path, const std::vector<TensorRef>& tensors,
                             const std::map<std::string, std::string>& metadata) {
  llvm::Expected<EncodedSafetensors> encoded = EncodeSafetensors(tensors, metadata);
  if (!encoded) return Fail(path + ": " + llvm::toString(encoded.takeError()));
  return WriteFileAtomically(path, encoded->Parts());
}

llvm::Expected<SafetensorsFile> SafetensorsFile::Read(const std::string& path) {
  llvm::Expected<std::shared_ptr<const FileBytes>> bytes = FileBytes::Map(path);
  if (!bytes) return bytes.takeError();
  return FromBytes(std::move(*bytes), path);
}

llvm::Expected<SafetensorsFile> SafetensorsFile::Parse(std::string bytes, const std::string& name) {
  return FromBytes(FileBytes::Own(std::move(bytes)), name);
}

namespace {

// Reads one tensor entry of the header (ST-005, ST-007 … ST-009).
llvm::Expected<TensorInfo> ReadTensorEntry(const std::string& tensor, const JsonValue& value) {
  std::string where = fmt::format("tensor `{}`", tensor);
  if (value.kind != JsonValue::Kind::kObject) return Fail(where + ": the entry is not an object (ST-005)");
  TensorInfo info;
  const JsonValue* dtype = value.Find("dtype");
  if (dtype == nullptr || dtype->kind != JsonValue::Kind::kString || DtypeRank(dtype->text) < 0) {
    return Fail(where + ": `dtype` is missing or not a known safetensors dtype (ST-005)");
  }
  info.dtype = dtype->text;
  const JsonValue* shape = value.Find("shape");
  const JsonValue* offsets = value.Find("data_offsets");
  if (shape == nullptr || shape->kind != JsonValue::Kind::kArray || offsets == nullptr ||
      offsets->kind != JsonValue::Kind::kArray || offsets->items.size() != 2) {
    return Fail(where + ": needs a `shape` array and two `data_offsets` (ST-005)");
  }
  for (const JsonValue& dimension : shape->items) {
    std::optional<uint64_t> d = dimension.AsUnsigned();
    if (!d || *d > static_cast<uint64_t>(INT64_MAX)) {
      return Fail(
          fmt::format("{}: shape entry `{}` is not a non-negative integer (ST-005)", where,
                      dimension.kind == JsonValue::Kind::kNumber ? dimension.text : "(not a number)"));
    }
    info.shape.push_back(static_cast<int64_t>(*d));
  }
  std::optional<uint64_t> begin = offsets->items[0].AsUnsigned();
  std::optional<uint64_t> end = offsets->items[1].AsUnsigned();
  if (!begin || !end) return Fail(where + ": `data_offsets` are not non-negative 64-bit integers (ST-005)");
  info.begin = *begin;
  info.end = *end;
  std::optional<uint64_t> bits = TensorBits(info.shape, DtypeBits(info.dtype));
  if (!bits) return Fail(where + ": the size of the shape overflows 64 bits (ST-007)");
  if (*bits % 8 != 0) {
    return Fail(fmt::format("{}: {} bits of {} do not fill whole bytes: misaligned (ST-008)", where, *bits,
                            info.dtype));
  }
  if (info.end < info.begin || info.end - info.begin != *bits / 8) {
    return Fail(
        fmt::format("{}: data_offsets [{}, {}] do not hold the {} bytes of {} [{}]: invalid shape, data "
                    "type or offset (ST-009)",
                    where, info.begin, info.end, *bits / 8, info.dtype, fmt::join(info.shape, ",")));
  }
  return info;
}

// Reads `__metadata__`: a flat string → string map (ST-005).
llvm::Error ReadMetadata(const JsonValue& value, std::map<std::string, std::string>& out) {
  if (value.kind != JsonValue::Kind::kObject) return Fail("`__metadata__` is not an object (ST-005)");
  for (const auto& [key, entry] : value.members) {
    if (entry.kind != JsonValue::Kind::kString) {
      // A `__metadata__` shaped like a tensor entry is a tensor with the reserved name.
      if (value.Find("data_offsets") != nullptr) {
        return Fail("a tensor cannot be named `__metadata__`: the name is reserved (ST-011)");
      }
      return Fail(fmt::format("metadata `{}` is not a string (ST-005)", key));
    }
    out[key] = entry.text;
  }
  return llvm::Error::success();
}

}  // namespace

llvm::Expected<SafetensorsFile> SafetensorsFile::FromBytes(std::shared_ptr<const FileBytes> file_bytes,
                                                           const std::string& name) {
  auto fail = [&](const std::string& message) { return Fail(name + ": " + message); };
  std::string_view bytes = file_bytes->view();
  if (bytes.size() < 8) return fail("header too small: the file is shorter than 8 bytes (ST-001)");
  uint64_t length = 0;
  for (int i = 7; i >= 0; --i) length = (length << 8) | static_cast<unsigned char>(bytes[i]);
  if (length > kMaxHeaderBytes) {
    // Not the length itself: in a file that is not safetensors, it is 8 bytes of that file.
    return fail(
        fmt::format("header too large: its length is over the limit of {} bytes (ST-002)", kMaxHeaderBytes));
  }
  // `length` is at most 10^8 here, so `8 + length` cannot overflow.
  if (8 + length > bytes.size()) {
    return fail(
        fmt::format("invalid header length {}: the file has only {} bytes (ST-003)", length, bytes.size()));
  }
  std::string_view header = bytes.substr(8, length);
  JsonProblem problem = JsonProblem::kSyntax;
  llvm::Expected<JsonValue> parsed = ParseJson(header, &problem);
  if (!parsed) {
    const char* rule = problem == JsonProblem::kEncoding       ? "is not valid UTF-8 (ST-004)"
                       : problem == JsonProblem::kDuplicateKey ? "has a duplicate key (ST-011)"
                                                               : "is not valid JSON (ST-005)";
    return fail(fmt::format("the header {}: {}", rule, llvm::toString(parsed.takeError())));
  }
  if (parsed->kind != JsonValue::Kind::kObject) return fail("the header is not a JSON object (ST-005)");

  SafetensorsFile file;
  std::vector<std::pair<const std::string*, TensorInfo>> ordered;
  ordered.reserve(parsed->members.size());
  for (const auto& [key, value] : parsed->members) {
    if (key == "__metadata__") {
      if (llvm::Error error = ReadMetadata(value, file.metadata_))
        return fail(llvm::toString(std::move(error)));
      continue;
    }
    llvm::Expected<TensorInfo> info = ReadTensorEntry(key, value);
    if (!info) return fail(llvm::toString(info.takeError()));
    ordered.emplace_back(&key, std::move(*info));
  }
  // Sorted by offset, the tensors must tile the data section exactly: no overlap, no hole.
  std::sort(ordered.begin(), ordered.end(), [](const auto& a, const auto& b) {
    return a.second.begin != b.second.begin ? a.second.begin < b.second.begin : a.second.end < b.second.end;
  });
  uint64_t expected = 0;
  for (const auto& [tensor, info] : ordered) {
    if (info.begin != expected) {
      return fail(fmt::format("tensor `{}` starts at data byte {}, expected {}: invalid offset (ST-006)",
                              *tensor, info.begin, expected));
    }
    expected = info.end;
  }
  uint64_t data_bytes = bytes.size() - 8 - length;
  if (expected != data_bytes) {
    return fail(
        fmt::format("the tensors cover {} data bytes but the file has {}: incomplete metadata, file not "
                    "fully covered (ST-010)",
                    expected, data_bytes));
  }
  for (auto& [tensor, info] : ordered) file.tensors_.emplace(*tensor, std::move(info));
  file.data_offset_ = 8 + length;
  file.file_ = std::move(file_bytes);
  return file;
}

std::string_view SafetensorsFile::Bytes(const std::string& name) const {
  auto it = tensors_.find(name);
  if (it == tensors_.end()) return {};
  return file_->view().substr(data_offset_ + it->second.begin, it->second.end - it->second.begin);
}

}  // namespace accel::rt::checkpoint
