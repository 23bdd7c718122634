#ifndef ACCEL_RUNTIME_CHECKPOINT_MANIFEST_H_
#define ACCEL_RUNTIME_CHECKPOINT_MANIFEST_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "llvm/Support/Error.h"

// A checkpoint's manifest: the last file written into it, naming every other file with its
// size and SHA-256. A checkpoint directory counts as complete only when its manifest parses
// and every file matches it (docs/checkpoints.md).
namespace accel::rt::checkpoint {

inline constexpr std::string_view kManifestName = "accel_manifest.json";
inline constexpr std::string_view kManifestFormat = "accel-checkpoint";
// Bumped when a reader of the old version could misread the new layout.
inline constexpr uint64_t kManifestVersion = 1;

struct ManifestEntry {
  std::string name;
  uint64_t size = 0;
  std::string sha256;  // 64 lower-case hex digits
};

struct Manifest {
  uint64_t version = kManifestVersion;
  uint64_t iteration = 0;
  std::vector<ManifestEntry> files;  // any order; written sorted by name
};

// The manifest as JSON (indent 2, files sorted by name, trailing newline).
std::string EncodeManifest(const Manifest& manifest);

// Reads a manifest; `path` names it in errors. Fails when it is not the JSON EncodeManifest
// writes, when its version is newer than this build reads, or when a file name is not a plain
// name (no `/`, not `.` or `..`), repeated, or the manifest's own.
llvm::Expected<Manifest> ParseManifest(std::string_view text, const std::string& path);

// Why `name` cannot name a file of a checkpoint, or empty when it can: a plain file name, not
// the manifest's, not ending in `.tmp` (the suffix of unfinished directories).
std::string InvalidFileName(std::string_view name);

}  // namespace accel::rt::checkpoint

#endif  // ACCEL_RUNTIME_CHECKPOINT_MANIFEST_H_
