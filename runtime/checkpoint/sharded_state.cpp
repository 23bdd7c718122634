#include "runtime/checkpoint/sharded_state.h"

#include <algorithm>
#include <filesystem>
#include <iterator>
#include <map>
#include <optional>
#include <set>
#include <utility>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "runtime/checkpoint/atomic_file.h"
#include "runtime/checkpoint/file_bytes.h"
#include "runtime/checkpoint/manifest.h"
#include "runtime/checkpoint/parallel.h"
#include "runtime/checkpoint/safetensors.h"
#include "runtime/checkpoint/sha256.h"
#include "runtime/support/error.h"

namespace accel::rt::checkpoint {
namespace {

namespace fs = std::filesystem;

std::string Join(const std::string& directory, std::string_view name) {
  return (fs::path(directory) / std::string(name)).string();
}

// Why `slice` cannot be written, or empty: the checks rank 0 could no longer tell apart from
// bit rot once the bytes are on disk.
std::string InvalidSlice(const TensorSlice& slice) {
  size_t element = DtypeSize(slice.dtype);
  if (element == 0) return fmt::format("dtype `{}` is unknown or not byte-sized", slice.dtype);
  std::optional<uint64_t> count = ElementCount(slice.shape);
  if (!count) return "the shape has a negative dimension or its size overflows 64 bits";
  if (slice.start > slice.end || slice.end > *count) {
    return fmt::format("range {}..{} is not inside the tensor's {} elements", slice.start, slice.end, *count);
  }
  if (slice.bytes.size() != (slice.end - slice.start) * element) {
    return fmt::format("{} bytes for {} elements of {} ({} bytes each)", slice.bytes.size(),
                       slice.end - slice.start, slice.dtype, element);
  }
  return "";
}

// The digests of a file already on disk (rank 0's view of the small files it did not stream).
llvm::Expected<ManifestEntry> HashFile(const std::string& directory, const std::string& name) {
  llvm::Expected<std::shared_ptr<const FileBytes>> bytes = FileBytes::Map(Join(directory, name));
  if (!bytes) return bytes.takeError();
  ChunkedSha256 hasher(kManifestChunkSize);
  hasher.Update((*bytes)->view());
  return ManifestEntry{name, (*bytes)->view().size(), hasher.HexDigests()};
}

}  // namespace

std::string RankShardFileName(ShardedKind kind, uint32_t rank, uint32_t world) {
  return fmt::format("{}_shard-{:05d}-of-{:05d}.safetensors", KindName(kind), rank + 1, world);
}

std::string RankRecordName(uint32_t rank, uint32_t world) {
  return fmt::format("sharded_state.rank-{:05d}-of-{:05d}.json", rank + 1, world);
}

llvm::Error WriteRankSlices(const std::string& directory, uint32_t rank, uint32_t world,
                            const RankSlices& slices) {
  std::string who = fmt::format("{}: rank {} of {}", directory, rank, world);
  if (world == 0 || rank >= world) return Fail(who, "the rank must be below the world size");
  RankRecord record;
  record.rank = rank;
  record.world_size = world;
  std::vector<CheckpointFile> files;
  std::vector<EncodedSafetensors> encoded;
  encoded.reserve(std::size(kShardedKinds));
  for (ShardedKind kind : kShardedKinds) {
    std::vector<TensorRef> tensors;
    for (const TensorSlice& slice : slices.of(kind)) {
      std::string what = fmt::format("{} {} tensor `{}`", who, KindName(kind), slice.name);
      if (std::string invalid = InvalidSlice(slice); !invalid.empty()) return Fail(what, invalid);
      if (!record.slices(kind)
               .emplace(slice.name, RankRecord::Slice{slice.dtype, slice.shape, slice.start, slice.end})
               .second) {
        return Fail(what, "given twice");
      }
      // An empty slice holds nothing to store; the record still carries its shape and dtype.
      if (slice.end == slice.start) continue;
      tensors.push_back(
          {slice.name, slice.dtype, {static_cast<int64_t>(slice.end - slice.start)}, slice.bytes});
    }
    llvm::Expected<EncodedSafetensors> file = EncodeSafetensors(
        tensors, {{"format", "pt"}, {"rank", std::to_string(rank)}, {"world_size", std::to_string(world)}});
    if (!file) return Fail(who, llvm::toString(file.takeError()));
    encoded.push_back(std::move(*file));
    files.push_back({RankShardFileName(kind, rank, world), encoded.back().Parts()});
  }
  std::error_code ec;
  fs::create_directories(directory, ec);
  if (ec) return Fail(directory, "cannot create directory: " + ec.message());
  record.files.resize(files.size());
  std::vector<std::optional<std::string>> errors(files.size());
  ParallelFor(files.size(), [&](size_t i) {
    ChunkedSha256 hasher(record.chunk_size);
    if (llvm::Error error = WriteAndSync(Join(directory, files[i].name), files[i].parts, &hasher)) {
      errors[i] = llvm::toString(std::move(error));
      return;
    }
    record.files[i] = {files[i].name, files[i].size(), hasher.HexDigests()};
  });
  for (const std::optional<std::string>& error : errors) {
    if (error) return Fail(who, *error);
  }
  // The record goes last: rank 0 takes its presence as this rank's files being complete.
  return WriteAndSync(Join(directory, RankRecordName(rank, world)), {EncodeRankRecord(record)});
}

llvm::Error FinishShardedDirectory(const std::string& directory, uint32_t world,
                                   const std::vector<CheckpointFile>& files, uint64_t iteration) {
  if (world == 0) return Fail(directory, "the world size must be at least 1");
  // The sharded files this save consists of; anything else in the directory is stale.
  std::set<std::string> sharded;
  Manifest manifest;
  manifest.iteration = iteration;
  ShardedIndex index;
  index.world_size = world;
  // Who declared each tensor first, to name both ranks when two disagree about it.
  std::map<std::pair<ShardedKind, std::string>, uint32_t> first_rank;
  for (uint32_t rank = 0; rank < world; ++rank) {
    std::string name = RankRecordName(rank, world);
    std::string path = Join(directory, name);
    llvm::Expected<std::shared_ptr<const FileBytes>> bytes = FileBytes::Map(path);
    if (!bytes) {
      llvm::consumeError(bytes.takeError());
      return Fail(directory,
                  fmt::format("rank {} of {} left no `{}`: it did not finish WriteRankSlices before "
                              "the barrier, so the checkpoint cannot be finished",
                              rank, world, name));
    }
    llvm::Expected<RankRecord> record = ParseRankRecord((*bytes)->view(), path);
    if (!record) return record.takeError();
    if (record->rank != rank || record->world_size != world || record->chunk_size != manifest.chunk_size) {
      return Fail(path,
                  fmt::format("records rank {} of {} in pieces of {} bytes, expected rank {} of {} in {}",
                              record->rank, record->world_size, record->chunk_size, rank, world,
                              manifest.chunk_size));
    }
    for (ShardedKind kind : kShardedKinds) {
      std::string file = RankShardFileName(kind, rank, world);
      auto entry = std::find_if(record->files.begin(), record->files.end(),
                                [&](const ManifestEntry& e) { return e.name == file; });
      if (entry == record->files.end() || record->files.size() != std::size(kShardedKinds)) {
        return Fail(path,
                    fmt::format("does not record exactly the rank's two files (`{}` among them)", file));
      }
      std::error_code ec;
      uint64_t size = fs::file_size(Join(directory, file), ec);
      if (ec || size != entry->size) {
        return Fail(directory, fmt::format("`{}` is missing or not the {} bytes rank {} recorded", file,
                                           entry->size, rank));
      }
      for (const auto& [tensor_name, slice] : record->slices(kind)) {
        auto [it, fresh] =
            index.tensors(kind).try_emplace(tensor_name, ShardedTensor{slice.dtype, slice.shape, {}});
        uint32_t owner = first_rank.try_emplace(std::make_pair(kind, tensor_name), rank).first->second;
        if (!fresh && (it->second.dtype != slice.dtype || it->second.shape != slice.shape)) {
          return Fail(directory, fmt::format("{} tensor `{}` is {} [{}] on rank {} but {} [{}] on rank {}",
                                             KindName(kind), tensor_name, it->second.dtype,
                                             fmt::join(it->second.shape, ","), owner, slice.dtype,
                                             fmt::join(slice.shape, ","), rank));
        }
        if (slice.end > slice.start) it->second.slices.push_back({file, slice.start, slice.end});
      }
    }
    for (ManifestEntry& entry : record->files) {
      sharded.insert(entry.name);
      manifest.files.push_back(std::move(entry));
    }
    sharded.insert(name);
    llvm::Expected<ManifestEntry> record_entry = HashFile(directory, name);
    if (!record_entry) return record_entry.takeError();
    manifest.files.push_back(std::move(*record_entry));
  }
  for (ShardedKind kind : kShardedKinds) {
    for (auto& [name, tensor] : index.tensors(kind)) {
      std::string what = fmt::format("{}: {} tensor `{}`", directory, KindName(kind), name);
      if (llvm::Error error = SortAndCheckTiling(tensor, what)) return error;
    }
  }
  std::set<std::string> names;
  for (const CheckpointFile& file : files) {
    std::string invalid = InvalidFileName(file.name);
    if (invalid.empty() && (sharded.count(file.name) != 0 || file.name == kShardedIndexName)) {
      invalid = "the sharded state uses that name";
    }
    if (!invalid.empty()) return Fail(directory, fmt::format("cannot write `{}`: {}", file.name, invalid));
    if (!names.insert(file.name).second) return Fail(directory, fmt::format("`{}` given twice", file.name));
  }
  // An earlier attempt that crashed may have left a manifest, an index or another world size's
  // files here: none of them belongs to this checkpoint.
  std::error_code ec;
  for (const fs::directory_entry& entry : fs::directory_iterator(directory, ec)) {
    if (sharded.count(entry.path().filename().string()) != 0) continue;
    std::error_code remove_ec;
    fs::remove_all(entry.path(), remove_ec);
    if (remove_ec)
      return Fail(entry.path().string(), "cannot remove what a crashed save left: " + remove_ec.message());
  }
  if (ec) return Fail(directory, "cannot list: " + ec.message());
  std::string index_text = EncodeShardedIndex(index);
  std::vector<CheckpointFile> written = files;
  written.push_back({std::string(kShardedIndexName), {index_text}});
  size_t first_written = manifest.files.size();
  manifest.files.resize(first_written + written.size());
  std::vector<std::optional<std::string>> errors(written.size());
  ParallelFor(written.size(), [&](size_t i) {
    ChunkedSha256 hasher(manifest.chunk_size);
    if (llvm::Error error = WriteAndSync(Join(directory, written[i].name), written[i].parts, &hasher)) {
      errors[i] = llvm::toString(std::move(error));
      return;
    }
    manifest.files[first_written + i] = {written[i].name, written[i].size(), hasher.HexDigests()};
  });
  for (const std::optional<std::string>& error : errors) {
    if (error) return Fail(directory, *error);
  }
  // The manifest goes last: its presence says every rank's files and rank 0's are on disk.
  if (llvm::Error error = WriteAndSync(Join(directory, kManifestName), {EncodeManifest(manifest)}))
    return error;
  return SyncDirectory(directory);
}

}  // namespace accel::rt::checkpoint
