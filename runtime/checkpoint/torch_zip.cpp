#include "runtime/checkpoint/torch_zip.h"

#include <algorithm>

#include <fmt/format.h>

#include "llvm/ADT/ArrayRef.h"
#include "llvm/Support/CRC.h"
#include "runtime/checkpoint/safetensors.h"

namespace accel::rt::checkpoint {
namespace {

constexpr uint32_t kLocalHeader = 0x04034b50;
constexpr uint32_t kCentralHeader = 0x02014b50;
constexpr uint32_t kEndOfCentral = 0x06054b50;
constexpr uint32_t kZip64EndOfCentral = 0x06064b50;
constexpr uint32_t kZip64Locator = 0x07064b50;
constexpr uint16_t kZip64Extra = 0x0001;
// torch's padding field ("FB"), which aligns every record's data to 64 bytes so a loader may map it.
constexpr uint16_t kPaddingExtra = 0x4246;
constexpr uint64_t kAlignment = 64;
constexpr uint32_t kMax32 = 0xFFFFFFFFu;

void Put(std::string& out, uint64_t value, int bytes) {
  for (int i = 0; i < bytes; ++i) out += static_cast<char>((value >> (8 * i)) & 0xFF);
}

uint64_t Get(std::string_view in, size_t at, int bytes) {
  uint64_t value = 0;
  for (int i = 0; i < bytes; ++i) value |= uint64_t{static_cast<unsigned char>(in[at + i])} << (8 * i);
  return value;
}

struct Entry {
  std::string name;
  std::vector<std::string_view> parts;
  uint64_t size = 0;
  uint32_t crc = 0;
  uint64_t offset = 0;
};

}  // namespace

uint64_t EncodedTorchFile::size() const {
  uint64_t total = 0;
  for (std::string_view part : parts_) total += part.size();
  return total;
}

llvm::Expected<EncodedTorchFile> EncodeTorchFile(std::string_view archive_name, std::string pickle,
                                                 const std::vector<TorchStorage>& storages, uint64_t zip64_from) {
  EncodedTorchFile file;
  auto own = [&](std::string text) -> std::string_view {
    file.text_.push_back(std::move(text));
    return file.text_.back();
  };
  // The records torch.save writes, in its order.
  std::vector<Entry> entries;
  auto add = [&](std::string name, std::vector<std::string_view> parts) {
    entries.push_back({fmt::format("{}/{}", archive_name, name), std::move(parts)});
  };
  add("data.pkl", {own(std::move(pickle))});
  add(".format_version", {own("1")});
  add(".storage_alignment", {own("64")});
  add("byteorder", {own("little")});
  for (const TorchStorage& storage : storages) add("data/" + storage.key, storage.parts);
  add("version", {own("3\n")});

  uint64_t offset = 0;
  for (Entry& entry : entries) {
    for (std::string_view part : entry.parts) {
      entry.size += part.size();
      entry.crc = llvm::crc32(entry.crc, llvm::ArrayRef<uint8_t>(
                                             reinterpret_cast<const uint8_t*>(part.data()), part.size()));
    }
    entry.offset = offset;
    const bool zip64 = entry.size >= zip64_from;
    std::string header;
    Put(header, kLocalHeader, 4);
    Put(header, zip64 ? 45 : 20, 2);  // version needed
    Put(header, 0, 2);                // flags
    Put(header, 0, 2);                // stored
    Put(header, 0, 4);                // time, date
    Put(header, entry.crc, 4);
    Put(header, zip64 ? kMax32 : entry.size, 4);
    Put(header, zip64 ? kMax32 : entry.size, 4);
    Put(header, entry.name.size(), 2);
    std::string extra;
    if (zip64) {
      Put(extra, kZip64Extra, 2);
      Put(extra, 16, 2);
      Put(extra, entry.size, 8);
      Put(extra, entry.size, 8);
    }
    uint64_t unpadded = offset + header.size() + 2 + entry.name.size() + extra.size();
    uint64_t padding = (kAlignment - (unpadded + 4) % kAlignment) % kAlignment;
    Put(extra, kPaddingExtra, 2);
    Put(extra, padding, 2);
    extra.append(padding, 'Z');
    Put(header, extra.size(), 2);
    header += entry.name;
    header += extra;
    offset += header.size() + entry.size;
    file.parts_.push_back(own(std::move(header)));
    file.parts_.insert(file.parts_.end(), entry.parts.begin(), entry.parts.end());
  }

  const uint64_t central_offset = offset;
  std::string central;
  for (const Entry& entry : entries) {
    const bool big = entry.size >= zip64_from, far = entry.offset >= zip64_from;
    std::string extra;
    if (big || far) {
      Put(extra, kZip64Extra, 2);
      Put(extra, (big ? 16 : 0) + (far ? 8 : 0), 2);
      if (big) {
        Put(extra, entry.size, 8);
        Put(extra, entry.size, 8);
      }
      if (far) Put(extra, entry.offset, 8);
    }
    Put(central, kCentralHeader, 4);
    Put(central, big || far ? 45 : 20, 2);  // made by
    Put(central, big || far ? 45 : 20, 2);  // needed
    Put(central, 0, 2);
    Put(central, 0, 2);
    Put(central, 0, 4);
    Put(central, entry.crc, 4);
    Put(central, big ? kMax32 : entry.size, 4);
    Put(central, big ? kMax32 : entry.size, 4);
    Put(central, entry.name.size(), 2);
    Put(central, extra.size(), 2);
    Put(central, 0, 2);  // comment
    Put(central, 0, 2);  // disk
    Put(central, 0, 2);  // internal attributes
    Put(central, 0, 4);  // external attributes
    Put(central, far ? kMax32 : entry.offset, 4);
    central += entry.name;
    central += extra;
  }
  const uint64_t central_size = central.size();
  // The end record counts entries in 16 bits.
  const bool zip64_end = central_offset >= zip64_from || central_size >= zip64_from || entries.size() >= 0xFFFF;
  if (zip64_end) {
    const uint64_t record_offset = central_offset + central_size;
    Put(central, kZip64EndOfCentral, 4);
    Put(central, 44, 8);  // the record's size after this field
    Put(central, 45, 2);
    Put(central, 45, 2);
    Put(central, 0, 4);
    Put(central, 0, 4);
    Put(central, entries.size(), 8);
    Put(central, entries.size(), 8);
    Put(central, central_size, 8);
    Put(central, central_offset, 8);
    Put(central, kZip64Locator, 4);
    Put(central, 0, 4);
    Put(central, record_offset, 8);
    Put(central, 1, 4);
  }
  Put(central, kEndOfCentral, 4);
  Put(central, 0, 2);
  Put(central, 0, 2);
  Put(central, zip64_end ? 0xFFFF : entries.size(), 2);
  Put(central, zip64_end ? 0xFFFF : entries.size(), 2);
  Put(central, zip64_end ? kMax32 : central_size, 4);
  Put(central, zip64_end ? kMax32 : central_offset, 4);
  Put(central, 0, 2);
  file.parts_.push_back(own(std::move(central)));
  return file;
}

namespace {

llvm::Error Problem(const std::string& what) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), "%s", what.c_str());
}

