// Verification of a checkpoint against its manifest, piece by piece: the pieces' digests
// (ChunkedSha256), the version-2 manifest that records them, a flipped byte in any piece of a
// multi-piece file caught on load, and version-1 manifests (one digest per file) still loading.
#include <gtest/gtest.h>

#include "tests/unit/scratch_dir.h"

#include <sys/stat.h>

#include <filesystem>
#include <fstream>

#include "runtime/checkpoint/checkpoint_store.h"
#include "runtime/checkpoint/manifest.h"
#include "runtime/checkpoint/sha256.h"

namespace accel::rt::checkpoint {
namespace {

namespace fs = std::filesystem;

using accel::testing::ScratchDir;

std::string ReadText(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

void WriteText(const fs::path& path, const std::string& text) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << text;
}

// Flips the bits of byte `offset` of `path` in place.
void FlipByte(const fs::path& path, uint64_t offset) {
  std::fstream file(path, std::ios::binary | std::ios::in | std::ios::out);
  file.seekg(static_cast<std::streamoff>(offset));
  char byte = 0;
  file.read(&byte, 1);
  file.seekp(static_cast<std::streamoff>(offset));
  byte = static_cast<char>(~byte);
  file.write(&byte, 1);
}

// 2.5 pieces of bytes that differ from piece to piece, so that a piece's digest cannot stand
// for another's.
std::string LargeFile() {
  std::string bytes(kManifestChunkSize * 5 / 2, '\0');
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<char>((i * 2654435761u) >> 13);
  return bytes;
}

fs::path SaveLargeCheckpoint(const std::string& name, const std::string& large) {
  fs::path project = ScratchDir(name);
  llvm::Expected<CheckpointStore> store = CheckpointStore::Open({project.string(), true, std::nullopt, 0});
  EXPECT_TRUE(static_cast<bool>(store));
  llvm::Expected<SaveResult> saved = store->Save({{"model.safetensors", {large}}, {"small.json", {"{}"}}});
  EXPECT_TRUE(static_cast<bool>(saved)) << llvm::toString(saved.takeError());
  return project;
}

llvm::Expected<VerifiedCheckpoint> LoadLatest(const fs::path& project,
                                              const std::vector<std::string>& taken = {}) {
  llvm::Expected<CheckpointStore> store = CheckpointStore::Open({project.string(), true, std::nullopt, 0});
  EXPECT_TRUE(static_cast<bool>(store));
  return store->LoadLatest(taken);
}

TEST(ChunkedSha256, HashesEachPieceWhereverTheStreamIsCut) {
  ChunkedSha256 hasher(3);
  for (std::string_view part : {"a", "bcde", "", "fg", "h"}) hasher.Update(part);
  EXPECT_EQ(hasher.HexDigests(),
            (std::vector<std::string>{Sha256Hex("abc"), Sha256Hex("def"), Sha256Hex("gh")}));
}

TEST(ChunkedSha256, AnExactMultipleHasNoEmptyLastPieceAndNothingHasOneEmptyPiece) {
  ChunkedSha256 exact(3);
  exact.Update("abcdef");
  EXPECT_EQ(exact.HexDigests(), (std::vector<std::string>{Sha256Hex("abc"), Sha256Hex("def")}));
  ChunkedSha256 empty(3);
  EXPECT_EQ(empty.HexDigests(), std::vector<std::string>{Sha256Hex("")});
  EXPECT_EQ(ChunkCount(6, 3), 2u);
  EXPECT_EQ(ChunkCount(7, 3), 3u);
  EXPECT_EQ(ChunkCount(0, 3), 1u);
  EXPECT_EQ(ChunkCount(7, 0), 1u);
}

TEST(Manifest, WritesVersion2WithOneDigestPerPiece) {
  std::string large = LargeFile();
  fs::path project = SaveLargeCheckpoint("v2", large);
  fs::path manifest_path = project / "checkpoints" / "checkpoint_0" / std::string(kManifestName);
  llvm::Expected<Manifest> manifest = ParseManifest(ReadText(manifest_path), "m");
  ASSERT_TRUE(static_cast<bool>(manifest)) << llvm::toString(manifest.takeError());
  EXPECT_EQ(manifest->version, 2u);
  EXPECT_EQ(manifest->chunk_size, kManifestChunkSize);
  ASSERT_EQ(manifest->files.size(), 2u);
  EXPECT_EQ(manifest->files[0].name, "model.safetensors");
  std::string_view bytes = large;
  EXPECT_EQ(manifest->files[0].sha256,
            (std::vector<std::string>{Sha256Hex(bytes.substr(0, kManifestChunkSize)),
                                      Sha256Hex(bytes.substr(kManifestChunkSize, kManifestChunkSize)),
                                      Sha256Hex(bytes.substr(2 * kManifestChunkSize))}));
  // A file within one piece has one digest: its whole SHA-256, as in version 1.
  EXPECT_EQ(manifest->files[1].sha256, std::vector<std::string>{Sha256Hex("{}")});
}

TEST(Manifest, RefusesAWrongNumberOfDigestsAndAMissingChunkSize) {
  std::string digest = Sha256Hex("x");
  auto parse = [](const std::string& text) -> std::string {
    llvm::Expected<Manifest> manifest = ParseManifest(text, "m.json");
    return manifest ? "" : llvm::toString(manifest.takeError());
  };
  std::string head = R"({"format": "accel-checkpoint", "version": 2, "iteration": 0, )";
  EXPECT_EQ(parse(head + R"("chunk_size": 4, "files": {"f": {"size": 8, "sha256": [")" + digest + R"("]}}})"),
            "m.json: files.`f`.sha256 has 1 digests, a file of 8 bytes in pieces of 4 has 2");
  EXPECT_EQ(parse(head + R"("files": {"f": {"size": 1, "sha256": [")" + digest + R"("]}}})"),
            "m.json: `chunk_size` is not a positive integer");
  EXPECT_EQ(parse(head + R"("chunk_size": 4, "files": {"f": {"size": 1, "sha256": ")" + digest + R"("}}})"),
            "m.json: files.`f`.sha256 is not a list of digests");
  EXPECT_EQ(parse(R"({"format": "accel-checkpoint", "version": 3, "iteration": 0, "files": {}})"),
            "m.json: written by a newer Accel: version 3, this build reads up to 2");
}

// Without piece-by-piece verification each of these loads would succeed on corrupted bytes; the
// same holds whether the file is mapped or read into memory (taken).
class FlippedByte : public ::testing::TestWithParam<bool> {};

TEST_P(FlippedByte, IsCaughtInEveryPieceOfALargeFile) {
  std::string large = LargeFile();
  fs::path project = SaveLargeCheckpoint("flip", large);
  fs::path file = project / "checkpoints" / "checkpoint_0" / "model.safetensors";
  const std::vector<std::string> taken =
      GetParam() ? std::vector<std::string>{"model.safetensors"} : std::vector<std::string>{};
  ASSERT_TRUE(static_cast<bool>(LoadLatest(project, taken)));
  const uint64_t offsets[] = {0, kManifestChunkSize - 1, kManifestChunkSize + 12345, large.size() - 1};
  const int pieces[] = {1, 1, 2, 3};
  for (size_t i = 0; i < std::size(offsets); ++i) {
    FlipByte(file, offsets[i]);
    llvm::Expected<VerifiedCheckpoint> loaded = LoadLatest(project, taken);
    ASSERT_FALSE(static_cast<bool>(loaded)) << "byte " << offsets[i] << " flipped, yet the checkpoint loaded";
    std::string error = llvm::toString(loaded.takeError());
    EXPECT_NE(error.find("`model.safetensors` has sha256 "), std::string::npos) << error;
    EXPECT_NE(error.find("(piece " + std::to_string(pieces[i]) + " of 3)"), std::string::npos) << error;
    FlipByte(file, offsets[i]);  // back to the saved bytes
    EXPECT_TRUE(static_cast<bool>(LoadLatest(project, taken))) << "byte " << offsets[i] << " restored";
  }
}

INSTANTIATE_TEST_SUITE_P(MappedOrTaken, FlippedByte, ::testing::Bool());

// A taken file is read into this process's memory, whose ranges the caller may take; the
// others stay mapped read-only (the page cache the ranks of a machine share).
TEST(VerifyCheckpoint, OnlyTakenFilesAreReadIntoPrivateMemory) {
  std::string large = LargeFile();
  fs::path project = SaveLargeCheckpoint("taken", large);
  llvm::Expected<VerifiedCheckpoint> loaded = LoadLatest(project, {"model.safetensors"});
  ASSERT_TRUE(static_cast<bool>(loaded)) << llvm::toString(loaded.takeError());
  const FileBytes& model = *loaded->files.at("model.safetensors");
  EXPECT_TRUE(model.view() == large);
  EXPECT_NE(model.TakePrivate(0, large.size()), nullptr);
  EXPECT_EQ(loaded->files.at("small.json")->TakePrivate(0, 2), nullptr);
}

TEST(VerifyCheckpoint, CatchesAFlippedByteInASmallFile) {
  fs::path project = SaveLargeCheckpoint("flip_small", LargeFile());
  FlipByte(project / "checkpoints" / "checkpoint_0" / "small.json", 1);
  llvm::Expected<VerifiedCheckpoint> loaded = LoadLatest(project);
  ASSERT_FALSE(static_cast<bool>(loaded));
  EXPECT_NE(llvm::toString(loaded.takeError()).find("`small.json` has sha256 "), std::string::npos);
}

// What Accel wrote before version 2: the same files, one SHA-256 per whole file.
void RewriteAsVersion1(const fs::path& checkpoint, const std::string& large) {
  std::string text = R"({
  "format": "accel-checkpoint",
  "version": 1,
  "iteration": 0,
  "files": {
    "model.safetensors": {"size": )" +
                     std::to_string(large.size()) + R"(, "sha256": ")" + Sha256Hex(large) + R"("},
    "small.json": {"size": 2, "sha256": ")" +
                     Sha256Hex("{}") + R"("}
  }
}
)";
  WriteText(checkpoint / std::string(kManifestName), text);
}

