#include "runtime/data/dataset.h"

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <bit>
#include <charconv>
#include <cmath>
#include <cstring>
#include <map>
#include <memory>
#include <string_view>

#include "llvm/ADT/StringRef.h"
#include "compiler/source/named_file.h"
#include "llvm/Support/MemoryBuffer.h"
#include "runtime/checkpoint/dtype.h"
#include "runtime/checkpoint/safetensors.h"
#include "runtime/data/array_files.h"
#include "runtime/data/csv_table.h"
#include "runtime/support/error.h"
#include "runtime/support/progress.h"
#include "runtime/tensor/scalar_type.h"

namespace accel::rt::data {

// Raw file bytes are copied straight into tensors: both .npy (`<`) and safetensors are
// little-endian, like every host we run on.
static_assert(std::endian::native == std::endian::little, "the loaders assume a little-endian host");

std::string ShapeText(at::IntArrayRef shape) {
  // NumPy's spelling, which is what users see when they save the arrays.
  std::string text = "(";
  for (size_t i = 0; i < shape.size(); ++i) text += (i ? ", " : "") + std::to_string(shape[i]);
  return text + (shape.size() == 1 ? ",)" : ")");
}

namespace {

// Checks ranks, dtypes and row counts shared by the binary formats and converts to the
// Dataset's dtypes. `features_name` / `targets_name` say where each tensor came from.
llvm::Expected<Dataset> Assemble(at::Tensor features, at::Tensor targets, TargetKind kind,
                                 const std::string& features_name, const std::string& targets_name) {
  if (features.dim() != 2) {
    return Fail(
        fmt::format("{}: features must be 2-D [samples, features], found shape {}; reshape them, "
                    "e.g. `x.reshape(len(x), -1)`",
                    features_name, ShapeText(features.sizes())));
  }
  if (kind == TargetKind::kRegression) {
    if (targets.dim() == 1) targets = targets.unsqueeze(1);
    if (targets.dim() != 2) {
      return Fail(
          fmt::format("{}: regression targets must be 1-D [samples] or 2-D [samples, outputs], "
                      "found shape {}",
                      targets_name, ShapeText(targets.sizes())));
    }
    targets = targets.to(at::kFloat);
  } else {
    if (!at::isIntegralType(targets.scalar_type(), /*includeBool=*/true)) {
      return Fail(
          fmt::format("{}: class labels must have an integer dtype, found {}; save them as integers, "
                      "e.g. `y.astype(np.int64)`",
                      targets_name, std::string(c10::toString(targets.scalar_type()))));
    }
    if (targets.dim() == 2 && targets.size(1) == 1) targets = targets.reshape({targets.size(0)});
    if (targets.dim() != 1) {
      return Fail(fmt::format("{}: class labels must be 1-D [samples], found shape {}", targets_name,
                              ShapeText(targets.sizes())));
    }
    targets = targets.to(at::kLong);
  }
  if (features.size(0) != targets.size(0)) {
    return Fail(fmt::format("{} has {} rows but {} has {}; features and targets need one row per sample",
                            features_name, features.size(0), targets_name, targets.size(0)));
  }
  return Dataset{features.to(at::kFloat).contiguous(), targets.contiguous()};
}

// A dense tensor holding a copy of `bytes` (which need not be aligned).
at::Tensor TensorFromBytes(std::string_view bytes, at::IntArrayRef shape, at::ScalarType type) {
  at::Tensor tensor = at::empty(shape, type);
  if (!bytes.empty()) std::memcpy(tensor.data_ptr(), bytes.data(), bytes.size());
  return tensor;
}

}  // namespace

llvm::Expected<std::unique_ptr<llvm::MemoryBuffer>> ReadFile(const std::string& path) {
  // `/dev/zero` read until every rank ran out of memory; a FIFO would block the rank.
  if (std::string why = source::WhyNotReadable(path); !why.empty())
    return Fail(fmt::format("{}: cannot read it as data: {}", path, why));
  llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> buffer =
      llvm::MemoryBuffer::getFile(path, /*IsText=*/false, /*RequiresNullTerminator=*/false);
  if (!buffer) return Fail(fmt::format("{}: cannot read: {}", path, buffer.getError().message()));
  return std::move(*buffer);
}

llvm::Expected<Dataset> LoadCsv(const std::string& path, const std::vector<std::string>& feature_columns,
                                const std::vector<std::string>& target_columns, TargetKind kind) {
  llvm::Expected<std::unique_ptr<llvm::MemoryBuffer>> buffer = ReadFile(path);
  if (!buffer) return buffer.takeError();
  std::string_view text((*buffer)->getBufferStart(), (*buffer)->getBufferSize());
  llvm::Expected<CsvTable> table =
      ParseCsv(text, path, feature_columns, target_columns, kind == TargetKind::kClassLabels);
  if (!table) return table.takeError();
  Dataset dataset;
  dataset.features = at::from_blob(table->features.data(), {table->rows, table->num_features}, at::kFloat).clone();
  if (kind == TargetKind::kRegression) {
    dataset.targets =
        at::from_blob(table->regression_targets.data(), {table->rows, table->num_targets}, at::kFloat).clone();
  } else {
    dataset.targets = at::from_blob(table->labels.data(), {table->rows}, at::kLong).clone();
  }
  return dataset;
}

namespace {

// ---- .npy ----

struct NpyHeader {
  std::string descr;
  bool fortran_order = false;
  std::vector<int64_t> shape;
};

// The header is a Python dict literal, e.g.
// {'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }. A scanner for exactly that.
class DictScanner {
 public:
  DictScanner(std::string_view text, const std::string& path) : text_(text), path_(path) {}

