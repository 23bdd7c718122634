#include "runtime/data/columns.h"

#include <ATen/ATen.h>
#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <filesystem>

#include "runtime/data/array_files.h"
#include "runtime/support/error.h"

namespace accel::rt::data {
namespace {

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
    if (column.values.size(0) != columns.front().values.size(0)) {
      return Fail(fmt::format(
          "{}: column `{}` has {} rows (shape {}) but column `{}` has {} (shape {}); every column needs one "
          "row per sample",
          where, column.name, column.values.size(0), ShapeText(column.values.sizes()), columns.front().name,
          columns.front().values.size(0), ShapeText(columns.front().values.sizes())));
    }
    if (at::isFloatingType(column.values.scalar_type())) column.values = column.values.to(at::kFloat);
    column.values = column.values.contiguous();
  }
  if (columns.front().values.size(0) == 0) return Fail(fmt::format("{}: the columns have no rows", where));
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
    for (const auto& [name, info] : file->tensors()) wanted.push_back(name);
  }
  Columns columns;
  for (const std::string& name : wanted) {
    llvm::Expected<at::Tensor> tensor = ReadSafetensorsTensor(*file, path, name);
    if (!tensor) return tensor.takeError();
    columns.push_back({name, *tensor});
  }
  return Assemble(std::move(columns), path);
}

llvm::Expected<Dataset> LoadNpyColumns(const std::string& dir, const std::vector<std::string>& names) {
  namespace fs = std::filesystem;
  std::error_code error;
  std::vector<std::string> present;
  for (const fs::directory_entry& entry : fs::directory_iterator(dir, error)) {
    if (entry.path().extension() == ".npy") present.push_back(entry.path().stem().string());
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
    llvm::Expected<at::Tensor> array = ReadNpy((fs::path(dir) / (name + ".npy")).string());
    if (!array) return array.takeError();
    columns.push_back({name, *array});
  }
  return Assemble(std::move(columns), dir);
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
      {kTokenInputs, ids.narrow(0, 0, windows * block_size).view({windows, block_size})});
  dataset.columns.push_back(
      {kTokenTargets, ids.narrow(0, 1, windows * block_size).contiguous().view({windows, block_size})});
  return dataset;
}

}  // namespace accel::rt::data
