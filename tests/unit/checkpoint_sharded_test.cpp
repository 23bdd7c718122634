// Sharded checkpoints (SHARDED_STATE_DICT): ranks each write their slices, rank 0 finishes
// with the index and the manifest, and any other number of ranks reads its own ranges back.
// The ranks are simulated in one process; tests/runtime/checkpoint_crash_test.py kills real
// writer processes in the middle of sharded saves.
#include <gtest/gtest.h>

#include "tests/unit/scratch_dir.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>

#include "runtime/checkpoint/checkpoint_store.h"
#include "runtime/checkpoint/manifest.h"
#include "runtime/checkpoint/sharded_index.h"
#include "runtime/checkpoint/sharded_reader.h"
#include "runtime/checkpoint/sharded_state.h"

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

// One whole tensor of the state, its bytes distinct per tensor, element and step.
struct WholeTensor {
  ShardedKind kind;
  std::string name;
  std::string dtype;
  std::vector<int64_t> shape;
  std::string bytes;
  uint64_t count() const { return *ElementCount(shape); }
  size_t element() const { return DtypeSize(dtype); }
};

std::vector<WholeTensor> State(uint64_t step) {
  std::vector<WholeTensor> tensors = {
      {ShardedKind::kModel, "0.weight", "F32", {4, 3}, ""},
      {ShardedKind::kModel, "0.bias", "F32", {4}, ""},
      {ShardedKind::kModel, "1.weight", "BF16", {2, 5}, ""},
      {ShardedKind::kModel, "empty", "F32", {0, 3}, ""},
      {ShardedKind::kModel, "steps", "I64", {3}, ""},
      {ShardedKind::kOptimizer, "state.0.weight.exp_avg", "F32", {4, 3}, ""},
      {ShardedKind::kOptimizer, "state.0.weight.exp_avg_sq", "F32", {4, 3}, ""},
  };
  for (size_t t = 0; t < tensors.size(); ++t) {
    WholeTensor& tensor = tensors[t];
    tensor.bytes.resize(tensor.count() * tensor.element());
    for (size_t i = 0; i < tensor.bytes.size(); ++i) {
      tensor.bytes[i] = static_cast<char>((step * 131 + t * 37 + i * 7 + 1) & 0xff);
    }
  }
  return tensors;
}

// FSDP's layout: each kind's tensors flattened back to back, the whole split into `world`
// nearly equal contiguous ranges; rank r holds the part of each tensor inside its range
// (empty for most, a tensor split across ranks for some).
std::vector<std::pair<uint64_t, uint64_t>> RankRanges(const std::vector<WholeTensor>& state, ShardedKind kind,
                                                      uint32_t rank, uint32_t world) {
  uint64_t total = 0;
  for (const WholeTensor& t : state) total += t.kind == kind ? t.count() : 0;
  uint64_t per_rank = (total + world - 1) / world;
  uint64_t from = std::min(total, rank * per_rank), to = std::min(total, (rank + 1) * per_rank);
  std::vector<std::pair<uint64_t, uint64_t>> ranges;
  uint64_t offset = 0;
  for (const WholeTensor& t : state) {
    if (t.kind != kind) {
      ranges.emplace_back(0, 0);
      continue;
    }
    uint64_t start = std::clamp(from, offset, offset + t.count()) - offset;
    uint64_t end = std::clamp(to, offset, offset + t.count()) - offset;
    ranges.emplace_back(start, end);
    offset += t.count();
  }
  return ranges;
}

RankSlices SlicesOf(const std::vector<WholeTensor>& state, uint32_t rank, uint32_t world) {
  RankSlices slices;
  for (ShardedKind kind : kShardedKinds) {
    std::vector<std::pair<uint64_t, uint64_t>> ranges = RankRanges(state, kind, rank, world);
    for (size_t t = 0; t < state.size(); ++t) {
      const WholeTensor& tensor = state[t];
      if (tensor.kind != kind) continue;
      auto [start, end] = ranges[t];
      std::string_view bytes =
          std::string_view(tensor.bytes).substr(start * tensor.element(), (end - start) * tensor.element());
      (kind == ShardedKind::kModel ? slices.model : slices.optimizer)
          .push_back({tensor.name, tensor.dtype, tensor.shape, start, end, bytes});
    }
  }
  return slices;
}