TEST(VerifyCheckpoint, LoadsAVersion1ManifestAndStillCatchesAFlippedByte) {
  std::string large = LargeFile();
  fs::path project = SaveLargeCheckpoint("v1", large);
  fs::path checkpoint = project / "checkpoints" / "checkpoint_0";
  RewriteAsVersion1(checkpoint, large);
  {
    llvm::Expected<VerifiedCheckpoint> loaded = LoadLatest(project);
    ASSERT_TRUE(static_cast<bool>(loaded)) << llvm::toString(loaded.takeError());
    EXPECT_EQ(loaded->files.at("model.safetensors")->view(), large);
  }
  llvm::Expected<Manifest> manifest = ParseManifest(ReadText(checkpoint / std::string(kManifestName)), "m");
  ASSERT_TRUE(static_cast<bool>(manifest));
  EXPECT_EQ(manifest->version, 1u);
  EXPECT_EQ(manifest->chunk_size, 0u);
  FlipByte(checkpoint / "model.safetensors", kManifestChunkSize + 7);
  llvm::Expected<VerifiedCheckpoint> flipped = LoadLatest(project);
  ASSERT_FALSE(static_cast<bool>(flipped));
  EXPECT_NE(llvm::toString(flipped.takeError()).find("`model.safetensors` has sha256 "), std::string::npos);
}

