#include "runtime/checkpoint/sharded_index.h"

#include <algorithm>
#include <cstdint>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "runtime/checkpoint/json.h"
#include "runtime/checkpoint/manifest.h"
#include "runtime/checkpoint/safetensors.h"
#include "runtime/support/error.h"

namespace accel::rt::checkpoint {
namespace {

std::string Quoted(std::string_view text) {
  std::string out;
  AppendJsonString(out, text);
  return out;
}

// The strict reader's view of one object member, with the path it is at for errors.
class Reader {
 public:
  Reader(const std::string& path) : path_(path) {}

  llvm::Expected<const JsonValue*> Member(const JsonValue& object, std::string_view key, JsonValue::Kind kind,
                                          const std::string& where) const {
    const JsonValue* value = object.Find(key);
    if (value == nullptr || value->kind != kind) {
      return Fail(path_, fmt::format("`{}{}` is missing or not {}", where, key, KindText(kind)));
    }
    return value;
  }

  llvm::Expected<uint64_t> Unsigned(const JsonValue& object, std::string_view key,
                                    const std::string& where) const {
    llvm::Expected<const JsonValue*> value = Member(object, key, JsonValue::Kind::kNumber, where);
    if (!value) return value.takeError();
    std::optional<uint64_t> number = (*value)->AsUnsigned();
    if (!number) return Fail(path_, fmt::format("`{}{}` is not an unsigned integer", where, key));
    return *number;
  }

 private:
  static std::string_view KindText(JsonValue::Kind kind) {
    switch (kind) {
      case JsonValue::Kind::kNumber:
        return "a number";
      case JsonValue::Kind::kString:
        return "a string";
      case JsonValue::Kind::kArray:
        return "an array";
      case JsonValue::Kind::kObject:
        return "an object";
      case JsonValue::Kind::kNull:
      case JsonValue::Kind::kBool:
        break;
    }
    return "of the expected type";
  }