CheckpointStore Open(const fs::path& project, uint64_t iteration = 0) {
  llvm::Expected<CheckpointStore> store =
      CheckpointStore::Open({project.string(), true, std::nullopt, iteration});
  EXPECT_TRUE(static_cast<bool>(store));
  return std::move(*store);
}

// Every rank writes, then rank 0 finishes; returns the finished checkpoint's path.
std::string SaveSharded(CheckpointStore& store, const std::vector<WholeTensor>& state, uint32_t world,
                        const std::string& extra = "{\"type\": \"adamw\"}\n") {
  for (uint32_t rank = 0; rank < world; ++rank) {
    llvm::Error error = WriteRankSlices(store.ShardedStagingDir(), rank, world, SlicesOf(state, rank, world));
    EXPECT_FALSE(error) << llvm::toString(std::move(error));
  }
  llvm::Expected<SaveResult> result = store.FinishSharded(world, {{"optimizer.json", {extra}}});
  EXPECT_TRUE(static_cast<bool>(result)) << llvm::toString(result.takeError());
  return result ? result->path : "";
}

// Loads the newest checkpoint as `new_world` ranks would: each reads its own ranges of every
// tensor, and the ranges put back together must be the saved bytes.
void ExpectReadsBackOn(const VerifiedCheckpoint& checkpoint, const std::vector<WholeTensor>& state,
                       uint32_t new_world) {
  llvm::Expected<ShardedStateReader> reader = ShardedStateReader::Open(checkpoint);
  ASSERT_TRUE(static_cast<bool>(reader)) << llvm::toString(reader.takeError());
  std::vector<std::string> assembled(state.size());
  for (uint32_t rank = 0; rank < new_world; ++rank) {
    for (ShardedKind kind : kShardedKinds) {
      std::vector<std::pair<uint64_t, uint64_t>> ranges = RankRanges(state, kind, rank, new_world);
      for (size_t t = 0; t < state.size(); ++t) {
        if (state[t].kind != kind) continue;
        llvm::Expected<std::string> bytes =
            reader->ReadRange(kind, state[t].name, ranges[t].first, ranges[t].second);
        ASSERT_TRUE(static_cast<bool>(bytes)) << llvm::toString(bytes.takeError());
        EXPECT_EQ(bytes->size(), (ranges[t].second - ranges[t].first) * state[t].element());
        assembled[t] += *bytes;
      }
    }
  }
  for (size_t t = 0; t < state.size(); ++t) {
    EXPECT_EQ(assembled[t], state[t].bytes) << state[t].name << " read back on " << new_world << " ranks";
  }
}

TEST(ShardedCheckpoint, SavedOnFourRanksReadsBackOnFourTwoThreeAndOne) {
  fs::path project = ScratchDir("sharded_reshard");
  CheckpointStore store = Open(project);
  std::vector<WholeTensor> state = State(0);
  std::string path = SaveSharded(store, state, 4);
  EXPECT_EQ(store.iteration(), 1u);
  llvm::Expected<VerifiedCheckpoint> checkpoint = Open(project).LoadLatest();
  ASSERT_TRUE(static_cast<bool>(checkpoint)) << llvm::toString(checkpoint.takeError());
  EXPECT_EQ(checkpoint->path, path);
  EXPECT_TRUE(IsShardedCheckpoint(*checkpoint));
  EXPECT_TRUE(checkpoint->warnings.empty());
  for (uint32_t world : {4u, 2u, 3u, 1u}) ExpectReadsBackOn(*checkpoint, state, world);
}