// A manifest edited to hundreds of megabytes cost 22 s and 3.4 GB per rank before its refusal:
// one over the cap is refused by its size, unread, both on load and by the rotation's check.
TEST(VerifyCheckpoint, RefusesAManifestOverTheCapWithoutReadingIt) {
  fs::path project = SaveLargeCheckpoint("huge_manifest", "small");
  fs::path manifest = project / "checkpoints" / "checkpoint_0" / std::string(kManifestName);
  // Sparse: the size is over the cap, the disk holds nothing of it.
  fs::resize_file(manifest, kMaxManifestBytes + 1);
  llvm::Expected<VerifiedCheckpoint> loaded = LoadLatest(project);
  ASSERT_FALSE(static_cast<bool>(loaded));
  std::string message = llvm::toString(loaded.takeError());
  EXPECT_NE(message.find("over the 64 MiB a manifest can take"), std::string::npos) << message;
}

// A manifest that is a FIFO would block its reader forever: refused by its kind.
TEST(VerifyCheckpoint, RefusesAManifestThatIsNotARegularFile) {
  fs::path project = SaveLargeCheckpoint("fifo_manifest", "small");
  fs::path manifest = project / "checkpoints" / "checkpoint_0" / std::string(kManifestName);
  fs::remove(manifest);
  ASSERT_EQ(::mkfifo(manifest.c_str(), 0600), 0);
  llvm::Expected<Manifest> read = ReadManifest((project / "checkpoints" / "checkpoint_0").string());
  ASSERT_FALSE(static_cast<bool>(read));
  EXPECT_NE(llvm::toString(read.takeError()).find("not a regular file"), std::string::npos);
}

}  // namespace
}  // namespace accel::rt::checkpoint