  const std::string& path_;
};

llvm::Expected<ShardedTensor> ParseTensor(const Reader& reader, const JsonValue& value,
                                          const std::string& where, const std::string& path) {
  if (value.kind != JsonValue::Kind::kObject) return Fail(path, fmt::format("`{}` is not an object", where));
  ShardedTensor tensor;
  llvm::Expected<const JsonValue*> dtype =
      reader.Member(value, "dtype", JsonValue::Kind::kString, where + ".");
  if (!dtype) return dtype.takeError();
  tensor.dtype = (*dtype)->text;
  if (DtypeSize(tensor.dtype) == 0) {
    return Fail(path,
                fmt::format("`{}.dtype` is `{}`: not a byte-sized safetensors dtype", where, tensor.dtype));
  }
  llvm::Expected<const JsonValue*> shape =
      reader.Member(value, "shape", JsonValue::Kind::kArray, where + ".");
  if (!shape) return shape.takeError();
  for (const JsonValue& dimension : (*shape)->items) {
    std::optional<uint64_t> size = dimension.AsUnsigned();
    if (!size || *size > static_cast<uint64_t>(INT64_MAX)) {
      return Fail(path, fmt::format("`{}.shape` has a dimension that is not a non-negative integer", where));
    }
    tensor.shape.push_back(static_cast<int64_t>(*size));
  }
  llvm::Expected<const JsonValue*> slices =
      reader.Member(value, "slices", JsonValue::Kind::kArray, where + ".");
  if (!slices) return slices.takeError();
  for (size_t i = 0; i < (*slices)->items.size(); ++i) {
    const JsonValue& slice = (*slices)->items[i];
    std::string slice_where = fmt::format("{}.slices[{}].", where, i);
    llvm::Expected<const JsonValue*> file =
        reader.Member(slice, "file", JsonValue::Kind::kString, slice_where);
    if (!file) return file.takeError();
    if (std::string invalid = InvalidFileName((*file)->text); !invalid.empty()) {
      return Fail(path, fmt::format("`{}file` is `{}`: {}", slice_where, (*file)->text, invalid));
    }
    llvm::Expected<uint64_t> start = reader.Unsigned(slice, "start", slice_where);
    if (!start) return start.takeError();
    llvm::Expected<uint64_t> end = reader.Unsigned(slice, "end", slice_where);
    if (!end) return end.takeError();
    tensor.slices.push_back({(*file)->text, *start, *end});
  }
  return tensor;
}

}  // namespace

std::string_view KindName(ShardedKind kind) {
  switch (kind) {
    case ShardedKind::kModel:
      return "model";
    case ShardedKind::kOptimizer:
      return "optimizer";
  }
  return "model";
}

std::optional<uint64_t> ElementCount(const std::vector<int64_t>& shape) {
  uint64_t count = 1;
  for (int64_t d : shape) {
    if (d < 0) return std::nullopt;
    if (d != 0 && count > UINT64_MAX / static_cast<uint64_t>(d)) return std::nullopt;
    count *= static_cast<uint64_t>(d);
  }
  return count;
}

llvm::Error SortAndCheckTiling(ShardedTensor& tensor, const std::string& what) {
  std::optional<uint64_t> count = ElementCount(tensor.shape);
  if (!count) return Fail(what, fmt::format("shape [{}] has no element count", fmt::join(tensor.shape, ",")));
  std::stable_sort(tensor.slices.begin(), tensor.slices.end(),
                   [](const SlicePlacement& a, const SlicePlacement& b) { return a.start < b.start; });
  // Every element must come from exactly one slice, so the sorted slices must follow one
  // another without a gap (elements nobody saved) or an overlap (two ranks' values, one lost).
  uint64_t covered = 0;
  const SlicePlacement* previous = nullptr;
  for (const SlicePlacement& slice : tensor.slices) {
    if (slice.end <= slice.start) {
      return Fail(what, fmt::format("`{}` holds the empty or reversed range {}..{}", slice.file, slice.start,
                                    slice.end));
    }
    if (slice.start > covered) {
      return Fail(what, fmt::format("elements {}..{} are in no slice (a gap before `{}`'s {}..{})", covered,
                                    slice.start, slice.file, slice.start, slice.end));
    }
    if (slice.start < covered) {
      return Fail(what, fmt::format("elements {}..{} are in two slices: `{}` and `{}`", slice.start,
                                    std::min(covered, slice.end), previous->file, slice.file));
    }
    covered = slice.end;
    previous = &slice;
  }
  if (covered != *count) {
    if (covered > *count) {
      return Fail(what, fmt::format("`{}` holds elements up to {}, but shape [{}] has {}", previous->file,
                                    covered, fmt::join(tensor.shape, ","), *count));
    }
    return Fail(what, fmt::format("elements {}..{} of {} are in no slice", covered, *count, *count));
  }
  return llvm::Error::success();
}

std::string EncodeShardedIndex(const ShardedIndex& index) {
  std::string out = fmt::format("{{\n  \"format\": {},\n", Quoted(kShardedIndexFormat));
  for (ShardedKind kind : kShardedKinds) {
    out += fmt::format("  {}: {{", Quoted(KindName(kind)));
    bool first = true;
    for (const auto& [name, tensor] : index.tensors(kind)) {
      out += first ? "\n" : ",\n";
      first = false;
      out += fmt::format("    {}: {{\n      \"dtype\": {},\n      \"shape\": [{}],\n      \"slices\": [",
                         Quoted(name), Quoted(tensor.dtype), fmt::join(tensor.shape, ", "));
      for (size_t i = 0; i < tensor.slices.size(); ++i) {
        const SlicePlacement& slice = tensor.slices[i];
        out += fmt::format("{}\n        {{\"end\": {}, \"file\": {}, \"start\": {}}}", i == 0 ? "" : ",",
                           slice.end, Quoted(slice.file), slice.start);
      }
      out += tensor.slices.empty() ? "]\n    }" : "\n      ]\n    }";
    }
    out += first ? "},\n" : "\n  },\n";
  }
  out +=
      fmt::format("  \"version\": {},\n  \"world_size\": {}\n}}\n", kShardedIndexVersion, index.world_size);
  return out;
}

// The JSON object of an index or a rank record, once its `format` is `expected` and its
// `version` one this build reads.
llvm::Expected<JsonValue> ParseVersionedObject(std::string_view text, const std::string& path,
                                               std::string_view expected) {
  llvm::Expected<JsonValue> root = ParseJson(text);
  if (!root) return Fail(path, "not JSON: " + llvm::toString(root.takeError()));
  if (root->kind != JsonValue::Kind::kObject) return Fail(path, "not a JSON object");
  Reader reader(path);
  llvm::Expected<const JsonValue*> format = reader.Member(*root, "format", JsonValue::Kind::kString, "");
  if (!format) return format.takeError();
  if ((*format)->text != expected) {
    return Fail(path, fmt::format("`format` is `{}`, expected `{}`", (*format)->text, expected));
  }
  llvm::Expected<uint64_t> version = reader.Unsigned(*root, "version", "");
  if (!version) return version.takeError();
  if (*version != kShardedIndexVersion) {
    return Fail(path,
                fmt::format("version {} is not one this build reads (it reads {}); use a newer accelrun",
                            *version, kShardedIndexVersion));
  }
  return root;
}

llvm::Expected<ShardedIndex> ParseShardedIndex(std::string_view text, const std::string& path) {
  llvm::Expected<JsonValue> root = ParseVersionedObject(text, path, kShardedIndexFormat);
  if (!root) return root.takeError();
  Reader reader(path);
  llvm::Expected<uint64_t> world = reader.Unsigned(*root, "world_size", "");
  if (!world) return world.takeError();
  if (*world == 0 || *world > UINT32_MAX)
    return Fail(path, fmt::format("`world_size` {} is out of range", *world));
  ShardedIndex index;
  index.world_size = static_cast<uint32_t>(*world);
  for (ShardedKind kind : kShardedKinds) {
    std::string section(KindName(kind));
    llvm::Expected<const JsonValue*> tensors = reader.Member(*root, section, JsonValue::Kind::kObject, "");
    if (!tensors) return tensors.takeError();
    for (const auto& [name, value] : (*tensors)->members) {
      llvm::Expected<ShardedTensor> tensor =
          ParseTensor(reader, value, fmt::format("{}.{}", section, name), path);
      if (!tensor) return tensor.takeError();
      if (llvm::Error error =
              SortAndCheckTiling(*tensor, fmt::format("{}: {} tensor `{}`", path, section, name))) {
        return error;
      }
      index.tensors(kind).emplace(name, std::move(*tensor));
    }
  }
  return index;
}

std::string EncodeRankRecord(const RankRecord& record) {
  std::string out = fmt::format("{{\n  \"chunk_size\": {},\n  \"files\": {{", record.chunk_size);
  std::vector<const ManifestEntry*> files;
  for (const ManifestEntry& file : record.files) files.push_back(&file);
  std::sort(files.begin(), files.end(),
            [](const ManifestEntry* a, const ManifestEntry* b) { return a->name < b->name; });
  for (size_t i = 0; i < files.size(); ++i) {
    std::vector<std::string> digests;
    for (const std::string& digest : files[i]->sha256) digests.push_back(Quoted(digest));
    out += fmt::format("{}\n    {}: {{\"sha256\": [{}], \"size\": {}}}", i == 0 ? "" : ",",
                       Quoted(files[i]->name), fmt::join(digests, ", "), files[i]->size);
  }
  out += fmt::format("{}}},\n  \"format\": {},\n", files.empty() ? "" : "\n  ", Quoted(kRankRecordFormat));
  for (ShardedKind kind : kShardedKinds) {
    out += fmt::format("  {}: {{", Quoted(KindName(kind)));
    bool first = true;
    for (const auto& [name, slice] : record.slices(kind)) {
      out += fmt::format("{}\n    {}: {{\"dtype\": {}, \"end\": {}, \"shape\": [{}], \"start\": {}}}",
                         first ? "" : ",", Quoted(name), Quoted(slice.dtype), slice.end,
                         fmt::join(slice.shape, ", "), slice.start);
      first = false;
    }
    out += first ? "},\n" : "\n  },\n";
  }
  out += fmt::format("  \"rank\": {},\n  \"version\": {},\n  \"world_size\": {}\n}}\n", record.rank,
                     kShardedIndexVersion, record.world_size);
  return out;
}

llvm::Expected<RankRecord> ParseRankRecord(std::string_view text, const std::string& path) {
  llvm::Expected<JsonValue> root = ParseVersionedObject(text, path, kRankRecordFormat);
  if (!root) return root.takeError();
  Reader reader(path);
  RankRecord record;
  llvm::Expected<uint64_t> rank = reader.Unsigned(*root, "rank", "");
  if (!rank) return rank.takeError();
  llvm::Expected<uint64_t> world = reader.Unsigned(*root, "world_size", "");
  if (!world) return world.takeError();
  llvm::Expected<uint64_t> chunk_size = reader.Unsigned(*root, "chunk_size", "");
  if (!chunk_size) return chunk_size.takeError();
  if (*world == 0 || *world > UINT32_MAX || *rank >= *world || *chunk_size == 0) {
    return Fail(path, fmt::format("rank {} of world size {} with chunk_size {} is out of range", *rank,
                                  *world, *chunk_size));
  }
  record.rank = static_cast<uint32_t>(*rank);
  record.world_size = static_cast<uint32_t>(*world);
  record.chunk_size = *chunk_size;
  llvm::Expected<const JsonValue*> files = reader.Member(*root, "files", JsonValue::Kind::kObject, "");
  if (!files) return files.takeError();
  for (const auto& [name, value] : (*files)->members) {
    std::string where = fmt::format("files.{}.", name);
    ManifestEntry entry;
    entry.name = name;
    llvm::Expected<uint64_t> size = reader.Unsigned(value, "size", where);
    if (!size) return size.takeError();
    entry.size = *size;
    llvm::Expected<const JsonValue*> digests = reader.Member(value, "sha256", JsonValue::Kind::kArray, where);
    if (!digests) return digests.takeError();
    for (const JsonValue& digest : (*digests)->items) {
      if (digest.kind != JsonValue::Kind::kString || digest.text.size() != 64) {
        return Fail(path, fmt::format("`{}sha256` holds something other than 64-digit digests", where));
      }
      entry.sha256.push_back(digest.text);
    }
    if (entry.sha256.size() != ChunkCount(entry.size, record.chunk_size)) {
      return Fail(path,
                  fmt::format("`{}sha256` has {} digests, a file of {} bytes has {}", where,
                              entry.sha256.size(), entry.size, ChunkCount(entry.size, record.chunk_size)));
    }
    record.files.push_back(std::move(entry));
  }
  for (ShardedKind kind : kShardedKinds) {
    std::string section(KindName(kind));
    llvm::Expected<const JsonValue*> slices = reader.Member(*root, section, JsonValue::Kind::kObject, "");
    if (!slices) return slices.takeError();
    for (const auto& [name, value] : (*slices)->members) {
      std::string where = fmt::format("{}.{}.", section, name);
      RankRecord::Slice slice;
      llvm::Expected<const JsonValue*> dtype = reader.Member(value, "dtype", JsonValue::Kind::kString, where);
      if (!dtype) return dtype.takeError();
      slice.dtype = (*dtype)->text;
      if (DtypeSize(slice.dtype) == 0) {
        return Fail(path,
                    fmt::format("`{}dtype` is `{}`: not a byte-sized safetensors dtype", where, slice.dtype));
      }
      llvm::Expected<const JsonValue*> shape = reader.Member(value, "shape", JsonValue::Kind::kArray, where);
      if (!shape) return shape.takeError();
      for (const JsonValue& dimension : (*shape)->items) {
        std::optional<uint64_t> size = dimension.AsUnsigned();
        if (!size || *size > static_cast<uint64_t>(INT64_MAX)) {
          return Fail(path,
                      fmt::format("`{}shape` has a dimension that is not a non-negative integer", where));
        }
        slice.shape.push_back(static_cast<int64_t>(*size));
      }
      llvm::Expected<uint64_t> start = reader.Unsigned(value, "start", where);
      if (!start) return start.takeError();
      llvm::Expected<uint64_t> end = reader.Unsigned(value, "end", where);
      if (!end) return end.takeError();
      slice.start = *start;
      slice.end = *end;
      record.slices(kind).emplace(name, std::move(slice));
    }
  }
  return record;
}

}  // namespace accel::rt::checkpoint