llvm::Error Bad(const std::string& path, const std::string& what) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), "%s: %s", path.c_str(), what.c_str());
}

// The records of the zip archive `in`: name to data, each checked to lie within the file.
llvm::Expected<std::map<std::string, std::string_view>> ReadZip(const std::string& path, std::string_view in) {
  constexpr size_t kEndSize = 22;
  if (in.size() < kEndSize) return Bad(path, "too short for a zip archive");
  // The end record sits in the last 22 bytes plus at most a 64 KiB comment.
  size_t end = std::string_view::npos;
  for (size_t at = in.size() - kEndSize + 1; at-- > 0 && in.size() - at <= kEndSize + 0xFFFF;) {
    if (Get(in, at, 4) == kEndOfCentral) {
      end = at;
      break;
    }
  }
  if (end == std::string_view::npos) return Bad(path, "no zip end-of-directory record");
  uint64_t count = Get(in, end + 10, 2), central_size = Get(in, end + 12, 4), central = Get(in, end + 16, 4);
  if (count == 0xFFFF || central_size == kMax32 || central == kMax32) {
    if (end < 20 || Get(in, end - 20, 4) != kZip64Locator) return Bad(path, "a zip64 archive without its locator");
    uint64_t record = Get(in, end - 12, 8);
    if (record > in.size() || in.size() - record < 56 || Get(in, record, 4) != kZip64EndOfCentral)
      return Bad(path, "a zip64 end record outside the file");
    count = Get(in, record + 32, 8);
    central_size = Get(in, record + 40, 8);
    central = Get(in, record + 48, 8);
  }
  if (central > in.size() || central_size > in.size() - central || count > central_size / 46)
    return Bad(path, "a zip directory outside the file");
  std::map<std::string, std::string_view> records;
  size_t at = central;
  for (uint64_t i = 0; i < count; ++i) {
    if (central + central_size - at < 46 || Get(in, at, 4) != kCentralHeader)
      return Bad(path, fmt::format("zip directory entry {} is malformed", i));
    uint64_t method = Get(in, at + 10, 2), compressed = Get(in, at + 20, 4), size = Get(in, at + 24, 4);
    uint64_t name_length = Get(in, at + 28, 2), extra_length = Get(in, at + 30, 2),
             comment_length = Get(in, at + 32, 2), local = Get(in, at + 42, 4);
    if (central + central_size - at - 46 < name_length + extra_length + comment_length)
      return Bad(path, fmt::format("zip directory entry {} runs past the directory", i));
    std::string name(in.substr(at + 46, name_length));
    // zip64: the fields that overflowed, in order, in the extra field.
    std::string_view extra = in.substr(at + 46 + name_length, extra_length);
    for (size_t e = 0; e + 4 <= extra.size();) {
      uint64_t id = Get(extra, e, 2), length = Get(extra, e + 2, 2);
      if (e + 4 + length > extra.size()) break;
      if (id == kZip64Extra) {
        size_t field = e + 4;
        auto next = [&](uint64_t& value) {
          if (value != kMax32 || field + 8 > e + 4 + length) return;
          value = Get(extra, field, 8);
          field += 8;
        };
        next(size);
        next(compressed);
        next(local);
      }
      e += 4 + length;
    }
    if (method != 0 || compressed != size)
      return Bad(path, fmt::format("record `{}` is compressed; torch.save writes stored records", name));
    if (local > in.size() || in.size() - local < 30 || Get(in, local, 4) != kLocalHeader)
      return Bad(path, fmt::format("record `{}` has no local header", name));
    uint64_t data = local + 30 + Get(in, local + 26, 2) + Get(in, local + 28, 2);
    if (data > in.size() || size > in.size() - data)
      return Bad(path, fmt::format("record `{}` runs past the end of the file", name));
    records[name] = in.substr(data, size);
    at += 46 + name_length + extra_length + comment_length;
  }
  return records;
}

}  // namespace

