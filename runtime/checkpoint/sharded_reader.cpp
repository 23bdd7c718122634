#include "runtime/checkpoint/sharded_reader.h"

#include <algorithm>
#include <cstring>

#include <fmt/format.h>

#include "runtime/support/error.h"
#include "runtime/support/progress.h"

namespace accel::rt::checkpoint {

bool IsShardedCheckpoint(const VerifiedCheckpoint& checkpoint) {
  return checkpoint.files.count(std::string(kShardedIndexName)) != 0;
}

llvm::Expected<ShardedStateReader> ShardedStateReader::Open(const VerifiedCheckpoint& checkpoint) {
  auto index_file = checkpoint.files.find(std::string(kShardedIndexName));
  if (index_file == checkpoint.files.end()) {
    return Fail(checkpoint.path,
                fmt::format("not a sharded checkpoint: its manifest names no `{}`", kShardedIndexName));
  }
  ShardedStateReader reader;
  reader.path_ = checkpoint.path;
  llvm::Expected<ShardedIndex> index =
      ParseShardedIndex(index_file->second->view(), checkpoint.path + "/" + std::string(kShardedIndexName));
  if (!index) return index.takeError();
  reader.index_ = std::move(*index);
  for (ShardedKind kind : kShardedKinds) {
    for (const auto& [name, tensor] : reader.index_.tensors(kind)) {
      size_t element = DtypeSize(tensor.dtype);
      for (const SlicePlacement& slice : tensor.slices) {
        auto file = reader.files_.find(slice.file);
        if (file == reader.files_.end()) {
          // Only files the manifest vouched for: a name the index adds on its own is refused.
          if (checkpoint.files.count(slice.file) == 0) {
            return Fail(checkpoint.path,
                        fmt::format("the index puts {} tensor `{}` in `{}`, which the manifest "
                                    "does not name: a shard file is missing",
                                    KindName(kind), name, slice.file));
          }
          llvm::Expected<SafetensorsFile> read = checkpoint.Safetensors(slice.file);
          if (!read) return read.takeError();
          file = reader.files_.emplace(slice.file, std::move(*read)).first;
        }
        auto info = file->second.tensors().find(name);
        uint64_t count = slice.end - slice.start;
        if (info == file->second.tensors().end() || info->second.dtype != tensor.dtype ||
            info->second.shape != std::vector<int64_t>{static_cast<int64_t>(count)} ||
            info->second.end - info->second.begin != count * element) {
          return Fail(checkpoint.path, fmt::format("`{}` does not hold {} tensor `{}` as the index says ({} "
                                                   "elements {}..{} of {})",
                                                   slice.file, KindName(kind), name, count, slice.start,
                                                   slice.end, tensor.dtype));
        }
      }
    }
  }
  return reader;
}

llvm::Expected<std::vector<std::string_view>> ShardedStateReader::Views(ShardedKind kind,
                                                                        const std::string& name,
                                                                        uint64_t start, uint64_t end) const {
  const std::map<std::string, ShardedTensor>& all = tensors(kind);
  auto it = all.find(name);
  if (it == all.end()) {
    return Fail(path_, fmt::format("the sharded checkpoint has no {} tensor `{}`", KindName(kind), name));
  }
  const ShardedTensor& tensor = it->second;
  uint64_t count = ElementCount(tensor.shape).value_or(0);
  if (start > end || end > count) {
    return Fail(path_, fmt::format("{} tensor `{}` has {} elements; range {}..{} is not inside it",
                                   KindName(kind), name, count, start, end));
  }
  size_t element = DtypeSize(tensor.dtype);
  std::vector<std::string_view> views;
  // The slices are sorted and tile the tensor: the first that ends after `start` is where the
  // range begins, and each following one continues it.
  auto slice = std::upper_bound(tensor.slices.begin(), tensor.slices.end(), start,
                                [](uint64_t value, const SlicePlacement& s) { return value < s.end; });
  for (; slice != tensor.slices.end() && slice->start < end; ++slice) {
    uint64_t from = std::max(start, slice->start);
    uint64_t to = std::min(end, slice->end);
    std::string_view bytes = files_.at(slice->file).Bytes(name);
    views.push_back(bytes.substr((from - slice->start) * element, (to - from) * element));
  }
  return views;
}

llvm::Error ShardedStateReader::CopyRange(ShardedKind kind, const std::string& name, uint64_t start,
                                          uint64_t end, llvm::MutableArrayRef<char> out) const {
  llvm::Expected<std::vector<std::string_view>> views = Views(kind, name, start, end);
  if (!views) return views.takeError();
  uint64_t total = 0;
  for (std::string_view view : *views) total += view.size();
  if (total != out.size()) {
    return Fail(path_, fmt::format("{} tensor `{}` elements {}..{} are {} bytes, the destination has {}",
                                   KindName(kind), name, start, end, total, out.size()));
  }
  char* to = out.data();
  // The views are mapped files: the copy is what reads them from disk, a piece at a time so
  // that restoring a large tensor says that the rank is at work.
  constexpr size_t kPiece = size_t{64} << 20;
  for (std::string_view view : *views) {
    for (size_t offset = 0; offset < view.size(); offset += kPiece) {
      progress::StillWorking();
      const size_t size = std::min(kPiece, view.size() - offset);
      std::memcpy(to + offset, view.data() + offset, size);
    }
    to += view.size();
  }
  return llvm::Error::success();
}

llvm::Expected<std::string> ShardedStateReader::ReadRange(ShardedKind kind, const std::string& name,
                                                          uint64_t start, uint64_t end) const {
  llvm::Expected<std::vector<std::string_view>> views = Views(kind, name, start, end);
  if (!views) return views.takeError();
  std::string out;
  for (std::string_view view : *views) out.append(view);
  return out;
}

}  // namespace accel::rt::checkpoint
