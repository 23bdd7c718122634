// The C++ half of tests/runtime/checkpoint_interop_test.py, which checks Accel's safetensors
// files against an independent Python reader and writer (json + numpy, no safetensors
// library).
//
//   checkpoint_tool write-sample DIR
//     Writes the sample state (one tensor of each byte-sized dtype, values the Python test
//     knows independently) as DIR/single/model.safetensors and, sharded at 64 bytes, into
//     DIR/sharded/ (shards + model.safetensors.index.json).
//   checkpoint_tool dump PATH
//     Loads PATH in any layout Weights::Load accepts and prints one JSON object per line:
//     {"name", "dtype", "shape", "sha256", "file"} per tensor; exit 1 with the error otherwise.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "runtime/checkpoint/json.h"
#include "runtime/checkpoint/sha256.h"
#include "runtime/checkpoint/shards.h"
#include "tests/support/weights.h"

namespace {

namespace fs = std::filesystem;
using namespace accel::rt::checkpoint;

template <typename T>
std::string Raw(const std::vector<T>& values) {
  std::string out(values.size() * sizeof(T), '\0');
  std::memcpy(out.data(), values.data(), out.size());
  return out;
}

// The sample. The Python test builds the same values with numpy from the formulas named in
// each comment; 16-bit floats are given as bit patterns so that numpy, not this file,
// decides what they mean.
std::vector<std::pair<TensorRef, std::string>> Sample() {
  std::vector<std::pair<TensorRef, std::string>> out;
  auto add = [&](const char* name, const char* dtype, std::vector<int64_t> shape, std::string bytes) {
    out.push_back({{name, dtype, std::move(shape), {}}, std::move(bytes)});
  };
  std::vector<float> f32(12);
  for (int k = 0; k < 12; ++k) f32[k] = (k - 3) * 0.25f;  // (k - 3) / 4
  add("model.layer.weight", "F32", {3, 4}, Raw(f32));
  std::vector<double> f64 = {std::acos(-1.0), -0.0, 1e300, std::nan("")};
  add("model.f64", "F64", {4}, Raw(f64));
  std::vector<int64_t> i64 = {-(int64_t{1} << 62), -1, 0, (int64_t{1} << 62) + 1};
  add("step", "I64", {2, 2}, Raw(i64));
  std::vector<int32_t> i32 = {-7, 0, 7};
  add("i32", "I32", {3}, Raw(i32));
  // 1.0, -2.0, 0.5, inf, 2^-24 (smallest subnormal), 65504 (largest finite)
  std::vector<uint16_t> f16 = {0x3c00, 0xc000, 0x3800, 0x7c00, 0x0001, 0x7bff};
  add("half", "F16", {6}, Raw(f16));
  // 1.0, -2.0, 3.140625, inf
  std::vector<uint16_t> bf16 = {0x3f80, 0xc000, 0x4049, 0x7f80};
  add("brain", "BF16", {2, 2}, Raw(bf16));
  add("mask", "BOOL", {5}, std::string("\x01\x00\x01\x01\x00", 5));
  add("bytes", "U8", {4}, std::string("\x00\x7f\x80\xff", 4));
  add("scalar", "F32", {}, Raw(std::vector<float>{42.0f}));
  add("empty", "F32", {0, 3}, "");
  add("caf\xc3\xa9.\xf0\x9f\x98\x80", "I8", {2}, "\x80\x7f");  // a non-ASCII name
  return out;
}

int WriteSample(const std::string& directory) {
  std::vector<std::pair<TensorRef, std::string>> sample = Sample();
  std::vector<TensorRef> tensors;
  for (auto& [tensor, bytes] : sample) {
    tensor.bytes = bytes;
    tensors.push_back(tensor);
  }
  fs::create_directories(fs::path(directory) / "single");
  if (llvm::Error error = WriteSafetensors((fs::path(directory) / "single" / "model.safetensors").string(),
                                           tensors, {{"format", "pt"}})) {
    std::fprintf(stderr, "%s\n", llvm::toString(std::move(error)).c_str());
    return 1;
  }
  if (llvm::Error error = SaveShardedSafetensors((fs::path(directory) / "sharded").string(), tensors, 64)) {
    std::fprintf(stderr, "%s\n", llvm::toString(std::move(error)).c_str());
    return 1;
  }
  return 0;
}

int Dump(const std::string& path) {
  llvm::Expected<Weights> weights = Weights::Load(path);
  if (!weights) {
    std::printf("ERROR %s\n", llvm::toString(weights.takeError()).c_str());
    return 1;
  }
  for (const std::string& name : weights->names()) {
    Weights::Tensor tensor = weights->Find(name);
    std::string line = "{\"name\": ";
    AppendJsonString(line, name);
    line += fmt::format(", \"dtype\": \"{}\", \"shape\": [{}], \"sha256\": \"{}\", \"file\": ",
                        tensor.info->dtype, fmt::join(tensor.info->shape, ", "), Sha256Hex(tensor.bytes));
    AppendJsonString(line, fs::path(*tensor.file).filename().string());
    std::printf("%s}\n", line.c_str());
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 3 && std::string(argv[1]) == "write-sample") return WriteSample(argv[2]);
  if (argc == 3 && std::string(argv[1]) == "dump") return Dump(argv[2]);
  std::fprintf(stderr, "usage: %s write-sample DIR | dump PATH\n", argv[0]);
  return 2;
}
