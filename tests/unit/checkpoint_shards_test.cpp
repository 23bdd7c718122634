// Sharded weights (catalog §7.4) and the loader for the four layouts of catalog §6.4,
// including hostile indexes: path traversal, absolute paths, missing shards, a tensor in two
// shards. Each rejection must name the file and say what is wrong.
#include <gtest/gtest.h>

#include "tests/unit/scratch_dir.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "runtime/checkpoint/shards.h"
#include "tests/support/weights.h"

namespace accel::rt::checkpoint {
namespace {

namespace fs = std::filesystem;

using accel::testing::ScratchDir;

void WriteText(const fs::path& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
}

std::string ReadText(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

std::vector<TensorRef> Tensors(const std::vector<std::pair<std::string, size_t>>& sizes,
                               std::vector<std::string>& storage) {
  storage.clear();
  storage.reserve(sizes.size());
  std::vector<TensorRef> tensors;
  for (const auto& [name, size] : sizes) {
    storage.emplace_back(size, static_cast<char>('a' + storage.size()));
    tensors.push_back({name, "U8", {static_cast<int64_t>(size)}, storage.back()});
  }
  return tensors;
}

std::vector<std::vector<size_t>> Groups(const std::vector<ShardPlan>& plan) {
  std::vector<std::vector<size_t>> out;
  for (const ShardPlan& shard : plan) out.push_back(shard.tensors);
  return out;
}

TEST(ShardPlan, FillsGreedilyInTheOrderGiven) {
  std::vector<std::string> storage;
  auto tensors = Tensors({{"z", 40}, {"a", 40}, {"m", 30}, {"b", 50}, {"c", 10}}, storage);
  std::vector<ShardPlan> plan = PlanShards(tensors, 100);
  EXPECT_EQ(Groups(plan), (std::vector<std::vector<size_t>>{{0, 1}, {2, 3, 4}}));
  EXPECT_EQ(plan[0].file_name, "model-00001-of-00002.safetensors");
  EXPECT_EQ(plan[1].file_name, "model-00002-of-00002.safetensors");
  EXPECT_EQ(plan[1].bytes, 90u);
}

TEST(ShardPlan, GivesATensorOverTheLimitAShardOfItsOwnAheadOfTheOpenShard) {
  // huggingface_hub appends the big tensor's shard at once and keeps filling the open one.
  std::vector<std::string> storage;
  auto tensors = Tensors({{"a", 10}, {"big", 500}, {"c", 10}, {"d", 95}}, storage);
  EXPECT_EQ(Groups(PlanShards(tensors, 100)), (std::vector<std::vector<size_t>>{{1}, {0, 2}, {3}}));
}

TEST(ShardPlan, OneShardIsNamedLikeASingleFile) {
  std::vector<std::string> storage;
  auto tensors = Tensors({{"a", 10}, {"b", 10}}, storage);
  std::vector<ShardPlan> plan = PlanShards(tensors, 100);
  ASSERT_EQ(plan.size(), 1u);
  EXPECT_EQ(plan[0].file_name, "model.safetensors");
  ASSERT_EQ(PlanShards({}, 100).size(), 1u);  // nothing to save still writes one valid file
  EXPECT_EQ(PlanShards(tensors, 10, "adapter")[1].file_name, "adapter-00002-of-00002.safetensors");
}

TEST(ShardIndex, IsByteIdenticalToPythonJsonDumps) {
  std::vector<std::string> storage;
  auto tensors = Tensors({{"b", 6}, {"a", 4}, {"caf\xc3\xa9\xf0\x9f\x98\x80", 4}}, storage);
  std::vector<ShardPlan> plan = PlanShards(tensors, 8);
  ASSERT_EQ(plan.size(), 2u);
  // Printed by /usr/bin/python3: json.dumps(index, indent=2, sort_keys=True) + "\n".
  EXPECT_EQ(EncodeShardIndex(tensors, plan),
            "{\n  \"metadata\": {\n    \"total_size\": 14\n  },\n  \"weight_map\": {\n"
            "    \"a\": \"model-00002-of-00002.safetensors\",\n"
            "    \"b\": \"model-00001-of-00002.safetensors\",\n"
            "    \"caf\\u00e9\\ud83d\\ude00\": \"model-00002-of-00002.safetensors\"\n  }\n}\n");
}

TEST(ShardedSave, RoundTripsThroughTheIndexAndTheFolder) {
  fs::path dir = ScratchDir("roundtrip");
  std::vector<std::string> storage;
  auto tensors = Tensors({{"layer.0", 300}, {"layer.1", 300}, {"layer.2", 300}, {"head", 1000}}, storage);
  ASSERT_FALSE(static_cast<bool>(SaveShardedSafetensors(dir.string(), tensors, 1000)));
  EXPECT_TRUE(fs::exists(dir / "model-00001-of-00002.safetensors"));
  EXPECT_TRUE(fs::exists(dir / "model-00002-of-00002.safetensors"));
  EXPECT_FALSE(fs::exists(dir / "model.safetensors"));
  for (std::string path : {dir.string(), (dir / "model.safetensors.index.json").string()}) {
    llvm::Expected<Weights> weights = Weights::Load(path);
    ASSERT_TRUE(static_cast<bool>(weights)) << llvm::toString(weights.takeError());
    EXPECT_EQ(weights->names(), (std::vector<std::string>{"head", "layer.0", "layer.1", "layer.2"}));
    EXPECT_EQ(weights->files().size(), 2u);
    for (size_t i = 0; i < tensors.size(); ++i) EXPECT_EQ(weights->Find(tensors[i].name).bytes, storage[i]);
  }
}

TEST(ShardedSave, RemovesWhatAnEarlierSaveLeft) {
  fs::path dir = ScratchDir("stale");
  std::vector<std::string> storage;
  auto three = Tensors({{"a", 100}, {"b", 100}, {"c", 100}}, storage);
  ASSERT_FALSE(static_cast<bool>(SaveShardedSafetensors(dir.string(), three, 100)));
  EXPECT_TRUE(fs::exists(dir / "model-00003-of-00003.safetensors"));
  WriteText(dir / "notes.txt", "kept");
  ASSERT_FALSE(static_cast<bool>(SaveShardedSafetensors(dir.string(), three, 200)));
  EXPECT_FALSE(fs::exists(dir / "model-00003-of-00003.safetensors"));
  EXPECT_FALSE(fs::exists(dir / "model-00001-of-00003.safetensors"));
  ASSERT_FALSE(static_cast<bool>(SaveShardedSafetensors(dir.string(), three, 1000)));
  EXPECT_FALSE(fs::exists(dir / "model.safetensors.index.json"));
  EXPECT_FALSE(fs::exists(dir / "model-00001-of-00002.safetensors"));
  EXPECT_TRUE(fs::exists(dir / "model.safetensors"));
  EXPECT_EQ(ReadText(dir / "notes.txt"), "kept");
}

TEST(ShardedSave, RejectsADuplicateNameAcrossShards) {
  std::vector<std::string> storage;
  auto tensors = Tensors({{"a", 100}, {"b", 100}, {"a", 100}}, storage);
  llvm::Expected<EncodedShards> shards = EncodeShards(tensors, 100);
  ASSERT_FALSE(static_cast<bool>(shards));
  EXPECT_NE(llvm::toString(shards.takeError()).find("tensor `a`: duplicate"), std::string::npos);
}

std::string LoadError(const fs::path& path) {
  llvm::Expected<Weights> weights = Weights::Load(path.string());
  if (weights) return "";
  return llvm::toString(weights.takeError());
}

// A two-shard folder to damage: a in shard 1, b in shard 2.
fs::path TwoShards(const std::string& name) {
  fs::path dir = ScratchDir(name);
  std::vector<std::string> storage;
  auto tensors = Tensors({{"a", 8}, {"b", 8}}, storage);
  EXPECT_FALSE(static_cast<bool>(SaveShardedSafetensors(dir.string(), tensors, 8)));
  return dir;
}

void WriteIndex(const fs::path& dir, const std::string& weight_map) {
  WriteText(dir / "model.safetensors.index.json",
            R"({"metadata": {"total_size": 16}, "weight_map": {)" + weight_map + "}}");
}

TEST(WeightsLayouts, ReadsASingleFileAndAFolderWithOne) {
  fs::path dir = ScratchDir("single");
  std::string bytes = "12345678";
  ASSERT_FALSE(
      static_cast<bool>(WriteSafetensors((dir / "model.safetensors").string(), {{"w", "F32", {2}, bytes}})));
  for (fs::path path : {dir, dir / "model.safetensors"}) {
    llvm::Expected<Weights> weights = Weights::Load(path.string());
    ASSERT_TRUE(static_cast<bool>(weights)) << llvm::toString(weights.takeError());
    EXPECT_EQ(weights->Find("w").bytes, bytes);
    EXPECT_EQ(weights->Find("w").info->shape, (std::vector<int64_t>{2}));
    EXPECT_EQ(weights->Find("nothing").info, nullptr);
  }
}

TEST(WeightsLayouts, ReadsAnIndexWithAnotherNameAndTheLegacyForm) {
  fs::path dir = TwoShards("legacy");
  fs::remove(dir / "model.safetensors.index.json");
  WriteText(dir / "weights.index.json",
            R"({"a": "model-00001-of-00002.safetensors", "b": "model-00002-of-00002.safetensors"})");
  EXPECT_EQ(LoadError(dir), "");
}

TEST(WeightsLayouts, RejectsPicklesWithAClearReason) {
  fs::path dir = ScratchDir("pickle");
  WriteText(dir / "pytorch_model.bin", "PK\x03\x04");
  EXPECT_NE(LoadError(dir).find("pytorch_model.bin, a torch pickle"), std::string::npos);
  EXPECT_NE(LoadError(dir / "pytorch_model.bin").find("torch pickle"), std::string::npos);
}

TEST(WeightsLayouts, RejectsAFolderWithoutWeightsOrWithTwoIndexes) {
  fs::path dir = ScratchDir("empty");
  EXPECT_NE(LoadError(dir).find("no model.safetensors and no *.index.json"), std::string::npos);
  EXPECT_NE(LoadError(dir / "missing").find("no such file or folder"), std::string::npos);
  fs::path two = TwoShards("two_indexes");
  fs::copy_file(two / "model.safetensors.index.json", two / "other.index.json");
  EXPECT_NE(LoadError(two).find("2 index files"), std::string::npos);
}

TEST(HostileIndex, RejectsPathTraversal) {
  fs::path dir = TwoShards("traversal");
  WriteText(dir.parent_path() / "x", "outside");
  WriteIndex(dir, R"("a": "../../x", "b": "model-00002-of-00002.safetensors")");
  std::string error = LoadError(dir);
  EXPECT_NE(error.find("model.safetensors.index.json: weight_map.`a`: shard `../../x`"), std::string::npos)
      << error;
  EXPECT_NE(error.find("path traversal"), std::string::npos) << error;
  WriteIndex(dir, R"("a": "..", "b": "model-00002-of-00002.safetensors")");
  EXPECT_NE(LoadError(dir).find("path traversal"), std::string::npos);
}

TEST(HostileIndex, RejectsAbsolutePathsAndSubfolders) {
  fs::path dir = TwoShards("absolute");
  WriteIndex(dir, R"("a": "/etc/passwd", "b": "model-00002-of-00002.safetensors")");
  EXPECT_NE(LoadError(dir).find("shard `/etc/passwd` is an absolute path"), std::string::npos);
  WriteIndex(dir, R"("a": "sub/model.safetensors", "b": "model-00002-of-00002.safetensors")");
  EXPECT_NE(LoadError(dir).find("subfolder"), std::string::npos);
  WriteIndex(dir, R"("a": "", "b": "model-00002-of-00002.safetensors")");
  EXPECT_NE(LoadError(dir).find("empty file name"), std::string::npos);
}

TEST(HostileIndex, RejectsAMissingShard) {
  fs::path dir = TwoShards("missing");
  fs::remove(dir / "model-00002-of-00002.safetensors");
  std::string error = LoadError(dir);
  EXPECT_NE(error.find("shard `model-00002-of-00002.safetensors` (listed for `b`) does not exist"),
            std::string::npos)
      << error;
}

TEST(HostileIndex, RejectsATensorInTwoShards) {
  fs::path dir = TwoShards("two_shards");
  // Shard 2 now holds `a` as well as shard 1.
  std::string bytes(8, 'q');
  ASSERT_FALSE(static_cast<bool>(WriteSafetensors((dir / "model-00002-of-00002.safetensors").string(),
                                                  {{"a", "U8", {8}, bytes}, {"b", "U8", {8}, bytes}})));
  std::string error = LoadError(dir);
  EXPECT_NE(error.find("tensor `a` is in two shards, `model-00001-of-00002.safetensors` and "
                       "`model-00002-of-00002.safetensors`"),
            std::string::npos)
      << error;
}

TEST(HostileIndex, RejectsATensorListedTwiceInTheIndex) {
  fs::path dir = TwoShards("listed_twice");
  WriteIndex(dir, R"("a": "model-00001-of-00002.safetensors", "b": "model-00002-of-00002.safetensors",)"
                  R"( "a": "model-00002-of-00002.safetensors")");
  EXPECT_NE(LoadError(dir).find("duplicate key \"a\" (a tensor listed twice"), std::string::npos);
}

TEST(HostileIndex, RejectsAnIndexThatDisagreesWithItsShards) {
  fs::path dir = TwoShards("disagree");
  WriteIndex(dir, R"("a": "model-00002-of-00002.safetensors", "b": "model-00002-of-00002.safetensors")");
  EXPECT_NE(LoadError(dir).find(
                "the index places `a` in `model-00002-of-00002.safetensors`, which does not hold it"),
            std::string::npos);
  // Shard 2 gains a tensor the index does not know.
  std::string bytes(8, 'q');
  ASSERT_FALSE(static_cast<bool>(WriteSafetensors((dir / "model-00002-of-00002.safetensors").string(),
                                                  {{"b", "U8", {8}, bytes}, {"c", "U8", {8}, bytes}})));
  WriteIndex(dir, R"("a": "model-00001-of-00002.safetensors", "b": "model-00002-of-00002.safetensors")");
  EXPECT_NE(
      LoadError(dir).find("tensor `c` is in shard `model-00002-of-00002.safetensors` but not in the index"),
      std::string::npos);
  WriteIndex(dir, R"("a": "model-00001-of-00002.safetensors", "b": 7)");
  EXPECT_NE(LoadError(dir).find("weight_map.`b` is not a file name string"), std::string::npos);
}

TEST(HostileIndex, RejectsAShardThatIsNotValidSafetensors) {
  fs::path dir = TwoShards("bad_shard");
  WriteText(dir / "model-00002-of-00002.safetensors", std::string("\0\0\0\0\0\0\0\x80", 8));
  std::string error = LoadError(dir);
  EXPECT_NE(error.find("shard `model-00002-of-00002.safetensors`"), std::string::npos) << error;
  EXPECT_NE(error.find("ST-002"), std::string::npos) << error;
}

}  // namespace
}  // namespace accel::rt::checkpoint
