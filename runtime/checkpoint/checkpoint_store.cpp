#include "runtime/checkpoint/checkpoint_store.h"

#include <algorithm>
#include <charconv>
#include <filesystem>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "runtime/checkpoint/atomic_file.h"
#include "runtime/checkpoint/manifest.h"
#include "runtime/checkpoint/sharded_state.h"
#include "runtime/support/error.h"

namespace accel::rt::checkpoint {
namespace {

namespace fs = std::filesystem;

// Unfinished checkpoints and checkpoints being deleted carry this suffix; no complete
// checkpoint ever does, so anything with it can be removed by the next save.
constexpr std::string_view kTemporarySuffix = ".tmp";

std::string Parent(const std::string& path) {
  fs::path parent = fs::path(path).parent_path();
  return parent.empty() ? "." : parent.string();
}

// Whether `directory` has a manifest that parses; its files are not hashed (rotation and the
// "newer checkpoint" check need to know what is complete, not to re-read every byte).
bool HasValidManifest(const std::string& directory) {
  llvm::Expected<Manifest> manifest = ReadManifest(directory);
  if (!manifest) {
    llvm::consumeError(manifest.takeError());
    return false;
  }
  return true;
}

// Creates `directory` and makes its entry durable in its parent.
llvm::Error EnsureDirectory(const std::string& directory) {
  std::error_code ec;
  if (fs::is_directory(directory, ec)) return llvm::Error::success();
  fs::create_directories(directory, ec);
  if (ec) return Fail(directory, "cannot create directory: " + ec.message());
  return SyncDirectory(Parent(directory));
}

// Removes what crashed saves and deletions left: every `*.tmp` entry of `directory` but `keep`
// (the folder the ranks of a sharded save have just written).
void RemoveStale(const std::string& directory, std::string_view keep, std::vector<std::string>& warnings) {
  std::error_code ec;
  for (const fs::directory_entry& entry : fs::directory_iterator(directory, ec)) {
    std::string name = entry.path().filename().string();
    if (name == keep || name.size() <= kTemporarySuffix.size() ||
        name.substr(name.size() - kTemporarySuffix.size()) != kTemporarySuffix) {
      continue;
    }
    std::error_code remove_ec;
    fs::remove_all(entry.path(), remove_ec);
    if (remove_ec) {
      warnings.push_back(fmt::format("{}: cannot remove what a crashed save left: {}", entry.path().string(),
                                     remove_ec.message()));
    }
  }
}

// Deletes a checkpoint in an order a crash cannot spoil: first a rename, so no half-deleted
// folder ever carries a checkpoint's name, then the slow recursive removal.
llvm::Error RemoveCheckpoint(const std::string& path) {
  std::string doomed = path + std::string(kTemporarySuffix);
  std::error_code ec;
  fs::remove_all(doomed, ec);
  if (llvm::Error error = RenameNoReplace(path, doomed)) return error;
  if (llvm::Error error = SyncDirectory(Parent(path))) return error;
  fs::remove_all(doomed, ec);
  if (ec) return Fail(doomed, "cannot remove: " + ec.message());
  return llvm::Error::success();
}

}  // namespace

std::vector<std::pair<uint64_t, std::string>> ListCheckpoints(const std::string& checkpoints_dir) {
  constexpr std::string_view kPrefix = "checkpoint_";
  std::vector<std::pair<uint64_t, std::string>> out;
  std::error_code ec;
  for (const fs::directory_entry& entry : fs::directory_iterator(checkpoints_dir, ec)) {
    std::string name = entry.path().filename().string();
    if (name.size() <= kPrefix.size() || name.compare(0, kPrefix.size(), kPrefix) != 0) continue;
    std::string_view digits = std::string_view(name).substr(kPrefix.size());
    uint64_t number = 0;
    auto [end, parse_ec] = std::from_chars(digits.data(), digits.data() + digits.size(), number);
    if (parse_ec != std::errc() || end != digits.data() + digits.size() || digits[0] == '+') continue;
    std::error_code type_ec;
    if (!entry.is_directory(type_ec)) continue;
    out.emplace_back(number, entry.path().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

llvm::Expected<CheckpointStore> CheckpointStore::Open(ProjectOptions options) {
  if (options.automatic_checkpoint_naming && options.project_dir.empty()) {
    return Fail("project_config", "`automatic_checkpoint_naming` needs a project directory (PRJ-002)");
  }
  if (options.total_limit && *options.total_limit == 0) {
    return Fail("project_config", "`total_limit` must be at least 1 (PRJ-004)");
  }
  return CheckpointStore(std::move(options));
}

std::string CheckpointStore::checkpoints_dir() const {
  return (fs::path(options_.project_dir) / "checkpoints").string();
}

llvm::Expected<SaveResult> CheckpointStore::Save(const std::vector<CheckpointFile>& files) {
  return SaveAutomatic([&](const std::string& temporary,
                           uint64_t number) { return WriteCheckpointDirectory(temporary, files, number); },
                       /*staged=*/false);
}

std::string CheckpointStore::ShardedStagingDir() const {
  return (fs::path(checkpoints_dir()) / fmt::format("checkpoint_{}{}", options_.iteration, kTemporarySuffix))
      .string();
}

std::string CheckpointStore::ShardedStagingDirFor(const std::string& directory) {
  return directory + std::string(kTemporarySuffix);
}

llvm::Expected<SaveResult> CheckpointStore::FinishSharded(uint32_t world,
                                                          const std::vector<CheckpointFile>& files) {
  return SaveAutomatic(
      [&](const std::string& temporary, uint64_t number) {
        return FinishShardedDirectory(temporary, world, files, number);
      },
      /*staged=*/true);
}

llvm::Expected<SaveResult> CheckpointStore::FinishShardedTo(const std::string& directory, uint32_t world,
                                                            const std::vector<CheckpointFile>& files) {
  return SaveManual(
      directory,
      [&](const std::string& temporary, uint64_t number) {
        return FinishShardedDirectory(temporary, world, files, number);
      },
      /*staged=*/true);
}

llvm::Expected<SaveResult> CheckpointStore::SaveAutomatic(const WriteFolder& write, bool staged) {
  if (!options_.automatic_checkpoint_naming) {
    return Fail(options_.project_dir, "automatic_checkpoint_naming is off: save with SaveTo(directory)");
  }
  std::string directory = checkpoints_dir();
  if (llvm::Error error = EnsureDirectory(directory)) return error;
  SaveResult result;
  uint64_t number = options_.iteration;
  std::string target = (fs::path(directory) / fmt::format("checkpoint_{}", number)).string();
  std::string temporary = target + std::string(kTemporarySuffix);
  std::error_code ec;
  RemoveStale(directory, staged ? fs::path(temporary).filename().string() : "", result.warnings);
  // A refused sharded save must not leave the ranks' files for the next attempt to mistake.
  auto refuse = [&](llvm::Error error) -> llvm::Error {
    if (staged) fs::remove_all(temporary, ec);
    return error;
  };
  if (fs::exists(fs::symlink_status(target, ec))) {
    return refuse(
        Fail(target, fmt::format("already exists (iteration is {}); resume with LoadLatest(), which sets the "
                                 "iteration, or use another project_dir",
                                 number)));
  }
  // A fresh run writing checkpoint_0 next to an old checkpoint_7 would be loaded, and rotated,
  // as the older of the two: refuse instead of silently losing the new state.
  for (const auto& [other, path] : ListCheckpoints(directory)) {
    if (other > number && HasValidManifest(path)) {
      return refuse(
          Fail(target, fmt::format("{} is newer than the checkpoint about to be written (iteration {}); "
                                   "resume with LoadLatest() or use another project_dir",
                                   path, number)));
    }
  }
  if (llvm::Error error = write(temporary, number)) {
    fs::remove_all(temporary, ec);
    return error;
  }
  if (llvm::Error error = RenameNoReplace(temporary, target)) {
    fs::remove_all(temporary, ec);
    return error;
  }
  if (llvm::Error error = SyncDirectory(directory)) return error;
  // Durable from here on: only now may older checkpoints go.
  result.path = target;
  result.iteration = number;
  options_.iteration = number + 1;
  if (options_.total_limit) Rotate(target, result);
  return result;
}

void CheckpointStore::Rotate(const std::string& keep, SaveResult& result) const {
  std::vector<std::string> complete;
  for (const auto& [number, path] : ListCheckpoints(checkpoints_dir())) {
    if (HasValidManifest(path)) {
      complete.push_back(path);
    } else {
      result.warnings.push_back(fmt::format(
          "{}: no valid manifest, so not a complete Accel checkpoint; rotation leaves it alone", path));
    }
  }
  // Oldest first until the limit holds. What the guard keeps still counts, so the next one
  // goes in its place; a removal that fails counts as done, so that no newer one goes instead.
  size_t remaining = complete.size();
  for (size_t i = 0; i < complete.size() && remaining > *options_.total_limit; ++i) {
    if (complete[i] == keep) continue;
    if (rotation_guard_) {
      if (std::optional<std::string> reason = rotation_guard_(complete[i])) {
        if (!reason->empty()) result.warnings.push_back(*reason);
        continue;
      }
    }
    --remaining;
    if (llvm::Error error = RemoveCheckpoint(complete[i])) {
      result.warnings.push_back("rotation: " + llvm::toString(std::move(error)));
    } else {
      result.removed.push_back(complete[i]);
    }
  }
}

llvm::Expected<SaveResult> CheckpointStore::SaveTo(const std::string& directory,
                                                   const std::vector<CheckpointFile>& files) {
  return SaveManual(
      directory,
      [&](const std::string& temporary, uint64_t number) {
        return WriteCheckpointDirectory(temporary, files, number);
      },
      /*staged=*/false);
}

llvm::Expected<SaveResult> CheckpointStore::SaveManual(const std::string& directory, const WriteFolder& write,
                                                       bool staged) {
  std::string parent = Parent(directory);
  if (llvm::Error error = EnsureDirectory(parent)) return error;
  std::error_code ec;
  bool replace = fs::exists(fs::symlink_status(directory, ec));
  // Accelerate writes into an existing folder file by file; swapping the whole folder would
  // delete whatever else the user keeps there, so only a checkpoint is replaced.
  std::string temporary = directory + std::string(kTemporarySuffix);
  if (replace && !fs::is_empty(directory, ec) && !HasValidManifest(directory)) {
    if (staged) fs::remove_all(temporary, ec);
    return Fail(directory,
                "exists and is not an Accel checkpoint (no valid manifest); refusing to replace it");
  }
  if (!staged) fs::remove_all(temporary, ec);
  uint64_t number = options_.iteration;
  if (llvm::Error error = write(temporary, number)) {
    fs::remove_all(temporary, ec);
    return error;
  }
  SaveResult result;
  llvm::Error moved = replace ? ExchangePaths(temporary, directory) : RenameNoReplace(temporary, directory);
  if (moved) {
    fs::remove_all(temporary, ec);
    return moved;
  }
  if (llvm::Error error = SyncDirectory(parent)) return error;
  if (replace) {
    // The previous checkpoint now sits at the temporary name; a crash here leaves it for the
    // next SaveTo to remove.
    fs::remove_all(temporary, ec);
    if (ec)
      result.warnings.push_back(
          fmt::format("{}: cannot remove the replaced checkpoint: {}", temporary, ec.message()));
  }
  result.path = directory;
  result.iteration = number;
  options_.iteration = number + 1;
  return result;
}

llvm::Expected<VerifiedCheckpoint> CheckpointStore::LoadLatest(const std::vector<std::string>& taken) {
  if (!options_.automatic_checkpoint_naming) {
    return Fail(options_.project_dir, "automatic_checkpoint_naming is off: load with Load(directory)");
  }
  std::string directory = checkpoints_dir();
  std::vector<std::pair<uint64_t, std::string>> candidates = ListCheckpoints(directory);
  if (candidates.empty()) return Fail(directory, "no checkpoint_N folders to load");
  std::vector<std::string> skipped;
  for (auto it = candidates.rbegin(); it != candidates.rend(); ++it) {
    llvm::Expected<VerifiedCheckpoint> checkpoint = VerifyCheckpointDirectory(it->second, taken);
    if (!checkpoint) {
      skipped.push_back("skipped " + llvm::toString(checkpoint.takeError()));
      continue;
    }
    if (checkpoint->iteration != it->first) {
      skipped.push_back(
          fmt::format("skipped {}: its manifest says iteration {}", it->second, checkpoint->iteration));
      continue;
    }
    for (std::string& warning : skipped) warning += fmt::format("; loaded {} instead", checkpoint->path);
    checkpoint->warnings.insert(checkpoint->warnings.begin(), skipped.begin(), skipped.end());
    options_.iteration = it->first + 1;
    return checkpoint;
  }
  return Fail(directory, fmt::format("no complete checkpoint: {}", fmt::join(skipped, "; ")));
}

llvm::Expected<VerifiedCheckpoint> CheckpointStore::Load(const std::string& directory,
                                                         const std::vector<std::string>& taken) {
  llvm::Expected<VerifiedCheckpoint> checkpoint = VerifyCheckpointDirectory(directory, taken);
  if (checkpoint) options_.iteration = checkpoint->iteration + 1;
  return checkpoint;
}

}  // namespace accel::rt::checkpoint