TEST(ShardedCheckpoint, EveryRankFileIsInTheManifestAndTheIndex) {
  fs::path project = ScratchDir("sharded_manifest");
  CheckpointStore store = Open(project);
  std::vector<WholeTensor> state = State(0);
  std::string path = SaveSharded(store, state, 4);
  llvm::Expected<Manifest> manifest = ParseManifest(ReadText(fs::path(path) / kManifestName), path);
  ASSERT_TRUE(static_cast<bool>(manifest)) << llvm::toString(manifest.takeError());
  std::set<std::string> named;
  for (const ManifestEntry& entry : manifest->files) {
    named.insert(entry.name);
    EXPECT_EQ(entry.size, fs::file_size(fs::path(path) / entry.name)) << entry.name;
  }
  for (uint32_t rank = 0; rank < 4; ++rank) {
    EXPECT_EQ(named.count(RankShardFileName(ShardedKind::kModel, rank, 4)), 1u);
    EXPECT_EQ(named.count(RankShardFileName(ShardedKind::kOptimizer, rank, 4)), 1u);
    EXPECT_EQ(named.count(RankRecordName(rank, 4)), 1u);
  }
  EXPECT_EQ(named.count(std::string(kShardedIndexName)), 1u);
  EXPECT_EQ(named.count("optimizer.json"), 1u);
  EXPECT_EQ(named.size(), 3u * 4u + 2u);
  EXPECT_EQ(RankShardFileName(ShardedKind::kModel, 0, 4), "model_shard-00001-of-00004.safetensors");

  llvm::Expected<ShardedIndex> index =
      ParseShardedIndex(ReadText(fs::path(path) / kShardedIndexName), std::string(kShardedIndexName));
  ASSERT_TRUE(static_cast<bool>(index)) << llvm::toString(index.takeError());
  EXPECT_EQ(index->world_size, 4u);
  const ShardedTensor& weight = index->model.at("0.weight");
  EXPECT_EQ(weight.dtype, "F32");
  EXPECT_EQ(weight.shape, (std::vector<int64_t>{4, 3}));
  // 29 model elements over 4 ranks: 8 each, so `0.weight` (elements 0..12) is split between
  // ranks 0 and 1, and `1.weight` (16..26) between ranks 2 and 3.
  ASSERT_EQ(weight.slices.size(), 2u);
  EXPECT_EQ(weight.slices[0].file, "model_shard-00001-of-00004.safetensors");
  EXPECT_EQ(weight.slices[0].end, 8u);
  EXPECT_EQ(weight.slices[1].file, "model_shard-00002-of-00004.safetensors");
  EXPECT_EQ(weight.slices[1].end, 12u);
  const ShardedTensor& split = index->model.at("1.weight");
  ASSERT_EQ(split.slices.size(), 2u);
  EXPECT_EQ(split.slices[0].file, "model_shard-00003-of-00004.safetensors");
  EXPECT_EQ(split.slices[0].end, 8u);
  EXPECT_EQ(split.slices[1].start, 8u);
  EXPECT_EQ(split.slices[1].file, "model_shard-00004-of-00004.safetensors");
  EXPECT_TRUE(index->model.at("empty").slices.empty());
  EXPECT_EQ(index->optimizer.size(), 2u);
  // The index reads back as written.
  EXPECT_EQ(EncodeShardedIndex(*index), ReadText(fs::path(path) / kShardedIndexName));
}

TEST(ShardedCheckpoint, RangesAcrossSliceBoundariesAndEmptyRangesRead) {
  fs::path project = ScratchDir("sharded_ranges");
  CheckpointStore store = Open(project);
  std::vector<WholeTensor> state = State(3);
  SaveSharded(store, state, 4);
  llvm::Expected<VerifiedCheckpoint> checkpoint = Open(project).LoadLatest();
  ASSERT_TRUE(static_cast<bool>(checkpoint));
  llvm::Expected<ShardedStateReader> reader = ShardedStateReader::Open(*checkpoint);
  ASSERT_TRUE(static_cast<bool>(reader)) << llvm::toString(reader.takeError());
  const WholeTensor& split = state[2];  // `1.weight`, BF16, split at element 8
  for (uint64_t start = 0; start <= 10; ++start) {
    for (uint64_t end = start; end <= 10; ++end) {
      llvm::Expected<std::string> bytes = reader->ReadRange(ShardedKind::kModel, split.name, start, end);
      ASSERT_TRUE(static_cast<bool>(bytes)) << llvm::toString(bytes.takeError());
      EXPECT_EQ(*bytes, split.bytes.substr(start * 2, (end - start) * 2)) << start << ".." << end;
    }
  }
  llvm::Expected<std::vector<std::string_view>> views = reader->Views(ShardedKind::kModel, split.name, 6, 10);
  ASSERT_TRUE(static_cast<bool>(views));
  EXPECT_EQ(views->size(), 2u);  // one view per slice overlapped, no copy
  std::string out(4 * 2, '\0');
  ASSERT_FALSE(static_cast<bool>(reader->CopyRange(ShardedKind::kModel, split.name, 6, 10, {out.data(), out.size()})));
  EXPECT_EQ(out, split.bytes.substr(12, 8));
  llvm::Error wrong_size = reader->CopyRange(ShardedKind::kModel, split.name, 6, 9, {out.data(), out.size()});
  ASSERT_TRUE(static_cast<bool>(wrong_size));
  EXPECT_NE(llvm::toString(std::move(wrong_size)).find("6 bytes, the destination has 8"), std::string::npos);
  llvm::Expected<std::string> outside = reader->ReadRange(ShardedKind::kModel, split.name, 5, 11);
  ASSERT_FALSE(static_cast<bool>(outside));
  EXPECT_NE(llvm::toString(outside.takeError()).find("has 10 elements; range 5..11 is not inside it"),
            std::string::npos);
  llvm::Expected<std::string> unknown = reader->ReadRange(ShardedKind::kOptimizer, "0.weight", 0, 1);
  ASSERT_FALSE(static_cast<bool>(unknown));
  EXPECT_NE(llvm::toString(unknown.takeError()).find("no optimizer tensor `0.weight`"), std::string::npos);
}

