#include "runtime/data/columns.h"

#include <ATen/ATen.h>
#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <filesystem>

#include "llvm/ADT/StringRef.h"
#include "runtime/data/array_files.h"
#include "runtime/support/error.h"
#include "runtime/tensor/scalar_type.h"

namespace accel::rt::data {
namespace {

// Where a column's row count comes from, for messages: its shape, or its offsets.
std::string RowsText(const Column& column) {
  if (column.ragged()) return fmt::format("offsets of {} entries", column.offsets.size(0));
  return fmt::format("shape {}", ShapeText(column.values.sizes()));
}

// The offsets of a ragged column, read from `offsets_where`, as int64 [N + 1]: 0 first, never
// decreasing, ending at the number of values `values_where` holds.
llvm::Expected<at::Tensor> CheckOffsets(at::Tensor offsets, const at::Tensor& values,
                                        const std::string& offsets_where, const std::string& values_where) {
  if (offsets.dim() != 1 || !at::isIntegralType(offsets.scalar_type(), /*includeBool=*/false)) {
    return Fail(fmt::format(
        "{}: offsets must be a 1-D integer array of rows + 1 entries, found {} of shape {}; write "
        "numpy.cumsum([0] + lengths) as int64",
        offsets_where, tensor::TorchName(offsets.scalar_type()), ShapeText(offsets.sizes())));
  }
  if (offsets.size(0) < 2) {
    return Fail(fmt::format("{}: {} offsets describe no row; N rows need N + 1 offsets, starting at 0",
                            offsets_where, offsets.size(0)));
  }
  if (values.dim() == 0) {
    return Fail(
        fmt::format("{}: a ragged column needs its rows' values concatenated along the first dimension, "
                    "found a single value",
                    values_where));
  }
  offsets = offsets.to(at::kLong).contiguous();
  const int64_t* at = offsets.data_ptr<int64_t>();
  if (at[0] != 0) {
    return Fail(fmt::format("{}: the first offset is {}; row 0 starts at value 0", offsets_where, at[0]));
  }
  for (int64_t row = 0; row + 1 < offsets.size(0); ++row) {
    if (at[row + 1] < at[row]) {
      return Fail(fmt::format("{}: offsets decrease at row {} (from {} to {}); offsets must never decrease",
                              offsets_where, row, at[row], at[row + 1]));
    }
  }
  int64_t last = at[offsets.size(0) - 1];
  if (last != values.size(0)) {
    return Fail(
        fmt::format("{}: the last offset is {} but {} holds {} values along its first dimension; the "
                    "last offset is the number of values",
                    offsets_where, last, values_where, values.size(0)));
  }
  return offsets;
}

// Checks that the columns make a dataset (one row per sample in each, as many in all) and
// casts floating ones to float32. `where` names the source in errors.
llvm::Expected<Dataset> Assemble(Columns columns, const std::string& where) {
  if (columns.empty()) return Fail(fmt::format("{}: no columns to read; it holds no arrays", where));
  for (Column& column : columns) {
    if (column.values.dim() == 0) {
      return Fail(
          fmt::format("{}: column `{}` is a single value; a column needs one row per sample along its first "
                      "dimension",
                      where, column.name));
    }
    if (column.rows() != columns.front().rows()) {
      return Fail(fmt::format(
          "{}: column `{}` has {} rows ({}) but column `{}` has {} ({}); every column needs one row per "
          "sample",
          where, column.name, column.rows(), RowsText(column), columns.front().name, columns.front().rows(),
          RowsText(columns.front())));
    }
    if (at::isFloatingType(column.values.scalar_type())) column.values = column.values.to(at::kFloat);
    column.values = column.values.contiguous();
  }
  if (columns.front().rows() == 0) return Fail(fmt::format("{}: the columns have no rows", where));
  Dataset dataset;
  dataset.columns = std::move(columns);
  return dataset;
}

// The ids of a token file as int64, from elements of type T.
template <typename T>
at::Tensor Widen(std::string_view bytes) {
  int64_t count = static_cast<int64_t>(bytes.size() / sizeof(T));
  at::Tensor ids = at::empty({count}, at::kLong);
  int64_t* out = ids.data_ptr<int64_t>();
  for (int64_t i = 0; i < count; ++i) {
    T value;
    std::memcpy(&value, bytes.data() + i * sizeof(T), sizeof(T));
    out[i] = static_cast<int64_t>(value);
  }
  return ids;
}

}  // namespace

llvm::Expected<Dataset> LoadSafetensorsColumns(const std::string& path,
                                               const std::vector<std::string>& names) {
  llvm::Expected<checkpoint::SafetensorsFile> file = checkpoint::SafetensorsFile::Read(path);
  if (!file) return file.takeError();
  std::vector<std::string> wanted = names;
  if (wanted.empty()) {
    for (const auto& [name, info] : file->tensors()) {
      if (!llvm::StringRef(name).endswith(kOffsetsSuffix)) wanted.push_back(name);
    }
  }
  Columns columns;
  for (const std::string& name : wanted) {
    llvm::Expected<at::Tensor> tensor = ReadSafetensorsTensor(*file, path, name);
    if (!tensor) return tensor.takeError();
    Column column{name, *tensor, {}};
    const std::string offsets_key = name + kOffsetsSuffix;
    if (file->tensors().count(offsets_key) != 0) {
      llvm::Expected<at::Tensor> offsets = ReadSafetensorsTensor(*file, path, offsets_key);
      if (!offsets) return offsets.takeError();
      llvm::Expected<at::Tensor> checked =
          CheckOffsets(*offsets, *tensor, fmt::format("{}: tensor `{}`", path, offsets_key),
                       fmt::format("tensor `{}`", name));
      if (!checked) return checked.takeError();
      column.offsets = *checked;
    }
    columns.push_back(std::move(column));
  }
  return Assemble(std::move(columns), path);
}

llvm::Expected<Dataset> LoadNpyColumns(const std::string& dir, const std::vector<std::string>& names) {
  namespace fs = std::filesystem;
  std::error_code error;
  std::vector<std::string> present;
  for (const fs::directory_entry& entry : fs::directory_iterator(dir, error)) {
    std::string stem = entry.path().stem().string();
    // `<name>.offsets.npy` makes `<name>` ragged; it is not a column of its own.
    if (entry.path().extension() == ".npy" && !llvm::StringRef(stem).endswith(kOffsetsSuffix)) {
      present.push_back(stem);
    }
  }
  if (error) return Fail(fmt::format("{}: cannot list the directory: {}", dir, error.message()));
  std::sort(present.begin(), present.end());
  std::vector<std::string> wanted = names.empty() ? present : names;
  Columns columns;
  for (const std::string& name : wanted) {
    if (std::find(present.begin(), present.end(), name) == present.end()) {
      return Fail(fmt::format("{}: no file `{}.npy` for column `{}`{}", dir, name, name,
                              Suggest(name, present, "columns")));
    }
    const std::string values_path = (fs::path(dir) / (name + ".npy")).string();
    llvm::Expected<at::Tensor> array = ReadNpy(values_path);
    if (!array) return array.takeError();
    Column column{name, *array, {}};
    const std::string offsets_path = (fs::path(dir) / (name + kOffsetsSuffix + ".npy")).string();
    std::error_code missing;
    if (fs::exists(offsets_path, missing)) {
      llvm::Expected<at::Tensor> offsets = ReadNpy(offsets_path);
      if (!offsets) return offsets.takeError();
      llvm::Expected<at::Tensor> checked = CheckOffsets(*offsets, *array, offsets_path, values_path);
      if (!checked) return checked.takeError();
      column.offsets = *checked;
    }
    columns.push_back(std::move(column));
  }
  return Assemble(std::move(columns), dir);
}

llvm::Expected<Dataset> WithPadding(Dataset dataset, Padding padding,
                                    const std::vector<std::string>& same_length, const std::string& where) {
  std::vector<std::string> names;
  for (const Column& column : dataset.columns) names.push_back(column.name);
  auto find = [&](const std::string& name) -> const Column* {
    for (const Column& column : dataset.columns) {
      if (column.name == name) return &column;
    }
    return nullptr;
  };
  for (const auto& [name, value] : padding.values) {
    if (find(name) == nullptr) {
      return Fail(fmt::format("{}: `pad_values` names column `{}`, which the dataset does not have{}", where,
                              name, Suggest(name, names, "columns")));
    }
  }
  if (padding.multiple_of < 1) {
    return Fail(
        fmt::format("{}: `pad_to_multiple_of = {}`; it must be at least 1", where, padding.multiple_of));
  }
  if (!padding.attention_mask_from.empty()) {
    const Column* source = find(padding.attention_mask_from);
    if (source == nullptr || !source->ragged()) {
      return Fail(fmt::format(
          "{}: `attention_mask_from` names `{}`, {}; it needs a ragged column (one with offsets){}", where,
          padding.attention_mask_from,
          source == nullptr ? "which the dataset does not have" : "which has no offsets",
          source == nullptr ? Suggest(padding.attention_mask_from, names, "columns") : ""));
    }
    if (find(kAttentionMask) != nullptr) {
      return Fail(
          fmt::format("{}: the dataset has a column `{}` already; drop `attention_mask_from`, or that "
                      "column",
                      where, kAttentionMask));
    }
  }
  const Column* first = nullptr;
  for (const std::string& name : same_length) {
    const Column* column = find(name);
    if (column == nullptr || !column->ragged()) {
      return Fail(fmt::format(
          "{}: `same_length` names `{}`, {}; it lists ragged columns (ones with offsets){}", where, name,
          column == nullptr ? "which the dataset does not have" : "which has no offsets",
          column == nullptr ? Suggest(name, names, "columns") : ""));
    }
    if (first == nullptr) {
      first = column;
      continue;
    }
    at::Tensor lengths = column->offsets.diff();
    at::Tensor expected = first->offsets.diff();
    if (at::Tensor differ = lengths.ne(expected).nonzero(); differ.size(0) > 0) {
      int64_t row = differ[0][0].item<int64_t>();
      return Fail(
          fmt::format("{}: row {} of column `{}` has {} values but the same row of `{}` has {}; "
                      "`same_length` needs them as long as each other",
                      where, row, column->name, lengths[row].item<int64_t>(), first->name,
                      expected[row].item<int64_t>()));
    }
  }
  dataset.padding = std::move(padding);
  return dataset;
}

llvm::Expected<Dataset> LoadTokenStream(const std::string& path, checkpoint::Dtype dtype,
                                        int64_t block_size) {
  const checkpoint::DtypeInfo& info = checkpoint::Info(dtype);
  llvm::Expected<std::unique_ptr<llvm::MemoryBuffer>> buffer = ReadFile(path);
  if (!buffer) return buffer.takeError();
  std::string_view bytes((*buffer)->getBufferStart(), (*buffer)->getBufferSize());
  // One reader per integer type; the table's width checks the file holds whole tokens.
  at::Tensor (*widen)(std::string_view) = nullptr;
  switch (dtype) {
    case checkpoint::Dtype::kU8:
      widen = Widen<uint8_t>;
      break;
    case checkpoint::Dtype::kU16:
      widen = Widen<uint16_t>;
      break;
    case checkpoint::Dtype::kI16:
      widen = Widen<int16_t>;
      break;
    case checkpoint::Dtype::kI32:
      widen = Widen<int32_t>;
      break;
    case checkpoint::Dtype::kI64:
      widen = Widen<int64_t>;
      break;
    default:
      return Fail(fmt::format("{}: token ids of dtype {} cannot be read; write uint16 or int32 ids", path,
                              info.name));
  }
  const size_t width = info.file_bits / 8;
  if (bytes.size() % width != 0) {
    return Fail(fmt::format(
        "{}: {} bytes is not a whole number of {} tokens ({} bytes each); was the file written with another "
        "dtype?",
        path, bytes.size(), info.name, width));
  }
  at::Tensor ids = widen(bytes);
  const int64_t tokens = ids.size(0);
  if (tokens < block_size + 1) {
    return Fail(fmt::format(
        "{}: {} tokens make no window: one needs block_size {} tokens and the token after them; lower "
        "`block_size` or use a longer file",
        path, tokens, block_size));
  }
  if (at::Tensor negative = ids.lt(0).nonzero(); negative.size(0) > 0) {
    int64_t position = negative[0][0].item<int64_t>();
    return Fail(fmt::format("{}: token {} has the negative id {}; ids index a vocabulary from 0", path,
                            position, ids[position].item<int64_t>()));
  }
  const int64_t windows = (tokens - 1) / block_size;
  Dataset dataset;
  dataset.columns.push_back(
      {kTokenInputs, ids.narrow(0, 0, windows * block_size).view({windows, block_size}), {}});
  dataset.columns.push_back(
      {kTokenTargets, ids.narrow(0, 1, windows * block_size).contiguous().view({windows, block_size}), {}});
  return dataset;
}

}  // namespace accel::rt::data
