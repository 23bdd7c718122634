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
// Bumped when a reader of the old version could misread the new layout. Version 2 records one
// SHA-256 per `chunk_size` piece of each file instead of one per file, so that a large file
// verifies on every core; version 1 manifests (one digest per file) still load.
inline constexpr uint64_t kManifestVersion = 2;
// The piece size new manifests use: small enough that a 1 GB state splits into ~120 pieces
// that keep two to eight cores busy, large enough that the manifest stays a few KiB.
inline constexpr uint64_t kManifestChunkSize = uint64_t{8} << 20;

struct ManifestEntry {
  std::string name;
  uint64_t size = 0;
  // The SHA-256 of each `Manifest::chunk_size` piece of the file in order (64 lower-case hex
  // digits each), ChunkCount(size, chunk_size) of them; a file no larger than one piece has one
  // digest, its whole SHA-256.
  std::vector<std::string> sha256;
};

struct Manifest {
  uint64_t version = kManifestVersion;
  uint64_t iteration = 0;
  // Bytes per hashed piece; 0 for a version-1 manifest, whose one digest covers the whole file.
  uint64_t chunk_size = kManifestChunkSize;
  std::vector<ManifestEntry> files;  // any order; written sorted by name
};

// How many digests a file of `size` bytes has: one per piece begun, and one for an empty file
// (the SHA-256 of nothing). With `chunk_size` 0 (version 1), always one.
uint64_t ChunkCount(uint64_t size, uint64_t chunk_size);

// The manifest as JSON (indent 2, files sorted by name, trailing newline), at its version: a
// `chunk_size` and a list of digests per file, or at version 1 one digest string per file.
std::string EncodeManifest(const Manifest& manifest);

// Reads a manifest of version 1 or 2; `path` names it in errors. Fails when it is not the JSON
// EncodeManifest writes (or wrote at version 1), when its version is newer than this build
// reads, when a file name is not a plain name (no `/`, not `.` or `..`), repeated, or the
// manifest's own, or when a file has not ChunkCount digests.
llvm::Expected<Manifest> ParseManifest(std::string_view text, const std::string& path);

// Why `name` cannot name a file of a checkpoint, or empty when it can: a plain file name, not
// the manifest's, not ending in `.tmp` (the suffix of unfinished directories).
std::string InvalidFileName(std::string_view name);

}  // namespace accel::rt::checkpoint

#endif  // ACCEL_RUNTIME_CHECKPOINT_MANIFEST_H_
