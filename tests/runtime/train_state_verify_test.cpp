// load_state verifies before it restores: a flipped byte in any piece of any file of a training
// checkpoint (weights, optimizer state, RNG, JSON) stops the load; a checkpoint whose manifest
// is version 1 (one SHA-256 per file) still restores; and the optimizer state built on the
// checkpoint's mapping is private: training writes it, the files on disk stay as saved.
#include <gtest/gtest.h>

#include <ATen/ATen.h>

#include <cstring>
#include <filesystem>
#include <fstream>

#include "runtime/checkpoint/checkpoint_store.h"
#include "runtime/checkpoint/manifest.h"
#include "runtime/checkpoint/sha256.h"
#include "runtime/engine/train_state.h"
#include "runtime/model/trainer.h"
#include "tests/support/plan_builders.h"
#include "tests/unit/scratch_dir.h"

namespace accel::rt::train {
namespace {

namespace fs = std::filesystem;

std::string ReadFile(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

void FlipByte(const fs::path& path, uint64_t offset) {
  std::fstream file(path, std::ios::binary | std::ios::in | std::ios::out);
  file.seekg(static_cast<std::streamoff>(offset));
  char byte = 0;
  file.read(&byte, 1);
  file.seekp(static_cast<std::streamoff>(offset));
  byte = static_cast<char>(~byte);
  file.write(&byte, 1);
}

// An AdamW trainer after `steps` steps on random data. `width` 1024 makes the weights 16 MiB
// and the optimizer state 32 MiB: files of several manifest pieces.
std::unique_ptr<Trainer> Trained(int64_t width, int steps, uint64_t seed) {
  at::manual_seed(seed);
  plan::TrainLoop loop;
  loop.optimizer = plan::AdamW{1e-3, 0.9, 0.999, 1e-8, 0.01};
  std::unique_ptr<Trainer> trainer = MakeTrainer(testing::Mlp(width, {2 * width}, width), loop);
  for (int i = 0; i < steps; ++i) {
    trainer->ForwardBackward(at::randn({2, width}), at::randn({2, width}));
    trainer->OptimizerStep();
  }
  return trainer;
}

// Saves `trainer` as checkpoint_0 of a fresh project `name`; returns the checkpoint folder.
fs::path Save(const Trainer& trainer, const std::string& name) {
  fs::path project = accel::testing::ScratchDir(name);
  llvm::Expected<checkpoint::CheckpointStore> store =
      checkpoint::CheckpointStore::Open({project.string(), true, std::nullopt, 0});
  EXPECT_TRUE(static_cast<bool>(store));
  llvm::Expected<std::unique_ptr<StateFiles>> files =
      EncodeTrainingState(trainer, {1, 2, 0, 2}, {CaptureRngState()}, 3);
  EXPECT_TRUE(static_cast<bool>(files)) << llvm::toString(files.takeError());
  llvm::Expected<checkpoint::SaveResult> saved = store->Save((*files)->files());
  EXPECT_TRUE(static_cast<bool>(saved)) << llvm::toString(saved.takeError());
  return saved ? fs::path(saved->path) : fs::path();
}

llvm::Expected<checkpoint::VerifiedCheckpoint> Load(const fs::path& checkpoint) {
  llvm::Expected<checkpoint::CheckpointStore> store = checkpoint::CheckpointStore::Open(
      {checkpoint.parent_path().parent_path().string(), true, std::nullopt, 0});
  EXPECT_TRUE(static_cast<bool>(store));
  return store->LoadLatest();
}

bool SameBits(const at::Tensor& a, const at::Tensor& b) {
  return a.sizes() == b.sizes() && a.scalar_type() == b.scalar_type() &&
         std::memcmp(a.data_ptr(), b.data_ptr(), a.numel() * a.element_size()) == 0;
}

// Every parameter and every optimizer state tensor of `a` and `b` equal bit for bit.
void ExpectSameState(const Trainer& a, const Trainer& b) {
  auto pa = a.NamedParameters(), pb = b.NamedParameters();
  ASSERT_EQ(pa.size(), pb.size());
  for (size_t i = 0; i < pa.size(); ++i) EXPECT_TRUE(SameBits(pa[i].second, pb[i].second)) << pa[i].first;
  OptimizerState oa = a.ExportOptimizerState(), ob = b.ExportOptimizerState();
  ASSERT_EQ(oa.parameters.size(), ob.parameters.size());
  for (size_t i = 0; i < oa.parameters.size(); ++i) {
    ASSERT_EQ(oa.parameters[i].tensors.size(), ob.parameters[i].tensors.size());
    for (size_t k = 0; k < oa.parameters[i].tensors.size(); ++k) {
      EXPECT_TRUE(SameBits(oa.parameters[i].tensors[k].second, ob.parameters[i].tensors[k].second))
          << oa.parameters[i].name << "." << oa.parameters[i].tensors[k].first;
    }
  }
}

// Without verification of every piece, some of these loads would hand corrupted weights or
// optimizer state to training.
TEST(TrainStateVerify, AFlippedByteInAnyPieceOfAnyFileStopsTheLoad) {
  std::unique_ptr<Trainer> trainer = Trained(1024, 1, 1);
  fs::path checkpoint = Save(*trainer, "flip");
  ASSERT_TRUE(static_cast<bool>(Load(checkpoint)));
  int flips = 0;
  for (const fs::directory_entry& entry : fs::directory_iterator(checkpoint)) {
    std::string name = entry.path().filename().string();
    if (name == checkpoint::kManifestName) continue;
    uint64_t size = fs::file_size(entry.path());
    // One byte in every piece (the first and the last byte of the file among them).
    std::vector<uint64_t> offsets{0, size - 1};
    for (uint64_t piece = 0; piece * checkpoint::kManifestChunkSize < size; ++piece) {
      offsets.push_back(std::min(size - 1, piece * checkpoint::kManifestChunkSize + 4097));
    }
    for (uint64_t offset : offsets) {
      FlipByte(entry.path(), offset);
      llvm::Expected<checkpoint::VerifiedCheckpoint> loaded = Load(checkpoint);
      ASSERT_FALSE(static_cast<bool>(loaded)) << name << ": byte " << offset << " flipped, yet it loaded";
      std::string error = llvm::toString(loaded.takeError());
      EXPECT_NE(error.find("`" + name + "` has sha256"), std::string::npos) << error;
      FlipByte(entry.path(), offset);
      ++flips;
    }
  }
  EXPECT_GE(flips, 20);  // model: 3 pieces, optimizer: 5, four JSON files, the RNG state
  llvm::Expected<checkpoint::VerifiedCheckpoint> restored = Load(checkpoint);
  EXPECT_TRUE(static_cast<bool>(restored)) << llvm::toString(restored.takeError());
}

TEST(TrainStateVerify, RestoresACheckpointWhoseManifestIsVersion1) {
  std::unique_ptr<Trainer> original = Trained(64, 2, 1);
  fs::path checkpoint = Save(*original, "version1");
  // The manifest as Accel wrote it before version 2: one SHA-256 per whole file.
  std::string text =
      "{\n  \"format\": \"accel-checkpoint\",\n  \"version\": 1,\n  \"iteration\": 0,\n  \"files\": {";
  std::vector<std::string> names;
  for (const fs::directory_entry& entry : fs::directory_iterator(checkpoint)) {
    if (entry.path().filename() != checkpoint::kManifestName)
      names.push_back(entry.path().filename().string());
  }
  std::sort(names.begin(), names.end());
  for (size_t i = 0; i < names.size(); ++i) {
    std::string bytes = ReadFile(checkpoint / names[i]);
    text += (i ? ",\n    \"" : "\n    \"") + names[i] + "\": {\"size\": " + std::to_string(bytes.size()) +
            ", \"sha256\": \"" + checkpoint::Sha256Hex(bytes) + "\"}";
  }
  text += "\n  }\n}\n";
  std::ofstream(checkpoint / std::string(checkpoint::kManifestName), std::ios::binary | std::ios::trunc)
      << text;

  std::unique_ptr<Trainer> resumed = Trained(64, 0, 2);
  {
    llvm::Expected<checkpoint::VerifiedCheckpoint> loaded = Load(checkpoint);
    ASSERT_TRUE(static_cast<bool>(loaded)) << llvm::toString(loaded.takeError());
    llvm::Expected<Progress> progress = RestoreTrainingState(*loaded, *resumed, 0, 1, 3);
    ASSERT_TRUE(static_cast<bool>(progress)) << llvm::toString(progress.takeError());
  }
  ExpectSameState(*original, *resumed);

  FlipByte(checkpoint / "optimizer.safetensors", 200);
  llvm::Expected<checkpoint::VerifiedCheckpoint> flipped = Load(checkpoint);
  ASSERT_FALSE(static_cast<bool>(flipped));
  EXPECT_NE(llvm::toString(flipped.takeError()).find("`optimizer.safetensors` has sha256"),
            std::string::npos);
}

// The optimizer state lives on the checkpoint's copy-on-write mapping: the steps after a resume
// write it, and neither the files nor a later load of them may see those writes.
TEST(TrainStateVerify, TrainingAfterALoadLeavesTheCheckpointAsSaved) {
  std::unique_ptr<Trainer> original = Trained(64, 2, 1);
  fs::path checkpoint = Save(*original, "private");
  std::string saved = ReadFile(checkpoint / "optimizer.safetensors");
  std::unique_ptr<Trainer> resumed = Trained(64, 0, 2);
  {
    llvm::Expected<checkpoint::VerifiedCheckpoint> loaded = Load(checkpoint);
    ASSERT_TRUE(static_cast<bool>(loaded)) << llvm::toString(loaded.takeError());
    ASSERT_TRUE(static_cast<bool>(RestoreTrainingState(*loaded, *resumed, 0, 1, 3)));
  }
  at::manual_seed(5);
  at::Tensor features = at::randn({2, 64}), targets = at::randn({2, 64});
  for (Trainer* trainer : {original.get(), resumed.get()}) {
    trainer->ForwardBackward(features, targets);
    trainer->OptimizerStep();
  }
  ExpectSameState(*original, *resumed);  // the adopted state was written like an allocated one
  EXPECT_TRUE(ReadFile(checkpoint / "optimizer.safetensors") == saved);
  llvm::Expected<checkpoint::VerifiedCheckpoint> again = Load(checkpoint);
  EXPECT_TRUE(static_cast<bool>(again)) << llvm::toString(again.takeError());
}

}  // namespace
}  // namespace accel::rt::train
