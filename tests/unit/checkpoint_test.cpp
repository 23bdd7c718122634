#include <gtest/gtest.h>

#include "tests/unit/scratch_dir.h"

#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>

#include "runtime/checkpoint/atomic_file.h"
#include "runtime/checkpoint/safetensors.h"

namespace accel::rt::checkpoint {
namespace {

namespace fs = std::filesystem;

using accel::testing::ScratchDir;

std::string Bytes(const void* data, size_t size) { return std::string(static_cast<const char*>(data), size); }

// The worked example of catalog §8.3: w = F32 [2], b = F16 [3], metadata format=pt.
TEST(Safetensors, HeaderMatchesTheReferenceWriterByteForByte) {
  float w[2] = {1.0f, 2.0f};
  uint16_t b[3] = {0x3c00, 0x4000, 0x4200};
  std::vector<TensorRef> tensors = {{"b", "F16", {3}, std::string_view(reinterpret_cast<char*>(b), 6)},
                                    {"w", "F32", {2}, std::string_view(reinterpret_cast<char*>(w), 8)}};
  llvm::Expected<std::string> header = EncodeHeader(tensors, {{"format", "pt"}}, nullptr);
  ASSERT_TRUE(static_cast<bool>(header)) << llvm::toString(header.takeError());
  std::string expected_json =
      R"({"__metadata__":{"format":"pt"},"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
      R"("b":{"dtype":"F16","shape":[3],"data_offsets":[8,14]}})";
  ASSERT_EQ(expected_json.size(), 139u);
  EXPECT_EQ(header->size(), 152u);
  EXPECT_EQ(header->substr(0, 8), std::string("\x90\0\0\0\0\0\0\0", 8));
  EXPECT_EQ(header->substr(8), expected_json + "     ");

  fs::path path = ScratchDir() / "example.safetensors";
  ASSERT_FALSE(static_cast<bool>(WriteSafetensors(path.string(), tensors)));
  EXPECT_EQ(fs::file_size(path), 166u);
}

TEST(Safetensors, RoundTripIsBitIdentical) {
  std::vector<float> weights = {0.1f, -2.5f, 3e-8f, 1e30f, -0.0f, 7.0f};
  std::vector<int64_t> steps = {1, 2, 3};
  std::string weight_bytes = Bytes(weights.data(), weights.size() * 4);
  std::string step_bytes = Bytes(steps.data(), steps.size() * 8);
  std::vector<TensorRef> tensors = {
      {"layer.weight", "F32", {2, 3}, weight_bytes},
      {"steps", "I64", {3}, step_bytes},
      {"empty", "F32", {0, 4}, {}},
  };
  fs::path path = ScratchDir() / "round.safetensors";
  ASSERT_FALSE(
      static_cast<bool>(WriteSafetensors(path.string(), tensors, {{"format", "pt"}, {"note", "x\"y"}})));
  llvm::Expected<SafetensorsFile> file = SafetensorsFile::Read(path.string());
  ASSERT_TRUE(static_cast<bool>(file)) << llvm::toString(file.takeError());
  EXPECT_EQ(file->Bytes("layer.weight"), weight_bytes);
  EXPECT_EQ(file->Bytes("steps"), step_bytes);
  EXPECT_EQ(file->tensors().at("layer.weight").shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(file->tensors().at("empty").begin, file->tensors().at("empty").end);
  EXPECT_EQ(file->metadata().at("note"), "x\"y");
}

TEST(Safetensors, WriterRejectsInconsistentTensors) {
  float x[2] = {1, 2};
  // TensorRef only views its bytes; Bytes() returns a temporary that lives to the end of
  // each full expression, which is all EncodeHeader needs.
  EXPECT_TRUE(static_cast<bool>(
      EncodeHeader({{"a", "F32", {3}, Bytes(x, 8)}}, {}, nullptr).takeError()));  // 3 elements, 8 bytes
  EXPECT_TRUE(static_cast<bool>(
      EncodeHeader({{"a", "F33", {2}, Bytes(x, 8)}}, {}, nullptr).takeError()));  // unknown dtype
  EXPECT_TRUE(static_cast<bool>(
      EncodeHeader({{"a", "F32", {2}, Bytes(x, 8)}, {"a", "F32", {2}, Bytes(x, 8)}}, {}, nullptr)
          .takeError()));
  EXPECT_TRUE(
      static_cast<bool>(EncodeHeader({{"__metadata__", "F32", {2}, Bytes(x, 8)}}, {}, nullptr).takeError()));
}

std::string FileImage(const std::string& header, const std::string& data) {
  std::string out(8, '\0');
  uint64_t n = header.size();
  std::memcpy(out.data(), &n, 8);
  return out + header + data;
}

std::string ParseError(const std::string& image) {
  llvm::Expected<SafetensorsFile> file = SafetensorsFile::Parse(image, "f.safetensors");
  if (file) return "";
  return llvm::toString(file.takeError());
}

TEST(Safetensors, ReaderEnforcesTheValidationRules) {
  EXPECT_NE(ParseError("abc").find("ST-001"), std::string::npos);
  std::string huge(8, '\0');
  huge[7] = 0x10;
  EXPECT_NE(ParseError(huge).find("ST-002"), std::string::npos);
  EXPECT_NE(ParseError(FileImage("{}", "").substr(0, 9)).find("ST-003"), std::string::npos);
  EXPECT_NE(ParseError(FileImage("[1]", "")).find("ST-005"), std::string::npos);
  EXPECT_NE(
      ParseError(FileImage(R"({"a":{"dtype":"Q8","shape":[1],"data_offsets":[0,1]}})", "x")).find("ST-005"),
      std::string::npos);
  // A hole before the second tensor.
  EXPECT_NE(ParseError(FileImage(R"({"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},)"
                                 R"("b":{"dtype":"U8","shape":[1],"data_offsets":[2,3]}})",
                                 "xyz"))
                .find("ST-006"),
            std::string::npos);
  EXPECT_NE(ParseError(FileImage(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,4]}})", "abcd"))
                .find("ST-009"),
            std::string::npos);
  // Trailing bytes after the last tensor: a polyglot file.
  EXPECT_NE(
      ParseError(FileImage(R"({"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}})", "xy")).find("ST-010"),
      std::string::npos);
  EXPECT_NE(ParseError(FileImage(R"({"__metadata__":{"n":1}})", "")).find("ST-005"), std::string::npos);
  // Valid corner cases: empty file body, a scalar, leading whitespace.
  EXPECT_EQ(ParseError(FileImage("{}", "")), "");
  EXPECT_EQ(ParseError(FileImage(R"(  {"s":{"dtype":"F32","shape":[],"data_offsets":[0,4]}})", "abcd")), "");
}