TEST(ShardedCheckpoint, FlippedByteInAnyRankFileFallsBackToThePreviousCheckpoint) {
  for (uint32_t rank = 0; rank < 4; ++rank) {
    for (ShardedKind kind : kShardedKinds) {
      fs::path project = ScratchDir("sharded_flip");
      CheckpointStore store = Open(project);
      std::string first = SaveSharded(store, State(0), 4);
      std::string second = SaveSharded(store, State(1), 4);
      fs::path file = fs::path(second) / RankShardFileName(kind, rank, 4);
      std::string bytes = ReadText(file);
      ASSERT_GT(bytes.size(), 8u);
      bytes[bytes.size() - 1] ^= 0x01;  // a tensor byte, or the header's padding when empty
      WriteText(file, bytes);
      llvm::Expected<VerifiedCheckpoint> loaded = Open(project).LoadLatest();
      ASSERT_TRUE(static_cast<bool>(loaded)) << llvm::toString(loaded.takeError());
      EXPECT_EQ(loaded->path, first) << file;
      ASSERT_EQ(loaded->warnings.size(), 1u);
      EXPECT_NE(loaded->warnings[0].find(RankShardFileName(kind, rank, 4) + "` has sha256"),
                std::string::npos)
          << loaded->warnings[0];
      ExpectReadsBackOn(*loaded, State(0), 2);
    }
  }
}

TEST(ShardedCheckpoint, ARankThatDidNotWriteStopsTheFinishAndThePreviousCheckpointLoads) {
  fs::path project = ScratchDir("sharded_missing_rank");
  CheckpointStore store = Open(project);
  std::string first = SaveSharded(store, State(0), 4);
  std::vector<WholeTensor> state = State(1);
  for (uint32_t rank = 0; rank < 3; ++rank) {
    ASSERT_FALSE(
        static_cast<bool>(WriteRankSlices(store.ShardedStagingDir(), rank, 4, SlicesOf(state, rank, 4))));
  }
  std::string staging = store.ShardedStagingDir();
  llvm::Expected<SaveResult> result = store.FinishSharded(4, {});
  ASSERT_FALSE(static_cast<bool>(result));
  EXPECT_NE(
      llvm::toString(result.takeError()).find("rank 3 of 4 left no `sharded_state.rank-00004-of-00004.json`"),
      std::string::npos);
  EXPECT_FALSE(fs::exists(staging));  // a retry starts clean
  EXPECT_FALSE(fs::exists(project / "checkpoints" / "checkpoint_1"));
  EXPECT_EQ(store.iteration(), 1u);
  llvm::Expected<VerifiedCheckpoint> loaded = Open(project).LoadLatest();
  ASSERT_TRUE(static_cast<bool>(loaded));
  EXPECT_EQ(loaded->path, first);
}

