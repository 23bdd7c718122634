#ifndef ACCEL_RUNTIME_DATA_DATASET_H_
#define ACCEL_RUNTIME_DATA_DATASET_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <ATen/core/Tensor.h>

#include "llvm/Support/Error.h"

// In-memory, map-style datasets: every sample is a row of `features` and the same row of
// `targets`, or (for a model that computes its own loss) the same row of each named column.
// Every rank loads the whole dataset; runtime/data/sampler.h decides which rows each rank
// trains on.
namespace accel::rt::data {

// A named column: one row per sample along dimension 0 (a window of token ids, a mask, a label).
// A ragged column (rows of different lengths, as Arrow and Hugging Face datasets store lists)
// keeps every row's values concatenated along dimension 0 and `offsets`, int64 [N + 1]: row i
// is values[offsets[i], offsets[i + 1]). Collation (Dataset::Collate) pads its rows into
// [B, L, ...]; a batch never holds a ragged column.
struct Column {
  std::string name;
  at::Tensor values;
  // Undefined for a fixed-shape column.
  at::Tensor offsets;

  bool ragged() const { return offsets.defined(); }
  int64_t rows() const { return ragged() ? offsets.size(0) - 1 : values.size(0); }
};
using Columns = std::vector<Column>;

// Where padding goes: after a row's values (right, the default of Hugging Face's tokenizers) or
// before them (left, pad_across_processes' `pad_first`).
enum class PadSide { kRight, kLeft };

// How a batch's ragged columns are padded (Hugging Face's DataCollatorWithPadding, with
// DataCollatorForSeq2Seq's per-column pad value).
struct Padding {
  // The pad value of a column; a ragged column not listed pads with 0.
  std::vector<std::pair<std::string, int64_t>> values;
  // Each ragged column of a batch is padded to its longest row there, rounded up to a multiple
  // of this.
  int64_t multiple_of = 1;
  PadSide side = PadSide::kRight;
  // If not empty: the ragged column whose row lengths make an int64 `attention_mask` column
  // (1 over a row's values, 0 over its padding), appended after the dataset's columns.
  std::string attention_mask_from;

  // The pad value of `column`.
  int64_t ValueOf(const std::string& column) const;
};

// The name of the column Padding::attention_mask_from makes.
inline constexpr const char* kAttentionMask = "attention_mask";

struct Dataset {
  // float32 [N, F]; undefined for a dataset of named columns.
  at::Tensor features;
  // float32 [N, O] for regression, int64 [N] for class labels; undefined with named columns.
  at::Tensor targets;
  // Named columns of N rows each (runtime/data/columns.h); empty for features and targets.
  Columns columns;
  // How Collate pads the ragged columns.
  Padding padding;

  int64_t size() const {
    if (features.defined()) return features.size(0);
    return columns.empty() ? 0 : columns.front().rows();
  }
  // Rows [start, start + length) of every tensor, as contiguous copies (ragged columns keep
  // their rows' values and offsets rebased to 0), with the same padding.
  Dataset Rows(int64_t start, int64_t length) const;
  // The batch of named columns of rows `indices` (each in [0, size())), in that order: fixed
  // columns' rows copied, ragged ones padded as `padding` says, and the attention mask when
  // it asks for one (runtime/data/collate.cpp). Integer and bool columns keep their dtype.
  Columns Collate(const std::vector<int64_t>& indices) const;
  // Collate of rows [start, start + length).
  Columns CollateRows(int64_t start, int64_t length) const;
};

enum class TargetKind {
  kRegression,   // targets become float32 [N, O]
  kClassLabels,  // targets become int64 [N]; the source values must be integers
};

// Reads a comma-separated file whose first line is a header naming the columns; every other
// non-blank line holds one number per column (surrounding spaces allowed, no quoting).
// `feature_columns` empty means every column that is not a target, in file order. Class
// labels need exactly one target column holding integers. Errors are
// `path:line:column: message; hint`: unreadable or empty file, a missing or duplicate column
// name (with a did-you-mean), a row with the wrong number of cells, a cell that is not a
// number (or not an integer label), no data rows.
llvm::Expected<Dataset> LoadCsv(const std::string& path, const std::vector<std::string>& feature_columns,
                                const std::vector<std::string>& target_columns, TargetKind kind);

// Reads two NumPy `.npy` files (format versions 1, 2 and 3): features must be 2-D
// [N, F]; regression targets 1-D [N] (becoming [N, 1]) or 2-D [N, O]; class labels 1-D [N] (or
// [N, 1]) of an integer or bool dtype. Element types: little-endian `<f2 <f4 <f8 <i1 <i2 <i4 <i8`
// and `|u1 |i1 |b1`, C order. Errors name the file: not an `.npy` file, a
// truncated file, Fortran order, big-endian, object or structured dtypes, wrong ranks,
// different row counts.
llvm::Expected<Dataset> LoadNpy(const std::string& features_path, const std::string& targets_path,
                                TargetKind kind);

// The shape of one `.npy` file, from its header alone (the file is mapped, its data not read);
// the errors LoadNpy gives for a bad header.
llvm::Expected<std::vector<int64_t>> ReadNpyShape(const std::string& path);

// Reads tensors `features_key` and `targets_key` from one safetensors file (validated by
// runtime/checkpoint/safetensors.h), with the shape rules of LoadNpy. Floating dtypes (F16,
// BF16, F32, F64) and integer ones are accepted for features; class labels need an integer or
// BOOL dtype. Errors name the file and the key (a missing key gets a did-you-mean).
llvm::Expected<Dataset> LoadSafetensors(const std::string& path, const std::string& features_key,
                                        const std::string& targets_key, TargetKind kind);

// The regression set y = X·W + noise·ε the quickstart trains on, bit-identical to what
// runtime/train/synthetic_data.cpp generated: X [samples, features] and W [features, outputs]
// (scaled by 1/sqrt(features)) are standard normal, ε too, all drawn from one CPU generator
// seeded with `seed` mixed with a stream tag. Pure function of its arguments.
Dataset GenerateSyntheticRegression(int64_t samples, int64_t features, int64_t outputs, double noise,
                                    int64_t seed);

}  // namespace accel::rt::data

#endif  // ACCEL_RUNTIME_DATA_DATASET_H_