  llvm::Expected<NpyHeader> Scan() {
    NpyHeader header;
    bool has_descr = false, has_fortran = false, has_shape = false;
    SkipBlanks();
    if (!Eat('{')) return Error("expected `{` at the start of the header");
    while (true) {
      SkipBlanks();
      if (Eat('}')) break;
      llvm::Expected<std::string> key = String();
      if (!key) return key.takeError();
      SkipBlanks();
      if (!Eat(':')) return Error(fmt::format("expected `:` after `'{}'`", *key));
      SkipBlanks();
      if (*key == "descr") {
        if (Peek() == '[') return Error("structured dtypes (a list of fields) are not supported");
        llvm::Expected<std::string> descr = String();
        if (!descr) return descr.takeError();
        header.descr = *descr;
        has_descr = true;
      } else if (*key == "fortran_order") {
        if (text_.substr(pos_, 4) == "True") {
          header.fortran_order = true;
          pos_ += 4;
        } else if (text_.substr(pos_, 5) == "False") {
          pos_ += 5;
        } else {
          return Error("expected `True` or `False` for `fortran_order`");
        }
        has_fortran = true;
      } else if (*key == "shape") {
        llvm::Error error = Shape(&header.shape);
        if (error) return error;
        has_shape = true;
      } else {
        return Error(fmt::format("unexpected key `{}`", *key));
      }
      SkipBlanks();
      if (!Eat(',')) {
        SkipBlanks();
        if (!Eat('}')) return Error("expected `,` or `}` in the header");
        break;
      }
    }
    if (!has_descr || !has_fortran || !has_shape) {
      return Error("the header lacks one of `descr`, `fortran_order`, `shape`");
    }
    return header;
  }