// Rank 0's finish, with every rank's slices given explicitly; returns the error text or "".
std::string FinishWith(const fs::path& project, const std::vector<RankSlices>& ranks) {
  CheckpointStore store = Open(project);
  for (uint32_t rank = 0; rank < ranks.size(); ++rank) {
    llvm::Error error = WriteRankSlices(store.ShardedStagingDir(), rank, ranks.size(), ranks[rank]);
    if (error) return llvm::toString(std::move(error));
  }
  llvm::Expected<SaveResult> result = store.FinishSharded(ranks.size(), {});
  return result ? "" : llvm::toString(result.takeError());
}

TEST(ShardedCheckpoint, FinishRefusesRangesThatDoNotTile) {
  std::string data(40, 'x');
  auto slice = [&](uint64_t start, uint64_t end) {
    return TensorSlice{"w", "F32", {10}, start, end, std::string_view(data).substr(0, (end - start) * 4)};
  };
  fs::path project = ScratchDir("sharded_tiling");
  EXPECT_EQ(FinishWith(project, {{{slice(0, 6)}, {}}, {{slice(6, 10)}, {}}}), "");
  std::string overlap =
      FinishWith(ScratchDir("sharded_overlap"), {{{slice(0, 6)}, {}}, {{slice(5, 10)}, {}}});
  EXPECT_NE(
      overlap.find("model tensor `w`: elements 5..6 are in two slices: "
                   "`model_shard-00001-of-00002.safetensors` and `model_shard-00002-of-00002.safetensors`"),
      std::string::npos)
      << overlap;
  std::string gap = FinishWith(ScratchDir("sharded_gap"), {{{slice(0, 4)}, {}}, {{slice(6, 10)}, {}}});
  EXPECT_NE(gap.find("elements 4..6 are in no slice"), std::string::npos) << gap;
  std::string short_end = FinishWith(ScratchDir("sharded_short"), {{{slice(0, 4)}, {}}, {{slice(4, 9)}, {}}});
  EXPECT_NE(short_end.find("elements 9..10 of 10 are in no slice"), std::string::npos) << short_end;
  std::string late_start =
      FinishWith(ScratchDir("sharded_late"), {{{slice(1, 4)}, {}}, {{slice(4, 10)}, {}}});
  EXPECT_NE(late_start.find("elements 0..1 are in no slice"), std::string::npos) << late_start;
  // Two ranks that disagree about the tensor itself.
  TensorSlice other = slice(6, 10);
  other.shape = {2, 5};
  std::string shapes = FinishWith(ScratchDir("sharded_shapes"), {{{slice(0, 6)}, {}}, {{other}, {}}});
  EXPECT_NE(shapes.find("model tensor `w` is F32 [10] on rank 0 but F32 [2,5] on rank 1"), std::string::npos)
      << shapes;
  EXPECT_FALSE(fs::exists(ScratchDir() / "sharded_overlap" / "checkpoints" / "checkpoint_0"));
}

TEST(ShardedCheckpoint, WriteRankSlicesRefusesSlicesThatDoNotMatchTheirTensor) {
  std::string data(40, 'x');
  std::string dir = (ScratchDir("sharded_refusals") / "stage").string();
  auto refusal = [&](const TensorSlice& slice, uint32_t rank = 0, uint32_t world = 1) {
    llvm::Error error = WriteRankSlices(dir, rank, world, RankSlices{{slice}, {}});
    return error ? llvm::toString(std::move(error)) : "";
  };
  EXPECT_EQ(refusal({"w", "F32", {10}, 0, 10, data}), "");
  EXPECT_NE(refusal({"w", "F32", {10}, 0, 9, data}).find("40 bytes for 9 elements of F32"),
            std::string::npos);
  EXPECT_NE(refusal({"w", "F32", {10}, 8, 11, std::string_view(data).substr(0, 12)})
                .find("range 8..11 is not inside the tensor's 10 elements"),
            std::string::npos);
  EXPECT_NE(refusal({"w", "I4", {10}, 0, 10, data}).find("not byte-sized"), std::string::npos);
  EXPECT_NE(refusal({"w", "F32", {10}, 0, 10, data}, 1, 1).find("below the world size"), std::string::npos);
  llvm::Error twice =
      WriteRankSlices(dir, 0, 1,
                      RankSlices{{{"w", "F32", {10}, 0, 5, std::string_view(data).substr(0, 20)},
                                  {"w", "F32", {10}, 5, 10, std::string_view(data).substr(0, 20)}},
                                 {}});
  ASSERT_TRUE(static_cast<bool>(twice));
  EXPECT_NE(llvm::toString(std::move(twice)).find("model tensor `w`: given twice"), std::string::npos);
}

