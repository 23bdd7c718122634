#ifndef ACCEL_RUNTIME_CHECKPOINT_CHECKPOINT_DIR_H_
#define ACCEL_RUNTIME_CHECKPOINT_CHECKPOINT_DIR_H_

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "llvm/Support/Error.h"
#include "runtime/checkpoint/checkpoint_file.h"
#include "runtime/checkpoint/file_bytes.h"
#include "runtime/checkpoint/manifest.h"
#include "runtime/checkpoint/safetensors.h"

// One checkpoint directory: its files plus the manifest that vouches for them. Writing never
// makes a directory visible under its final name; CheckpointStore renames it into place.
namespace accel::rt::checkpoint {

// Creates `directory` (it must not exist), writes every file into it (several at once, each
// hashed while written and fsynced), then the manifest with `iteration`, then fsyncs the
// directory. Fails, naming the file, on an invalid or repeated name (see InvalidFileName) or
// an I/O error; a partial directory is left behind for the caller to remove.
llvm::Error WriteCheckpointDirectory(const std::string& directory, const std::vector<CheckpointFile>& files,
                                     uint64_t iteration);

// A checkpoint whose files all matched its manifest.
struct VerifiedCheckpoint {
  std::string path;
  uint64_t iteration = 0;
  // Every file the manifest names, its bytes just checked against their SHA-256: the files the
  // caller said it takes read into this process's memory (a range taken with
  // FileBytes::TakePrivate belongs to its taker from then on), the others mapped read-only.
  std::map<std::string, std::shared_ptr<const FileBytes>> files;
  // Problems that did not fail the check (files next to the manifest that it does not name).
  std::vector<std::string> warnings;

  // File `name` read as safetensors, without another copy. Fails when the checkpoint has no
  // such file or it is not valid safetensors.
  llvm::Expected<SafetensorsFile> Safetensors(const std::string& name) const;
};

// The largest manifest any reader parses: 64 MiB holds about 900,000 digests, a checkpoint of
// 7 TiB in kManifestChunkSize pieces. Parsing costs about five times the file's size in memory,
// so a bigger one (edited, or not a manifest) is refused before it is read.
inline constexpr uint64_t kMaxManifestBytes = uint64_t{64} << 20;

// The manifest of `directory`, parsed. Fails, naming the path, when there is none, when it is
// not a regular file (a FIFO or device would block or never end) or is over kMaxManifestBytes,
// or when ParseManifest refuses it.
llvm::Expected<Manifest> ReadManifest(const std::string& directory);

// Opens every file the manifest of `directory` names and checks its size and the SHA-256 of
// every piece the manifest lists (all pieces of all files in parallel, two threads per core,
// each loading its piece and hashing it). The files named in `taken`, whose bytes the caller
// will make its own tensors of, are read into this process's memory around the page cache
// (FileBytes::OpenForReading); the others are mapped and read through the page cache, which the
// ranks of one machine share. Fails, naming the directory and the first problem found, when the
// manifest is missing (an unfinished checkpoint) or invalid, or a file is missing, has another
// size or another digest.
llvm::Expected<VerifiedCheckpoint> VerifyCheckpointDirectory(const std::string& directory,
                                                             const std::vector<std::string>& taken = {});

}  // namespace accel::rt::checkpoint

#endif  // ACCEL_RUNTIME_CHECKPOINT_CHECKPOINT_DIR_H_
