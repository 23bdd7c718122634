#include "runtime/checkpoint/checkpoint_dir.h"

#include <sys/stat.h>

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
    Sha256 hasher;
    std::string path = (fs::path(directory) / files[i].name).string();
    if (llvm::Error error = WriteAndSync(path, files[i].parts, &hasher)) {
      errors[i] = llvm::toString(std::move(error));
      return;
    }
    manifest.files[i] = {files[i].name, files[i].size(), hasher.HexDigest()};
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

llvm::Expected<VerifiedCheckpoint> VerifyCheckpointDirectory(const std::string& directory) {
  std::error_code ec;
  if (!fs::is_directory(directory, ec)) return Fail(directory, "not a checkpoint directory");
  std::string manifest_path = (fs::path(directory) / std::string(kManifestName)).string();
  if (!fs::exists(manifest_path, ec)) {
    return Fail(directory, fmt::format("no {}: the checkpoint was never finished", kManifestName));
  }
  llvm::Expected<std::shared_ptr<const FileBytes>> manifest_bytes = FileBytes::Map(manifest_path);
  if (!manifest_bytes) return manifest_bytes.takeError();
  llvm::Expected<Manifest> manifest = ParseManifest((*manifest_bytes)->view(), manifest_path);
  if (!manifest) return manifest.takeError();

  VerifiedCheckpoint checkpoint;
  checkpoint.path = directory;
  checkpoint.iteration = manifest->iteration;
  std::vector<std::shared_ptr<const FileBytes>> mapped(manifest->files.size());
  std::vector<std::optional<std::string>> errors(manifest->files.size());
  ParallelFor(manifest->files.size(), [&](size_t i) {
    const ManifestEntry& entry = manifest->files[i];
    std::string path = (fs::path(directory) / entry.name).string();
    // Hashing reads every byte: map it all at once.
    llvm::Expected<std::shared_ptr<const FileBytes>> bytes = FileBytes::Map(path, FileBytes::Access::kWhole);
    if (!bytes) {
      errors[i] =
          fmt::format("`{}` is missing or unreadable: {}", entry.name, llvm::toString(bytes.takeError()));
      return;
    }
    std::string_view view = (*bytes)->view();
    if (view.size() != entry.size) {
      errors[i] = fmt::format("`{}` has {} bytes, the manifest says {}", entry.name, view.size(), entry.size);
      return;
    }
    std::string digest = Sha256Hex(view);
    if (digest != entry.sha256) {
      errors[i] = fmt::format("`{}` has sha256 {}, the manifest says {}", entry.name, digest, entry.sha256);
      return;
    }
    mapped[i] = std::move(*bytes);
  });
  for (size_t i = 0; i < errors.size(); ++i) {
    if (errors[i]) return Fail(directory, *errors[i]);
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