llvm::Expected<std::string_view> TorchFile::TensorBytes(const pickle::TensorInfo& tensor) const {
  auto found = storages.find(tensor.storage);
  if (found == storages.end()) return Problem(fmt::format("no record data/{}", tensor.storage));
  const size_t item = DtypeSize(tensor.dtype);
  if (item == 0) return Problem(fmt::format("storage {} has dtype {}, which has no byte size", tensor.storage,
                                            tensor.dtype));
  if (found->second.size() / item < static_cast<uint64_t>(tensor.storage_elements))
    return Problem(fmt::format("record data/{} is shorter than its storage", tensor.storage));
  // Dense and row-major: the stride of each dimension is the product of the extents after it.
  uint64_t elements = 1;
  for (size_t d = tensor.shape.size(); d-- > 0;) {
    if (tensor.shape[d] < 0) return Problem("a tensor of negative extent");
    if (tensor.shape[d] > 1 && tensor.stride[d] != static_cast<int64_t>(elements))
      return Problem(fmt::format("a tensor of storage {} is not dense and row-major", tensor.storage));
    if (tensor.shape[d] > 0 && elements > static_cast<uint64_t>(tensor.storage_elements) / tensor.shape[d])
      return Problem(fmt::format("a tensor larger than its storage {}", tensor.storage));
    elements *= static_cast<uint64_t>(tensor.shape[d]);
  }
  if (tensor.offset < 0 || elements > static_cast<uint64_t>(tensor.storage_elements) ||
      static_cast<uint64_t>(tensor.offset) > static_cast<uint64_t>(tensor.storage_elements) - elements)
    return Problem(fmt::format("a tensor beyond the end of its storage {}", tensor.storage));
  return found->second.substr(tensor.offset * item, elements * item);
}

llvm::Expected<TorchFile> ReadTorchFile(const std::string& path) {
  llvm::Expected<std::shared_ptr<const FileBytes>> mapped = FileBytes::Map(path);
  if (!mapped) return mapped.takeError();
  return ParseTorchFile(std::move(*mapped), path);
}

llvm::Expected<TorchFile> ParseTorchFile(std::shared_ptr<const FileBytes> bytes, const std::string& path) {
  std::string_view in = bytes->view();
  if (in.size() >= 2 && static_cast<unsigned char>(in[0]) == 0x80) {
    return Bad(path, "a pickle in torch's format before 1.6, which Accel does not read; load it in Python "
                     "and save it again with torch.save");
  }
  if (in.size() < 4 || Get(in, 0, 4) != kLocalHeader) return Bad(path, "not a file torch.save writes (a zip archive)");
  llvm::Expected<std::map<std::string, std::string_view>> records = ReadZip(path, in);
  if (!records) return records.takeError();
  std::string folder;
  for (const auto& [name, data] : *records) {
    size_t slash = name.find('/');
    if (slash == std::string::npos) return Bad(path, fmt::format("record `{}` is outside the archive's folder", name));
    if (folder.empty()) folder = name.substr(0, slash + 1);
    if (name.compare(0, folder.size(), folder) != 0)
      return Bad(path, fmt::format("records under two folders, `{}` and `{}`", folder, name));
  }
  auto pickle_record = records->find(folder + "data.pkl");
  if (pickle_record == records->end()) return Bad(path, "the archive has no data.pkl");
  if (auto order = records->find(folder + "byteorder"); order != records->end() && order->second != "little")
    return Bad(path, fmt::format("byte order `{}`; Accel reads little-endian files", order->second));
  llvm::Expected<pickle::Ref> root = pickle::Read(pickle_record->second);
  if (!root) return Bad(path + "/data.pkl", llvm::toString(root.takeError()));
  TorchFile file{std::move(bytes), std::move(*root), {}};
  const std::string storage_prefix = folder + "data/";
  for (const auto& [name, data] : *records)
    if (name.compare(0, storage_prefix.size(), storage_prefix) == 0) file.storages[name.substr(storage_prefix.size())] = data;
  return file;
}

}  // namespace accel::rt::checkpoint
