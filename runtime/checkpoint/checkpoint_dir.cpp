#include "runtime/checkpoint/checkpoint_dir.h"

#include <sys/stat.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <optional>
#include <set>

#include <fmt/format.h>

#include "runtime/checkpoint/atomic_file.h"
#include "runtime/checkpoint/manifest.h"
#include "runtime/checkpoint/parallel.h"
#include "runtime/checkpoint/sha256.h"
#include "runtime/support/error.h"
#include "runtime/support/progress.h"

namespace accel::rt::checkpoint {
namespace {

namespace fs = std::filesystem;

}  // namespace

llvm::Error WriteCheckpointDirectory(const std::string& directory, const std::vector<CheckpointFile>& files,
                                     uint64_t iteration) {
  std::set<std::string_view> names;
  for (const CheckpointFile& file : files) {
    std::string invalid = InvalidFileName(file.name);
    if (!invalid.empty()) return Fail(directory, fmt::format("cannot write `{}`: {}", file.name, invalid));
    if (!names.insert(file.name).second) return Fail(directory, fmt::format("`{}` given twice", file.name));
  }
  if (::mkdir(directory.c_str(), 0755) != 0) {
    return Fail(directory, std::string("cannot create directory: ") + std::strerror(errno));
  }
  Manifest manifest;
  manifest.iteration = iteration;
  manifest.files.resize(files.size());
  std::vector<std::optional<std::string>> errors(files.size());
  ParallelFor(files.size(), [&](size_t i) {
    ChunkedSha256 hasher(manifest.chunk_size);
    std::string path = (fs::path(directory) / files[i].name).string();
    if (llvm::Error error = WriteAndSync(path, files[i].parts, &hasher)) {
      errors[i] = llvm::toString(std::move(error));
      return;
    }
    manifest.files[i] = {files[i].name, files[i].size(), hasher.HexDigests()};
  });
  for (const std::optional<std::string>& error : errors) {
    if (error) return Fail(directory, *error);
  }
  // The manifest goes last: its presence says every file before it is complete and on disk.
  std::string text = EncodeManifest(manifest);
  if (llvm::Error error = WriteAndSync((fs::path(directory) / std::string(kManifestName)).string(), {text})) {
    return error;
  }
  return SyncDirectory(directory);
}

llvm::Expected<Manifest> ReadManifest(const std::string& directory) {
  std::string path = (fs::path(directory) / std::string(kManifestName)).string();
  std::error_code ec;
  fs::file_status status = fs::status(path, ec);
  if (!fs::exists(status)) {
    return Fail(directory, fmt::format("no {}: the checkpoint was never finished", kManifestName));
  }
  if (!fs::is_regular_file(status)) return Fail(path, "not a regular file, so not a manifest Accel wrote");
  uintmax_t size = fs::file_size(path, ec);
  if (ec) return Fail(path, ec.message());
  if (size > kMaxManifestBytes) {
    return Fail(path, fmt::format("{} bytes, over the {} MiB a manifest can take; it was not written by "
                                  "Accel, or was edited",
                                  size, kMaxManifestBytes >> 20));
  }
  llvm::Expected<std::shared_ptr<const FileBytes>> bytes = FileBytes::Map(path);
  if (!bytes) return bytes.takeError();
  return ParseManifest((*bytes)->view(), path);
}

llvm::Expected<VerifiedCheckpoint> VerifyCheckpointDirectory(const std::string& directory,
                                                             const std::vector<std::string>& taken) {
  std::error_code ec;
  if (!fs::is_directory(directory, ec)) return Fail(directory, "not a checkpoint directory");
  llvm::Expected<Manifest> manifest = ReadManifest(directory);
  if (!manifest) return manifest.takeError();

  VerifiedCheckpoint checkpoint;
  checkpoint.path = directory;
  checkpoint.iteration = manifest->iteration;
  // Open every file and check its size; the hashing threads load it piece by piece: a taken
  // file into this process's memory, where the caller then builds its tensors, any other
  // through the page cache.
  std::vector<std::shared_ptr<const FileBytes>> mapped(manifest->files.size());
  std::vector<std::shared_ptr<FileBytes>> reading(manifest->files.size());  // the taken files
  for (size_t i = 0; i < manifest->files.size(); ++i) {
    const ManifestEntry& entry = manifest->files[i];
    std::string path = (fs::path(directory) / entry.name).string();
    const bool take = std::find(taken.begin(), taken.end(), entry.name) != taken.end();
    llvm::Expected<std::shared_ptr<const FileBytes>> bytes =
        [&]() -> llvm::Expected<std::shared_ptr<const FileBytes>> {
      if (!take) return FileBytes::Map(path);
      llvm::Expected<std::shared_ptr<FileBytes>> read = FileBytes::OpenForReading(path);
      if (!read) return read.takeError();
      reading[i] = *read;
      return std::shared_ptr<const FileBytes>(std::move(*read));
    }();
    if (!bytes) {
      return Fail(directory, fmt::format("`{}` is missing or unreadable: {}", entry.name,
                                         llvm::toString(bytes.takeError())));
    }
    if ((*bytes)->view().size() != entry.size) {
      return Fail(directory, fmt::format("`{}` has {} bytes, the manifest says {}", entry.name,
                                         (*bytes)->view().size(), entry.size));
    }
    mapped[i] = std::move(*bytes);
  }
  // Every piece of every file is one task, so a single large file verifies on every core; two
  // threads per core, so one loads its piece from the disk while the other hashes.
  struct Piece {
    size_t file;
    size_t index;
    uint64_t offset;
    uint64_t size;
  };
  std::vector<Piece> pieces;
  for (size_t i = 0; i < manifest->files.size(); ++i) {
    uint64_t size = manifest->files[i].size;
    uint64_t chunk = manifest->chunk_size == 0 ? std::max<uint64_t>(size, 1) : manifest->chunk_size;
    for (size_t j = 0; j < manifest->files[i].sha256.size(); ++j) {
      uint64_t offset = j * chunk;
      pieces.push_back({i, j, offset, std::min(chunk, size - offset)});
    }
  }
  std::vector<std::optional<std::string>> errors(pieces.size());
  std::atomic<bool> failed{false};
  ParallelFor(
      pieces.size(),
      [&](size_t k) {
        if (failed) return;  // the checkpoint is rejected already
        // Verifying a large checkpoint takes longer than the collective timeout: say so.
        progress::StillWorking();
        const Piece& piece = pieces[k];
        const ManifestEntry& entry = manifest->files[piece.file];
        if (reading[piece.file] == nullptr) {
          mapped[piece.file]->Populate(piece.offset, piece.size);
        } else if (llvm::Error error = reading[piece.file]->ReadRange(piece.offset, piece.size)) {
          failed = true;
          errors[k] = fmt::format("`{}` cannot be read: {}", entry.name, llvm::toString(std::move(error)));
          return;
        }
        std::string digest = Sha256Hex(mapped[piece.file]->view().substr(piece.offset, piece.size));
        if (digest == entry.sha256[piece.index]) return;
        failed = true;
        errors[k] =
            entry.sha256.size() == 1
                ? fmt::format("`{}` has sha256 {}, the manifest says {}", entry.name, digest,
                              entry.sha256[piece.index])
                : fmt::format("`{}` has sha256 {} in bytes {}..{} (piece {} of {}), the manifest says {}",
                              entry.name, digest, piece.offset, piece.offset + piece.size, piece.index + 1,
                              entry.sha256.size(), entry.sha256[piece.index]);
      },
      /*max_threads=*/16, /*threads_per_core=*/2);
  for (const std::optional<std::string>& error : errors) {
    if (error) return Fail(directory, *error);
  }
  for (size_t i = 0; i < manifest->files.size(); ++i) {
    if (reading[i] != nullptr) reading[i]->CloseFile();
    checkpoint.files.emplace(manifest->files[i].name, std::move(mapped[i]));
  }
  for (const fs::directory_entry& entry : fs::directory_iterator(directory, ec)) {
    std::string name = entry.path().filename().string();
    if (name != kManifestName && checkpoint.files.count(name) == 0) {
      checkpoint.warnings.push_back(fmt::format(
          "{}: `{}` is not in the manifest; it was not verified and is not loaded", directory, name));
    }
  }
  return checkpoint;
}

llvm::Expected<SafetensorsFile> VerifiedCheckpoint::Safetensors(const std::string& name) const {
  auto it = files.find(name);
  if (it == files.end()) return Fail(path, fmt::format("the checkpoint has no `{}`", name));
  return SafetensorsFile::FromBytes(it->second, (fs::path(path) / name).string());
}

}  // namespace accel::rt::checkpoint
