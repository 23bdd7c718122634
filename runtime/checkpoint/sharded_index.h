#ifndef ACCEL_RUNTIME_CHECKPOINT_SHARDED_INDEX_H_
#define ACCEL_RUNTIME_CHECKPOINT_SHARDED_INDEX_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "llvm/Support/Error.h"
#include "runtime/checkpoint/manifest.h"

// The JSON files of a sharded checkpoint. The index (`sharded_state.index.json`, docs/checkpoints.md): for
// every tensor its full shape and dtype, and which rank's file holds which range of its
// flattened elements. Written by rank 0 once every rank has written its slices; read by every
// resharding load and by `accelrun consolidate`.
namespace accel::rt::checkpoint {

inline constexpr std::string_view kShardedIndexName = "sharded_state.index.json";
inline constexpr std::string_view kShardedIndexFormat = "accel-sharded-state";
inline constexpr uint64_t kShardedIndexVersion = 1;

// The two kinds of sharded state: each has its own file per rank and its own index section.
enum class ShardedKind : uint8_t { kModel, kOptimizer };
inline constexpr ShardedKind kShardedKinds[] = {ShardedKind::kModel, ShardedKind::kOptimizer};

// `model` or `optimizer`: the index section and the stem of the rank files.
std::string_view KindName(ShardedKind kind);

// Elements [start, end) of a tensor, stored as a 1-D tensor of the tensor's name in `file`.
struct SlicePlacement {
  std::string file;
  uint64_t start = 0;
  uint64_t end = 0;
};

struct ShardedTensor {
  std::string dtype;  // safetensors dtype string, byte-sized
  std::vector<int64_t> shape;
  // The non-empty slices, ordered by `start`; they tile [0, ElementCount(shape)) exactly.
  std::vector<SlicePlacement> slices;
};

struct ShardedIndex {
  uint32_t world_size = 0;
  std::map<std::string, ShardedTensor> model;
  std::map<std::string, ShardedTensor> optimizer;

  std::map<std::string, ShardedTensor>& tensors(ShardedKind kind) {
    return kind == ShardedKind::kModel ? model : optimizer;
  }
  const std::map<std::string, ShardedTensor>& tensors(ShardedKind kind) const {
    return kind == ShardedKind::kModel ? model : optimizer;
  }
};

// The element count of `shape`, or empty when a dimension is negative or the product overflows.
std::optional<uint64_t> ElementCount(const std::vector<int64_t>& shape);

// Sorts `tensor.slices` by start and checks that they tile the tensor: the first starts at 0,
// each starts where the previous ended, the last ends at the element count, and none is empty.
// Fails naming the tensor (`what`, e.g. "model tensor `0.weight`"), the elements that no slice
// holds or that two slices hold, and the files involved.
llvm::Error SortAndCheckTiling(ShardedTensor& tensor, const std::string& what);

// The index as JSON (indent 2, keys sorted, trailing newline).
std::string EncodeShardedIndex(const ShardedIndex& index);

// Reads an index EncodeShardedIndex wrote; `path` names it in errors. Fails on anything else:
// another format or a newer version, a dtype that is unknown or not byte-sized, a file name
// that is not a plain name, and slices that do not tile their tensor (SortAndCheckTiling).
llvm::Expected<ShardedIndex> ParseShardedIndex(std::string_view text, const std::string& path);

inline constexpr std::string_view kRankRecordFormat = "accel-sharded-rank";

// What one rank wrote (RankRecordName in sharded_state.h): the slices it holds, empty ones
// included (they carry the tensor's shape and dtype), and its files as the manifest records
// them, so rank 0 writes the manifest without reading the other ranks' bytes again.
struct RankRecord {
  struct Slice {
    std::string dtype;
    std::vector<int64_t> shape;
    uint64_t start = 0;
    uint64_t end = 0;
  };
  uint32_t rank = 0;
  uint32_t world_size = 0;
  uint64_t chunk_size = kManifestChunkSize;
  std::vector<ManifestEntry> files;
  std::map<std::string, Slice> model;
  std::map<std::string, Slice> optimizer;

  std::map<std::string, Slice>& slices(ShardedKind kind) {
    return kind == ShardedKind::kModel ? model : optimizer;
  }
  const std::map<std::string, Slice>& slices(ShardedKind kind) const {
    return kind == ShardedKind::kModel ? model : optimizer;
  }
};

// The record as JSON (indent 2, keys sorted, trailing newline).
std::string EncodeRankRecord(const RankRecord& record);

// Reads a record EncodeRankRecord wrote; `path` names it in errors. Fails on another format,
// a non-integer or missing field, a dtype that is not byte-sized, or a file without
// ChunkCount(size, chunk_size) digests.
llvm::Expected<RankRecord> ParseRankRecord(std::string_view text, const std::string& path);

}  // namespace accel::rt::checkpoint

#endif  // ACCEL_RUNTIME_CHECKPOINT_SHARDED_INDEX_H_