TEST(AtomicFile, ReplacesContentAndLeavesNoTemporaryBehind) {
  fs::path dir = ScratchDir() / "atomic";
  fs::path path = dir / "nested" / "f.txt";
  ASSERT_FALSE(static_cast<bool>(WriteFileAtomically(path.string(), {"old"})));
  ASSERT_FALSE(static_cast<bool>(WriteFileAtomically(path.string(), {"new ", "content"})));
  std::ifstream in(path);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(text, "new content");
  size_t entries = 0;
  for ([[maybe_unused]] const auto& entry : fs::directory_iterator(path.parent_path())) ++entries;
  EXPECT_EQ(entries, 1u);
}

TEST(AtomicFile, FailedWriteKeepsThePreviousFile) {
  fs::path dir = ScratchDir() / "atomic_fail";
  fs::path path = dir / "f.txt";
  ASSERT_FALSE(static_cast<bool>(WriteFileAtomically(path.string(), {"precious"})));
  // A directory where the temporary file would go makes the write fail part-way.
  fs::create_directories(path.string() + ".tmp." + std::to_string(::getpid()));
  llvm::Error error = WriteFileAtomically(path.string(), {"garbage"});
  EXPECT_TRUE(static_cast<bool>(error));
  llvm::consumeError(std::move(error));
  std::ifstream in(path);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(text, "precious");
}

}  // namespace
}  // namespace accel::rt::checkpoint