 private:
  char Peek() const { return pos_ < text_.size() ? text_[pos_] : '\0'; }
  bool Eat(char c) {
    if (Peek() != c) return false;
    ++pos_;
    return true;
  }
  void SkipBlanks() {
    while (pos_ < text_.size() && (text_[pos_] == ' ' || text_[pos_] == '\n' || text_[pos_] == '\t')) ++pos_;
  }
  llvm::Error Error(const std::string& what) const {
    return Fail(fmt::format("{}: malformed .npy header: {}; write the file with `numpy.save`", path_, what));
  }
  llvm::Expected<std::string> String() {
    char quote = Peek();
    if (quote != '\'' && quote != '"') return Error("expected a quoted string");
    size_t end = text_.find(quote, pos_ + 1);
    if (end == std::string_view::npos) return Error("unterminated string");
    std::string value(text_.substr(pos_ + 1, end - pos_ - 1));
    pos_ = end + 1;
    return value;
  }
  llvm::Error Shape(std::vector<int64_t>* shape) {
    if (!Eat('(')) return Error("expected `(` for `shape`");
    while (true) {
      SkipBlanks();
      if (Eat(')')) return llvm::Error::success();
      int64_t value = 0;
      auto [end, error] = std::from_chars(text_.data() + pos_, text_.data() + text_.size(), value);
      if (error != std::errc() || value < 0) return Error("expected a dimension in `shape`");
      pos_ = end - text_.data();
      // NumPy writes a trailing `L` for Python 2 longs in old files.
      Eat('L');
      shape->push_back(value);
      SkipBlanks();
      if (!Eat(',')) {
        SkipBlanks();
        if (!Eat(')')) return Error("expected `,` or `)` in `shape`");
        return llvm::Error::success();
      }
    }
  }

