#ifndef ACCEL_RUNTIME_DATA_COLUMNS_H_
#define ACCEL_RUNTIME_DATA_COLUMNS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "llvm/Support/Error.h"
#include "runtime/checkpoint/dtype.h"
#include "runtime/data/dataset.h"

// Datasets of named columns, for models that compute their own loss from a batch of named
// tensors (`input_ids`, `attention_mask`, `labels`). Every column has the same number of rows
// along dimension 0. Integer and bool columns keep their dtype, as Python's DataLoader keeps
// NumPy's; floating ones become float32, the dtype of the model's parameters.
namespace accel::rt::data {

// Ragged columns (rows of different lengths) are stored as Arrow and Hugging Face datasets
// store lists: the rows' values concatenated along the first dimension under the column's
// name, and beside them `<name>.offsets`, an integer array of N + 1 entries where row i is
// values[offsets[i], offsets[i + 1]) (a tensor `<name>.offsets` in a safetensors file,
// `<name>.offsets.npy` in a directory of .npy files). An offsets array is never a column of its
// own. Errors name the offsets file or tensor: not 1-D integer, not starting at 0, decreasing,
// not ending at the number of values, a row count other columns do not have.
inline constexpr const char* kOffsetsSuffix = ".offsets";

// The tensors `names` of a safetensors file, in that order, or every tensor in the file's
// (sorted) order when `names` is empty. Errors name the file and the column: a missing tensor
// (with a did-you-mean), a 0-dim tensor, columns of different lengths, an empty file.
llvm::Expected<Dataset> LoadSafetensorsColumns(const std::string& path,
                                               const std::vector<std::string>& names);

// `<dir>/<name>.npy` for each of `names`, in that order, or every `.npy` file of `dir` in name
// order when `names` is empty. Errors as LoadSafetensorsColumns's, and those of the `.npy`
// reader (runtime/data/array_files.h).
llvm::Expected<Dataset> LoadNpyColumns(const std::string& dir, const std::vector<std::string>& names);

// `dataset` collated with `padding` (Dataset::Collate), after checking it against the columns:
// every `padding.values` column exists (a fixed-shape one is allowed: it needs no padding),
// `multiple_of` is at least 1, `attention_mask_from` names a ragged column and no column is
// called `attention_mask` already, and the ragged columns of `same_length` have rows as long as
// each other's (token ids and their per-token labels). Errors start with `where`, the dataset's
// file or directory, and name the column (and for lengths, the first row that differs).
llvm::Expected<Dataset> WithPadding(Dataset dataset, Padding padding,
                                    const std::vector<std::string>& same_length, const std::string& where);

// A flat little-endian file of token ids of `dtype` (U8, U16, I16, I32 or I64 of the dtype
// table), cut into consecutive windows of `block_size`: column `input_ids` holds tokens
// [k·block_size, (k+1)·block_size) and column `targets` the same window one token later, both
// int64 [windows, block_size]. T tokens give (T - 1) / block_size windows; the tokens after the
// last window are not used. Errors: a file size that is not a whole number of tokens, fewer
// than block_size + 1 tokens, a negative id, a dtype that is not an integer one.
llvm::Expected<Dataset> LoadTokenStream(const std::string& path, checkpoint::Dtype dtype, int64_t block_size);

// The names of the token stream's columns.
inline constexpr const char* kTokenInputs = "input_ids";
inline constexpr const char* kTokenTargets = "targets";

}  // namespace accel::rt::data

#endif  // ACCEL_RUNTIME_DATA_COLUMNS_H_