TEST(ShardedCheckpoint, WhatACrashedAttemptLeftInTheStagingFolderIsNotPartOfTheCheckpoint) {
  fs::path project = ScratchDir("sharded_stale");
  CheckpointStore store = Open(project);
  std::vector<WholeTensor> state = State(0);
  // A crashed attempt on 8 ranks left some of its files and a half-written manifest.
  for (uint32_t rank = 0; rank < 3; ++rank) {
    ASSERT_FALSE(
        static_cast<bool>(WriteRankSlices(store.ShardedStagingDir(), rank, 8, SlicesOf(state, rank, 8))));
  }
  WriteText(fs::path(store.ShardedStagingDir()) / kManifestName, "{\"format\": ");
  std::string path = SaveSharded(store, state, 2);
  llvm::Expected<VerifiedCheckpoint> loaded = Open(project).LoadLatest();
  ASSERT_TRUE(static_cast<bool>(loaded)) << llvm::toString(loaded.takeError());
  EXPECT_TRUE(loaded->warnings.empty()) << loaded->warnings[0];
  EXPECT_FALSE(fs::exists(fs::path(path) / RankRecordName(0, 8)));
  EXPECT_EQ(loaded->files.size(), 3u * 2u + 2u);
  ExpectReadsBackOn(*loaded, state, 1);
}

TEST(ShardedCheckpoint, ManualNamingSwapsTheFinishedFolderIn) {
  fs::path root = ScratchDir("sharded_manual");
  llvm::Expected<CheckpointStore> store = CheckpointStore::Open({root.string(), false, std::nullopt, 0});
  ASSERT_TRUE(static_cast<bool>(store));
  std::string directory = (root / "checkpoint").string();
  for (uint64_t step = 0; step < 2; ++step) {
    std::vector<WholeTensor> state = State(step);
    for (uint32_t rank = 0; rank < 2; ++rank) {
      ASSERT_FALSE(static_cast<bool>(WriteRankSlices(CheckpointStore::ShardedStagingDirFor(directory), rank,
                                                     2, SlicesOf(state, rank, 2))));
    }
    llvm::Expected<SaveResult> result = store->FinishShardedTo(directory, 2, {});
    ASSERT_TRUE(static_cast<bool>(result)) << llvm::toString(result.takeError());
    llvm::Expected<VerifiedCheckpoint> loaded = store->Load(directory);
    ASSERT_TRUE(static_cast<bool>(loaded)) << llvm::toString(loaded.takeError());
    EXPECT_EQ(loaded->iteration, step);
    ExpectReadsBackOn(*loaded, state, 3);
  }
  EXPECT_FALSE(fs::exists(CheckpointStore::ShardedStagingDirFor(directory)));
}

TEST(ShardedCheckpoint, ReaderRefusesAnUnshardedCheckpointAndAnIndexThatDoesNotTile) {
  fs::path project = ScratchDir("sharded_reader_refusals");
  CheckpointStore store = Open(project);
  std::string plain = "plain";
  ASSERT_TRUE(static_cast<bool>(store.Save({{"model.safetensors.raw", {plain}}})));
  llvm::Expected<VerifiedCheckpoint> unsharded =
      store.Load((project / "checkpoints" / "checkpoint_0").string());
  ASSERT_TRUE(static_cast<bool>(unsharded));
  EXPECT_FALSE(IsShardedCheckpoint(*unsharded));
  llvm::Expected<ShardedStateReader> refused = ShardedStateReader::Open(*unsharded);
  ASSERT_FALSE(static_cast<bool>(refused));
  EXPECT_NE(llvm::toString(refused.takeError()).find("not a sharded checkpoint"), std::string::npos);

  std::string index = EncodeShardedIndex(ShardedIndex{
      2, {{"w", ShardedTensor{"F32", {10}, {{"a.safetensors", 0, 6}, {"b.safetensors", 7, 10}}}}}, {}});
  llvm::Expected<ShardedIndex> gap = ParseShardedIndex(index, "x.json");
  ASSERT_FALSE(static_cast<bool>(gap));
  EXPECT_NE(llvm::toString(gap.takeError()).find("x.json: model tensor `w`: elements 6..7 are in no slice"),
            std::string::npos);
  // Slices that tile past the tensor's end would say where elements it does not have are.
  std::string past_end = EncodeShardedIndex(ShardedIndex{
      2, {{"w", ShardedTensor{"F32", {10}, {{"a.safetensors", 0, 6}, {"b.safetensors", 6, 12}}}}}, {}});
  llvm::Expected<ShardedIndex> beyond = ParseShardedIndex(past_end, "x.json");
  ASSERT_FALSE(static_cast<bool>(beyond));
  EXPECT_NE(llvm::toString(beyond.takeError()).find("`b.safetensors` holds elements up to 12, but shape [10] has 10"),
            std::string::npos);
  std::string escape = EncodeShardedIndex(
      ShardedIndex{1, {{"w", ShardedTensor{"F32", {10}, {{"../a.safetensors", 0, 10}}}}}, {}});
  EXPECT_FALSE(static_cast<bool>(ParseShardedIndex(escape, "x.json")));
}