  std::string_view text_;
  const std::string& path_;
  size_t pos_ = 0;
};

// The element type for a .npy `descr`, or an error saying how to convert the array.
llvm::Expected<at::ScalarType> NpyType(const std::string& descr, const std::string& path) {
  static const std::map<std::string, at::ScalarType> kTypes = {
      {"<f2", at::kHalf}, {"<f4", at::kFloat}, {"<f8", at::kDouble}, {"<i1", at::kChar},
      {"|i1", at::kChar}, {"<i2", at::kShort}, {"<i4", at::kInt},    {"<i8", at::kLong},
      {"|u1", at::kByte}, {"<u1", at::kByte},  {"|b1", at::kBool},   {"<b1", at::kBool}};
  auto found = kTypes.find(descr);
  if (found != kTypes.end()) return found->second;
  if (!descr.empty() && descr[0] == '>') {
    return Fail(
        fmt::format("{}: big-endian dtype `{}` is not supported; convert it with "
                    "`arr.astype(arr.dtype.newbyteorder('<'))`",
                    path, descr));
  }
  if (descr.find('O') != std::string::npos) {
    return Fail(
        fmt::format("{}: object arrays (dtype `{}`) cannot be loaded; save a numeric array, "
                    "e.g. `np.asarray(x, dtype=np.float32)`",
                    path, descr));
  }
  return Fail(
      fmt::format("{}: unsupported dtype `{}`; use float16/32/64, int8/16/32/64, uint8 or bool, "
                  "e.g. `arr.astype(np.float32)`",
                  path, descr));
}

// A `.npy` file's header, and where its data starts.
struct NpyLayout {
  NpyHeader header;
  size_t data_start = 0;
};

llvm::Expected<NpyLayout> ReadNpyLayout(std::string_view bytes, const std::string& path) {
  if (bytes.size() < 10 || bytes.substr(0, 6) != "\x93NUMPY") {
    return Fail(fmt::format("{}: not a .npy file (no `\\x93NUMPY` magic); write it with `numpy.save`", path));
  }
  const auto byte = [&](size_t i) { return static_cast<uint8_t>(bytes[i]); };
  int major = byte(6);
  size_t header_length = 0;
  size_t header_start = 0;
  if (major == 1) {
    header_length = byte(8) | (size_t{byte(9)} << 8);
    header_start = 10;
  } else if (major == 2 || major == 3) {
    if (bytes.size() < 12) return Fail(fmt::format("{}: truncated .npy header", path));
    header_length = byte(8) | (size_t{byte(9)} << 8) | (size_t{byte(10)} << 16) | (size_t{byte(11)} << 24);
    header_start = 12;
  } else {
    return Fail(fmt::format("{}: unsupported .npy format version {}.{}; versions 1, 2 and 3 are read", path,
                            major, byte(7)));
  }
  if (bytes.size() < header_start + header_length) {
    return Fail(fmt::format("{}: truncated .npy header ({} bytes announced, {} present)", path, header_length,
                            bytes.size() - header_start));
  }
  llvm::Expected<NpyHeader> header = DictScanner(bytes.substr(header_start, header_length), path).Scan();
  if (!header) return header.takeError();
  return NpyLayout{std::move(*header), header_start + header_length};
}

}  // namespace

llvm::Expected<std::vector<int64_t>> ReadNpyShape(const std::string& path) {
  // Mapped: only the header's pages are read.
  llvm::Expected<std::unique_ptr<llvm::MemoryBuffer>> buffer = ReadFile(path);
  if (!buffer) return buffer.takeError();
  llvm::Expected<NpyLayout> layout =
      ReadNpyLayout(std::string_view((*buffer)->getBufferStart(), (*buffer)->getBufferSize()), path);
  if (!layout) return layout.takeError();
  return std::move(layout->header.shape);
}

llvm::Expected<at::Tensor> ReadNpy(const std::string& path) {
  llvm::Expected<std::unique_ptr<llvm::MemoryBuffer>> buffer = ReadFile(path);
  if (!buffer) return buffer.takeError();
  std::string_view bytes((*buffer)->getBufferStart(), (*buffer)->getBufferSize());
  llvm::Expected<NpyLayout> layout = ReadNpyLayout(bytes, path);
  if (!layout) return layout.takeError();
  const NpyHeader* header = &layout->header;
  if (header->fortran_order) {
    return Fail(
        fmt::format("{}: the array is in Fortran order; save it in C order, e.g. "
                    "`np.save(path, np.ascontiguousarray(arr))`",
                    path));
  }
  llvm::Expected<at::ScalarType> type = NpyType(header->descr, path);
  if (!type) return type.takeError();
  std::string_view data = bytes.substr(layout->data_start);
  uint64_t count = 1;
  for (int64_t dimension : header->shape) count *= static_cast<uint64_t>(dimension);
  uint64_t needed = count * c10::elementSize(*type);
  if (data.size() < needed) {
    return Fail(fmt::format("{}: truncated: shape {} of `{}` needs {} data bytes, the file has {}", path,
                            ShapeText(header->shape), header->descr, needed, data.size()));
  }
  return TensorFromBytes(data.substr(0, needed), header->shape, *type);
}

namespace {

// The safetensors dtypes a dataset can hold, in the order the error lists them; their names
// and ATen types come from the dtype table (runtime/checkpoint/dtypes.def).
constexpr checkpoint::Dtype kDatasetDtypes[] = {
    checkpoint::Dtype::kF16, checkpoint::Dtype::kBF16, checkpoint::Dtype::kF32, checkpoint::Dtype::kF64,
    checkpoint::Dtype::kI8,  checkpoint::Dtype::kI16,  checkpoint::Dtype::kI32, checkpoint::Dtype::kI64,
    checkpoint::Dtype::kU8,  checkpoint::Dtype::kBool};

llvm::Expected<at::ScalarType> SafetensorsType(const std::string& dtype, const std::string& where) {
  std::optional<checkpoint::Dtype> known = checkpoint::DtypeOfSafetensors(dtype);
  if (known && std::ranges::count(kDatasetDtypes, *known) != 0) {
    if (std::optional<at::ScalarType> type = tensor::ScalarTypeOf(*known)) return *type;
  }
  std::vector<std::string_view> names;
  for (checkpoint::Dtype held : kDatasetDtypes) names.push_back(checkpoint::Info(held).safetensors);
  return Fail(fmt::format("{}: unsupported dtype {}; store {} or {}", where, dtype,
                          fmt::join(names.begin(), names.end() - 1, ", "), names.back()));
}

}  // namespace

llvm::Expected<at::Tensor> ReadSafetensorsTensor(const checkpoint::SafetensorsFile& file,
                                                 const std::string& path, const std::string& key) {
  auto found = file.tensors().find(key);
  if (found == file.tensors().end()) {
    std::vector<std::string> keys;
    for (const auto& [name, info] : file.tensors()) keys.push_back(name);
    return Fail(fmt::format("{}: no tensor `{}`{}", path, key, Suggest(key, keys, "tensors")));
  }
  llvm::Expected<at::ScalarType> type = SafetensorsType(found->second.dtype, path + ": tensor `" + key + "`");
  if (!type) return type.takeError();
  // The reader has checked that the byte range matches dtype × shape.
  return TensorFromBytes(file.Bytes(key), found->second.shape, *type);
}

llvm::Expected<Dataset> LoadNpy(const std::string& features_path, const std::string& targets_path,
                                TargetKind kind) {
  llvm::Expected<at::Tensor> features = ReadNpy(features_path);
  if (!features) return features.takeError();
  llvm::Expected<at::Tensor> targets = ReadNpy(targets_path);
  if (!targets) return targets.takeError();
  return Assemble(*features, *targets, kind, features_path, targets_path);
}

llvm::Expected<Dataset> LoadSafetensors(const std::string& path, const std::string& features_key,
                                        const std::string& targets_key, TargetKind kind) {
  llvm::Expected<checkpoint::SafetensorsFile> file = checkpoint::SafetensorsFile::Read(path);
  if (!file) return file.takeError();
  llvm::Expected<at::Tensor> features = ReadSafetensorsTensor(*file, path, features_key);
  if (!features) return features.takeError();
  llvm::Expected<at::Tensor> targets = ReadSafetensorsTensor(*file, path, targets_key);
  if (!targets) return targets.takeError();
  return Assemble(*features, *targets, kind, fmt::format("{}: tensor `{}`", path, features_key),
                  fmt::format("{}: tensor `{}`", path, targets_key));
}

namespace {

// Distinct, reproducible streams for the data and its noise: the seed mixed with a purpose
// tag. Must stay as runtime/train/synthetic_data.cpp had it, or runs stop reproducing.
at::Generator MakeGenerator(int64_t seed, int64_t stream) {
  uint64_t mixed = static_cast<uint64_t>(seed) * 0x9E3779B97F4A7C15ULL + static_cast<uint64_t>(stream);
  return at::make_generator<at::CPUGeneratorImpl>(mixed);
}

}  // namespace

Dataset GenerateSyntheticRegression(int64_t samples, int64_t features, int64_t outputs, double noise,
                                    int64_t seed) {
  // The draw order (features, weights, noise) from one generator is part of the contract.
  at::Generator generator = MakeGenerator(seed, 0);
  Dataset dataset;
  dataset.features = at::randn({samples, features}, generator, at::kFloat);
  at::Tensor weights =
      at::randn({features, outputs}, generator, at::kFloat) / std::sqrt(static_cast<double>(features));
  dataset.targets = at::matmul(dataset.features, weights);
  if (noise > 0) dataset.targets += noise * at::randn(dataset.targets.sizes(), generator, at::kFloat);
  return dataset;
}

Dataset Dataset::Rows(int64_t start, int64_t length) const {
  Dataset rows;
  if (features.defined()) rows.features = features.narrow(0, start, length).contiguous();
  if (targets.defined()) rows.targets = targets.narrow(0, start, length).contiguous();
  rows.padding = padding;
  for (const Column& column : columns) {
    if (!column.ragged()) {
      rows.columns.push_back({column.name, column.values.narrow(0, start, length).contiguous(), {}});
      continue;
    }
    at::Tensor offsets = column.offsets.narrow(0, start, length + 1);
    int64_t first = offsets[0].item<int64_t>();
    int64_t last = offsets[length].item<int64_t>();
    rows.columns.push_back({column.name, column.values.narrow(0, first, last - first).contiguous(),
                            (offsets - first).contiguous()});
  }
  return rows;
}

}  // namespace accel::rt::data
