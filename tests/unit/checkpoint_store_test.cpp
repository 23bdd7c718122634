// Crash-safe checkpoint directories: naming, manifest, rotation only after the new checkpoint
// is durable, fallback to the newest complete checkpoint with a warning, cleanup of what a
// crashed save left. The SIGKILL loop in tests/runtime/checkpoint_crash_test.py covers the
// same promises against real crashes.
#include <gtest/gtest.h>

#include "tests/unit/scratch_dir.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "runtime/checkpoint/checkpoint_store.h"
#include "runtime/checkpoint/manifest.h"
#include "runtime/checkpoint/sha256.h"
#include "runtime/checkpoint/shards.h"

namespace accel::rt::checkpoint {
namespace {

namespace fs = std::filesystem;

using accel::testing::ScratchDir;

std::string ReadText(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

void WriteText(const fs::path& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
}

CheckpointStore Open(const fs::path& project, std::optional<uint64_t> total_limit = std::nullopt,
                     uint64_t iteration = 0) {
  llvm::Expected<CheckpointStore> store =
      CheckpointStore::Open({project.string(), true, total_limit, iteration});
  EXPECT_TRUE(static_cast<bool>(store));
  return std::move(*store);
}

// The state of step `step`: two small files whose content says which step wrote them.
struct State {
  explicit State(uint64_t step)
      : model("model bytes of step " + std::to_string(step)), rng("rng of step " + std::to_string(step)) {}
  std::vector<CheckpointFile> Files() const {
    return {{"model.bin.raw", {model}}, {"random_states_0.json", {rng}}};
  }
  std::string model, rng;
};

SaveResult Save(CheckpointStore& store, uint64_t step) {
  State state(step);
  llvm::Expected<SaveResult> result = store.Save(state.Files());
  EXPECT_TRUE(static_cast<bool>(result)) << llvm::toString(result.takeError());
  return result ? *result : SaveResult();
}

std::vector<std::string> Entries(const fs::path& dir) {
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(dir)) names.push_back(entry.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

TEST(CheckpointStore, SavesNumberedCheckpointsWithAManifestOfEveryFile) {
  fs::path project = ScratchDir("numbered");
  CheckpointStore store = Open(project);
  SaveResult first = Save(store, 0);
  EXPECT_EQ(first.path, (project / "checkpoints" / "checkpoint_0").string());
  Save(store, 1);
  EXPECT_EQ(store.iteration(), 2u);
  EXPECT_EQ(Entries(project / "checkpoints"), (std::vector<std::string>{"checkpoint_0", "checkpoint_1"}));
  fs::path dir = project / "checkpoints" / "checkpoint_1";
  EXPECT_EQ(Entries(dir),
            (std::vector<std::string>{"accel_manifest.json", "model.bin.raw", "random_states_0.json"}));
  llvm::Expected<Manifest> manifest = ParseManifest(ReadText(dir / "accel_manifest.json"), "m");
  ASSERT_TRUE(static_cast<bool>(manifest)) << llvm::toString(manifest.takeError());
  EXPECT_EQ(manifest->iteration, 1u);
  EXPECT_EQ(manifest->version, kManifestVersion);
  ASSERT_EQ(manifest->files.size(), 2u);
  EXPECT_EQ(manifest->files[0].name, "model.bin.raw");
  EXPECT_EQ(manifest->files[0].size, State(1).model.size());
  EXPECT_EQ(manifest->files[0].sha256, std::vector<std::string>{Sha256Hex(State(1).model)});
}

TEST(CheckpointStore, Sha256MatchesTheStandardTestVector) {
  EXPECT_EQ(Sha256Hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(Sha256Hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
}

TEST(CheckpointStore, LoadLatestVerifiesAndRestoresTheIteration) {
  fs::path project = ScratchDir("latest");
  {
    CheckpointStore store = Open(project);
    for (uint64_t step = 0; step < 3; ++step) Save(store, step);
  }
  CheckpointStore resumed = Open(project);
  llvm::Expected<VerifiedCheckpoint> loaded = resumed.LoadLatest();
  ASSERT_TRUE(static_cast<bool>(loaded)) << llvm::toString(loaded.takeError());
  EXPECT_EQ(loaded->iteration, 2u);
  EXPECT_TRUE(loaded->warnings.empty());
  EXPECT_EQ(loaded->files.at("model.bin.raw")->view(), State(2).model);
  EXPECT_EQ(resumed.iteration(), 3u);
  EXPECT_EQ(Save(resumed, 3).path, (project / "checkpoints" / "checkpoint_3").string());
}

TEST(CheckpointStore, RotatesOnlyAfterTheNewCheckpointAndKeepsTheNewest) {
  fs::path project = ScratchDir("rotation");
  CheckpointStore store = Open(project, 2);
  Save(store, 0);
  Save(store, 1);
  SaveResult third = Save(store, 2);
  EXPECT_EQ(third.removed, (std::vector<std::string>{(project / "checkpoints" / "checkpoint_0").string()}));
  EXPECT_EQ(Entries(project / "checkpoints"), (std::vector<std::string>{"checkpoint_1", "checkpoint_2"}));
  CheckpointStore one = Open(project, 1, 3);
  Save(one, 3);
  EXPECT_EQ(Entries(project / "checkpoints"), (std::vector<std::string>{"checkpoint_3"}));
}

// The guard keeps what it gives a reason for, silently for an empty one, whatever the limit.
TEST(CheckpointStore, RotationKeepsWhatTheGuardNames) {
  fs::path project = ScratchDir("guarded");
  CheckpointStore store = Open(project, 1);
  const std::string first = (project / "checkpoints" / "checkpoint_0").string();
  const std::string second = (project / "checkpoints" / "checkpoint_1").string();
  store.GuardRotation([&](const std::string& checkpoint) -> std::optional<std::string> {
    if (checkpoint == first) return std::string();
    if (checkpoint == second) return std::string("kept: beyond");
    return std::nullopt;
  });
  Save(store, 0);
  SaveResult kept = Save(store, 1);
  EXPECT_TRUE(kept.removed.empty());
  EXPECT_TRUE(kept.warnings.empty());
  SaveResult third = Save(store, 2);
  EXPECT_TRUE(third.removed.empty());
  EXPECT_EQ(third.warnings, (std::vector<std::string>{"kept: beyond"}));
  SaveResult fourth = Save(store, 3);
  EXPECT_EQ(fourth.removed, (std::vector<std::string>{(project / "checkpoints" / "checkpoint_2").string()}));
  EXPECT_EQ(Entries(project / "checkpoints"),
            (std::vector<std::string>{"checkpoint_0", "checkpoint_1", "checkpoint_3"}));
}

TEST(CheckpointStore, RotationLeavesForeignEntriesAlone) {
  // Accelerate counts every entry and crashes on names without digits (catalog §9 #24).
  fs::path project = ScratchDir("foreign");
  fs::create_directories(project / "checkpoints" / "checkpoint_5_accelerate");
  fs::create_directories(project / "checkpoints" / "notes");
  fs::create_directories(project / "checkpoints" / "checkpoint_1");  // no manifest: not ours
  CheckpointStore store = Open(project, 1, 2);
  Save(store, 2);
  SaveResult result = Save(store, 3);
  EXPECT_EQ(Entries(project / "checkpoints"),
            (std::vector<std::string>{"checkpoint_1", "checkpoint_3", "checkpoint_5_accelerate", "notes"}));
  ASSERT_EQ(result.warnings.size(), 1u);
  EXPECT_NE(result.warnings[0].find("checkpoint_1: no valid manifest"), std::string::npos);
}

TEST(CheckpointStore, FallsBackToTheNewestCompleteCheckpointAndSaysWhy) {
  fs::path project = ScratchDir("fallback");
  {
    CheckpointStore store = Open(project);
    for (uint64_t step = 0; step < 4; ++step) Save(store, step);
  }
  fs::path checkpoints = project / "checkpoints";
  // 3: a flipped byte; 2: a truncated file; 1: the manifest is gone.
  WriteText(checkpoints / "checkpoint_3" / "model.bin.raw", "model bytes of step 9");
  fs::resize_file(checkpoints / "checkpoint_2" / "random_states_0.json", 3);
  fs::remove(checkpoints / "checkpoint_1" / "accel_manifest.json");
  CheckpointStore store = Open(project);
  llvm::Expected<VerifiedCheckpoint> loaded = store.LoadLatest();
  ASSERT_TRUE(static_cast<bool>(loaded)) << llvm::toString(loaded.takeError());
  EXPECT_EQ(loaded->iteration, 0u);
  EXPECT_EQ(store.iteration(), 1u);
  ASSERT_EQ(loaded->warnings.size(), 3u);
  EXPECT_NE(loaded->warnings[0].find("checkpoint_3: `model.bin.raw` has sha256"), std::string::npos)
      << loaded->warnings[0];
  EXPECT_NE(
      loaded->warnings[1].find("checkpoint_2: `random_states_0.json` has 3 bytes, the manifest says 13"),
      std::string::npos)
      << loaded->warnings[1];
  EXPECT_NE(
      loaded->warnings[2].find("checkpoint_1: no accel_manifest.json: the checkpoint was never finished"),
      std::string::npos)
      << loaded->warnings[2];
  EXPECT_NE(loaded->warnings[2].find("loaded " + (checkpoints / "checkpoint_0").string() + " instead"),
            std::string::npos);
}

TEST(CheckpointStore, FailsWhenNoCheckpointVerifiesAndListsEachReason) {
  fs::path project = ScratchDir("none");
  CheckpointStore store = Open(project);
  llvm::Expected<VerifiedCheckpoint> nothing = store.LoadLatest();
  ASSERT_FALSE(static_cast<bool>(nothing));
  EXPECT_NE(llvm::toString(nothing.takeError()).find("no checkpoint_N folders"), std::string::npos);
  Save(store, 0);
  fs::remove(project / "checkpoints" / "checkpoint_0" / "model.bin.raw");
  llvm::Expected<VerifiedCheckpoint> broken = store.LoadLatest();
  ASSERT_FALSE(static_cast<bool>(broken));
  std::string error = llvm::toString(broken.takeError());
  EXPECT_NE(error.find("no complete checkpoint: skipped"), std::string::npos) << error;
  EXPECT_NE(error.find("`model.bin.raw` is missing"), std::string::npos) << error;
}

TEST(CheckpointStore, RejectsAManifestWhoseIterationDisagreesWithTheFolder) {
  fs::path project = ScratchDir("renamed");
  CheckpointStore store = Open(project);
  Save(store, 0);
  Save(store, 1);
  fs::rename(project / "checkpoints" / "checkpoint_1", project / "checkpoints" / "checkpoint_7");
  llvm::Expected<VerifiedCheckpoint> loaded = store.LoadLatest();
  ASSERT_TRUE(static_cast<bool>(loaded));
  EXPECT_EQ(loaded->iteration, 0u);
  EXPECT_NE(loaded->warnings[0].find("checkpoint_7: its manifest says iteration 1"), std::string::npos);
}

TEST(CheckpointStore, RemovesWhatACrashedSaveLeftOnTheNextSave) {
  fs::path project = ScratchDir("stale");
  CheckpointStore store = Open(project);
  Save(store, 0);
  // A save killed mid-way, and a rotation killed after its rename.
  fs::create_directories(project / "checkpoints" / "checkpoint_1.tmp");
  WriteText(project / "checkpoints" / "checkpoint_1.tmp" / "model.bin.raw", "half");
  fs::create_directories(project / "checkpoints" / "checkpoint_0.tmp");
  llvm::Expected<VerifiedCheckpoint> loaded = store.LoadLatest();  // temporary folders are never loaded
  ASSERT_TRUE(static_cast<bool>(loaded));
  EXPECT_EQ(loaded->iteration, 0u);
  Save(store, 1);
  EXPECT_EQ(Entries(project / "checkpoints"), (std::vector<std::string>{"checkpoint_0", "checkpoint_1"}));
}

TEST(CheckpointStore, RefusesToOverwriteOrToWriteBehindANewerCheckpoint) {
  fs::path project = ScratchDir("refuse");
  {
    CheckpointStore store = Open(project);
    Save(store, 0);
    Save(store, 1);
  }
  CheckpointStore fresh = Open(project);  // iteration 0 again: a run that forgot to resume
  State state(0);
  llvm::Expected<SaveResult> clash = fresh.Save(state.Files());
  ASSERT_FALSE(static_cast<bool>(clash));
  EXPECT_NE(llvm::toString(clash.takeError()).find("checkpoint_0: already exists (iteration is 0)"),
            std::string::npos);
  fs::rename(project / "checkpoints" / "checkpoint_0", project / "checkpoints" / "old");
  llvm::Expected<SaveResult> behind = fresh.Save(state.Files());
  ASSERT_FALSE(static_cast<bool>(behind));
  EXPECT_NE(llvm::toString(behind.takeError())
                .find("checkpoint_1 is newer than the checkpoint about to be written"),
            std::string::npos);
  EXPECT_EQ(Entries(project / "checkpoints"), (std::vector<std::string>{"checkpoint_1", "old"}));
}

TEST(CheckpointStore, RejectsInvalidFileNamesBeforeWritingAnything) {
  fs::path project = ScratchDir("names");
  CheckpointStore store = Open(project);
  std::string bytes = "x";
  for (const char* name : {"../escape", "a/b", "", "..", "accel_manifest.json", "x.tmp"}) {
    llvm::Expected<SaveResult> result = store.Save({{name, {bytes}}});
    ASSERT_FALSE(static_cast<bool>(result)) << name;
    EXPECT_NE(llvm::toString(result.takeError()).find("cannot write"), std::string::npos) << name;
  }
  llvm::Expected<SaveResult> twice = store.Save({{"a", {bytes}}, {"a", {bytes}}});
  ASSERT_FALSE(static_cast<bool>(twice));
  EXPECT_NE(llvm::toString(twice.takeError()).find("`a` given twice"), std::string::npos);
  EXPECT_TRUE(Entries(project / "checkpoints").empty());
  EXPECT_EQ(store.iteration(), 0u);
}

TEST(CheckpointStore, ChecksItsOptionsAsTheSchemaDoes) {
  llvm::Expected<CheckpointStore> no_dir = CheckpointStore::Open({"", true, std::nullopt, 0});
  ASSERT_FALSE(static_cast<bool>(no_dir));
  EXPECT_NE(llvm::toString(no_dir.takeError()).find("PRJ-002"), std::string::npos);
  llvm::Expected<CheckpointStore> zero = CheckpointStore::Open({"p", true, 0, 0});
  ASSERT_FALSE(static_cast<bool>(zero));
  EXPECT_NE(llvm::toString(zero.takeError()).find("PRJ-004"), std::string::npos);
}

TEST(CheckpointStore, StoresShardedSafetensorsAndReadsThemBackWithoutCopying) {
  fs::path project = ScratchDir("sharded");
  std::vector<std::string> storage = {std::string(600, 'a'), std::string(600, 'b'), std::string(100, 'c')};
  std::vector<TensorRef> tensors = {
      {"w0", "F32", {150}, storage[0]}, {"w1", "F32", {150}, storage[1]}, {"b", "U8", {100}, storage[2]}};
  llvm::Expected<EncodedShards> shards = EncodeShards(tensors, 1000);
  ASSERT_TRUE(static_cast<bool>(shards));
  CheckpointStore store = Open(project);
  ASSERT_TRUE(static_cast<bool>(store.Save(shards->Files())));
  llvm::Expected<VerifiedCheckpoint> loaded = store.LoadLatest();
  ASSERT_TRUE(static_cast<bool>(loaded));
  EXPECT_EQ(loaded->files.size(), 3u);  // two shards and the index
  llvm::Expected<SafetensorsFile> second = loaded->Safetensors("model-00002-of-00002.safetensors");
  ASSERT_TRUE(static_cast<bool>(second)) << llvm::toString(second.takeError());
  std::string_view bytes = second->Bytes("w1");
  EXPECT_EQ(bytes, storage[1]);
  // The view points into the checkpoint's verified mapping: no copy was made.
  std::string_view mapped = loaded->files.at("model-00002-of-00002.safetensors")->view();
  EXPECT_GE(bytes.data(), mapped.data());
  EXPECT_LE(bytes.data() + bytes.size(), mapped.data() + mapped.size());
}

TEST(CheckpointStore, SaveToReplacesACheckpointFolderInOneStep) {
  fs::path dir = ScratchDir("manual") / "my_checkpoint";
  llvm::Expected<CheckpointStore> store = CheckpointStore::Open({"", false, std::nullopt, 5});
  ASSERT_TRUE(static_cast<bool>(store));
  State five(5), six(6);
  ASSERT_TRUE(static_cast<bool>(store->SaveTo(dir.string(), five.Files())));
  ASSERT_TRUE(static_cast<bool>(store->SaveTo(dir.string(), six.Files())));
  EXPECT_EQ(Entries(dir.parent_path()), (std::vector<std::string>{"my_checkpoint"}));
  llvm::Expected<VerifiedCheckpoint> loaded = store->Load(dir.string());
  ASSERT_TRUE(static_cast<bool>(loaded));
  EXPECT_EQ(loaded->iteration, 6u);
  EXPECT_EQ(loaded->files.at("model.bin.raw")->view(), six.model);
  EXPECT_EQ(store->iteration(), 7u);
  // A folder that is not a checkpoint is never swapped away.
  fs::path user = ScratchDir("manual_user");
  WriteText(user / "precious.txt", "keep");
  llvm::Expected<SaveResult> refused = store->SaveTo(user.string(), six.Files());
  ASSERT_FALSE(static_cast<bool>(refused));
  EXPECT_NE(llvm::toString(refused.takeError()).find("is not an Accel checkpoint"), std::string::npos);
  EXPECT_EQ(ReadText(user / "precious.txt"), "keep");
}

TEST(CheckpointStore, WarnsAboutFilesTheManifestDoesNotName) {
  fs::path project = ScratchDir("extra");
  CheckpointStore store = Open(project);
  Save(store, 0);
  WriteText(project / "checkpoints" / "checkpoint_0" / "added_later.txt", "?");
  llvm::Expected<VerifiedCheckpoint> loaded = store.LoadLatest();
  ASSERT_TRUE(static_cast<bool>(loaded));
  ASSERT_EQ(loaded->warnings.size(), 1u);
  EXPECT_NE(loaded->warnings[0].find("`added_later.txt` is not in the manifest"), std::string::npos);
  EXPECT_EQ(loaded->files.count("added_later.txt"), 0u);
}

}  // namespace
}  // namespace accel::rt::checkpoint