// A rank record names its rank within its world: rank == world (one past the last) is out of
// range as much as any higher rank, and a world of 0 or beyond 32 bits has no ranks.
TEST(ShardedCheckpoint, ARankRecordsRankIsWithinItsWorld) {
  auto parse = [](uint64_t rank, uint64_t world) {
    RankRecord record;
    record.world_size = 4;
    std::string text = EncodeRankRecord(record);
    auto replace = [&text](const std::string& from, const std::string& to) {
      size_t at = text.find(from);
      ASSERT_NE(at, std::string::npos) << text;
      text.replace(at, from.size(), to);
    };
    replace("\"rank\": 0", "\"rank\": " + std::to_string(rank));
    replace("\"world_size\": 4", "\"world_size\": " + std::to_string(world));
    return ParseRankRecord(text, "r.json");
  };
  for (auto [rank, world] : {std::pair<uint64_t, uint64_t>{0, 4}, {3, 4}, {0, 1}}) {
    llvm::Expected<RankRecord> good = parse(rank, world);
    ASSERT_TRUE(static_cast<bool>(good)) << rank << " of " << world << ": " << llvm::toString(good.takeError());
    EXPECT_EQ(good->rank, rank);
    EXPECT_EQ(good->world_size, world);
  }
  for (auto [rank, world] : {std::pair<uint64_t, uint64_t>{4, 4}, {5, 4}, {0, 0}, {0, uint64_t{1} << 32}}) {
    llvm::Expected<RankRecord> bad = parse(rank, world);
    ASSERT_FALSE(static_cast<bool>(bad)) << rank << " of " << world;
    EXPECT_NE(llvm::toString(bad.takeError()).find("is out of range"), std::string::npos);
  }
}

TEST(ShardedCheckpoint, ScatteredTensorsEncodeAsTheirConcatenation) {
  std::string a = "abcdefgh", b = "ijklmnop", c = "qrstuvwx";
  llvm::Expected<EncodedSafetensors> scattered = EncodeScatteredSafetensors(
      {{"x", "F32", {4}, {std::string_view(a), std::string_view(b).substr(0, 8)}}, {"y", "I16", {4}, {c}}},
      {{"format", "pt"}});
  std::string joined = a + b;
  llvm::Expected<EncodedSafetensors> whole =
      EncodeSafetensors({{"x", "F32", {4}, joined}, {"y", "I16", {4}, c}}, {{"format", "pt"}});
  ASSERT_TRUE(scattered && whole);
  std::string left, right;
  for (std::string_view part : scattered->Parts()) left += part;
  for (std::string_view part : whole->Parts()) right += part;
  EXPECT_EQ(left, right);
  llvm::Expected<EncodedSafetensors> wrong = EncodeScatteredSafetensors({{"x", "F32", {5}, {a, b}}}, {});
  ASSERT_FALSE(static_cast<bool>(wrong));
  EXPECT_NE(llvm::toString(wrong.takeError()).find("16 bytes do not match dtype F32 and shape [5]"),
            std::string::npos);
}

}  // namespace
}  // namespace accel::rt::checkpoint
