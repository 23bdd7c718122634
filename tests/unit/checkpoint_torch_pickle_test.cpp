// The torch.save format without Python: the pickle writer and the reader that runs nothing
// (torch_pickle.h), and the zip archive around them (torch_zip.h). What torch and Accelerate
// make of these files is judged by the real ones in tests/e2e/accelerate_state_test.py; here,
// the round trips, what Python's own pickler writes at protocols 4 and 5, and every refusal.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <limits>

#include "runtime/checkpoint/python_rng.h"
#include "runtime/checkpoint/torch_pickle.h"
#include "runtime/checkpoint/torch_zip.h"
#include "scratch_dir.h"

namespace accel::rt::checkpoint {
namespace {

namespace pk = pickle;
using Kind = pk::Object::Kind;

std::string FromHex(std::string_view hex) {
  std::string out;
  for (size_t i = 0; i + 1 < hex.size(); i += 2) out += static_cast<char>(std::stoi(std::string(hex.substr(i, 2)), nullptr, 16));
  return out;
}

std::string ReadError(std::string_view bytes) {
  llvm::Expected<pk::Ref> read = pk::Read(bytes);
  if (read) return "";
  return llvm::toString(read.takeError());
}

TEST(TorchPickle, WhatItWritesReadsBackTheSame) {
  std::string every_byte;
  for (int c = 0; c < 256; ++c) every_byte += static_cast<char>(c);
  pk::Ref value = pk::Dict({
      {pk::String("ints"), pk::List({pk::Int(0), pk::Int(255), pk::Int(256), pk::Int(65536), pk::Int(-1),
                                     pk::Int(std::numeric_limits<int32_t>::min()), pk::Int(int64_t{1} << 40),
                                     pk::Int(-(int64_t{1} << 40)), pk::Int(std::numeric_limits<int64_t>::min())})},
      {pk::String("misc"), pk::Tuple({pk::Float(-0.125), pk::None(), pk::Bool(true), pk::String("é")})},
      {pk::Int(7), pk::Bytes(every_byte)},
      {pk::String("tensor"), pk::Tensor({"0", "F32", 6, 0, {2, 3}, {3, 1}})},
      {pk::String("array"), pk::Array({"u4", {2}, std::string("\x01\x00\x00\x00\xff\xff\xff\xff", 8)})},
  });
  llvm::Expected<std::string> bytes = pk::Write(*value);
  ASSERT_TRUE(static_cast<bool>(bytes)) << llvm::toString(bytes.takeError());
  llvm::Expected<pk::Ref> read = pk::Read(*bytes);
  ASSERT_TRUE(static_cast<bool>(read)) << llvm::toString(read.takeError());
  const pk::Object& root = **read;
  const pk::Object* ints = root.Find("ints");
  ASSERT_NE(ints, nullptr);
  std::vector<int64_t> got;
  for (const pk::Ref& item : ints->items) got.push_back(item->integer);
  EXPECT_EQ(got, (std::vector<int64_t>{0, 255, 256, 65536, -1, std::numeric_limits<int32_t>::min(),
                                       int64_t{1} << 40, -(int64_t{1} << 40), std::numeric_limits<int64_t>::min()}));
  const pk::Object& misc = *root.Find("misc");
  ASSERT_EQ(misc.kind, Kind::kTuple);
  EXPECT_EQ(misc.items[0]->number, -0.125);
  EXPECT_EQ(misc.items[1]->kind, Kind::kNone);
  EXPECT_TRUE(misc.items[2]->boolean);
  EXPECT_EQ(misc.items[3]->text, "é");
  ASSERT_NE(root.Find(7), nullptr);
  EXPECT_EQ(root.Find(7)->kind, Kind::kBytes);
  EXPECT_EQ(root.Find(7)->text, every_byte);
  const pk::Object& tensor = *root.Find("tensor");
  ASSERT_EQ(tensor.kind, Kind::kTensor);
  EXPECT_EQ(tensor.tensor.dtype, "F32");
  EXPECT_EQ(tensor.tensor.storage, "0");
  EXPECT_EQ(tensor.tensor.shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(tensor.tensor.stride, (std::vector<int64_t>{3, 1}));
  const pk::Object& array = *root.Find("array");
  ASSERT_EQ(array.kind, Kind::kArray);
  EXPECT_EQ(array.array.dtype, "u4");
  EXPECT_EQ(array.array.bytes.size(), 8u);
}

// Bytes of Python 3's pickle.dumps({'x': x, 'y': x}, protocol=4), x = [1, 2.5, 'é', b'\x00\xff']:
// frames, short strings, MEMOIZE, and the second reference to x through the memo.
TEST(TorchPickle, ReadsWhatPythonWritesAtProtocolsFourAndFive) {
  llvm::Expected<pk::Ref> read = pk::Read(FromHex(
      "80049528000000000000007d94288c0178945d94284b014740040000000000008c02c3a994430200ff94658c0179946802752e"));
  ASSERT_TRUE(static_cast<bool>(read)) << llvm::toString(read.takeError());
  const pk::Object* x = (*read)->Find("x");
  ASSERT_NE(x, nullptr);
  EXPECT_EQ(x, (*read)->Find("y")) << "one object, referred to twice";
  ASSERT_EQ(x->items.size(), 4u);
  EXPECT_EQ(x->items[1]->number, 2.5);
  EXPECT_EQ(x->items[2]->text, "é");
  EXPECT_EQ(x->items[3]->text, std::string("\x00\xff", 2));

  // pickle.dumps((-1, 2**40, -2**63, True), protocol=5)
  read = pk::Read(FromHex("8005951c00000000000000284affffffff8a060000000000018a0800000000000000808874942e"));
  ASSERT_TRUE(static_cast<bool>(read)) << llvm::toString(read.takeError());
  ASSERT_EQ((*read)->items.size(), 4u);
  EXPECT_EQ((*read)->items[0]->integer, -1);
  EXPECT_EQ((*read)->items[1]->integer, int64_t{1} << 40);
  EXPECT_EQ((*read)->items[2]->integer, std::numeric_limits<int64_t>::min());
  EXPECT_TRUE((*read)->items[3]->boolean);
}

TEST(TorchPickle, RefusesCallablesThatCouldRunCode) {
  // os.system("ls") as protocol 2 writes it, and the same through STACK_GLOBAL.
  EXPECT_NE(ReadError(std::string("\x80\x02" "cos\nsystem\n" "X\x02\x00\x00\x00ls\x85R.", 23))
                .find("byte 2: the pickle names `os.system`, which could run code"),
            std::string::npos);
  EXPECT_NE(ReadError(std::string("\x80\x04\x8c\x08" "builtins" "\x8c\x04" "eval" "\x93.", 21))
                .find("`builtins.eval`"),
            std::string::npos);
  // A name that is not a Python name (here an escape sequence) is not shown.
  EXPECT_NE(ReadError(std::string("\x80\x04\x8c\x02" "os" "\x8c\x03" "\x1b[2" "\x93.", 13))
                .find("a callable whose name is not a Python name"),
            std::string::npos);
  // A known callable with arguments it does not take is refused too: nothing is ever called.
  EXPECT_NE(ReadError(std::string("\x80\x02" "c_codecs\nencode\n" "X\x01\x00\x00\x00" "aX\x05\x00\x00\x00utf-8\x86R.",
                                  40))
                .find("`_codecs.encode` with arguments it does not take"),
            std::string::npos);
}

TEST(TorchPickle, RefusesMalformedStreams) {
  EXPECT_NE(ReadError("\x80\x02]"), "") << "no STOP";
  EXPECT_NE(ReadError("\x80\x02]").find("ends before its STOP"), std::string::npos);
  EXPECT_NE(ReadError(std::string("\x80\x02X\xff\xff\x00\x00ab.", 10)).find("runs past the end"), std::string::npos);
  EXPECT_NE(ReadError(std::string("\x80\x02\x8a\x09", 4) + std::string(9, '\x01') + ".").find("beyond 64 bits"),
            std::string::npos);
  EXPECT_NE(ReadError("\x80\x02h\x05.").find("memo entry 5 was never stored"), std::string::npos);
  EXPECT_NE(ReadError("\x80\x02NN.").find("STOP with no single value"), std::string::npos);
  EXPECT_NE(ReadError("\x80\x02t.").find("needs a MARK"), std::string::npos);
  EXPECT_NE(ReadError("\x80\x02" "I1\n.").find("opcode 0x49 is not one this reader takes"), std::string::npos);
  EXPECT_NE(ReadError(std::string("\x80\x02X\x02\x00\x00\x00\xff\xfe.", 10)).find("not UTF-8"), std::string::npos);
  // Nesting is bounded before it costs anything: 2000 MARKs against a limit of 1000.
  EXPECT_NE(ReadError("\x80\x02" + std::string(2000, '(')).find("nested deeper than 1000 levels"), std::string::npos);
}

TEST(TorchPickle, MemoisedReferencesShareOneObject) {
  // [x] * 4096 through BINGET: 4096 references, one list, in input-sized memory.
  std::string bytes = std::string("\x80\x02]q\x00" "0", 6) + "](";  // x memoised, then popped
  for (int i = 0; i < 4096; ++i) bytes += std::string("h\x00", 2);
  bytes += "e.";
  llvm::Expected<pk::Ref> read = pk::Read(bytes);
  ASSERT_TRUE(static_cast<bool>(read)) << llvm::toString(read.takeError());
  ASSERT_EQ((*read)->items.size(), 4096u);
  EXPECT_EQ((*read)->items.front(), (*read)->items.back());
}

// 1-tuples of 1-tuples, a million deep, without one MARK: read, and freed without recursing (a
// recursive free overflowed the stack at about 100,000 levels).
TEST(TorchPickle, FreesDeepValuesWithoutRecursing) {
  std::string bytes = "\x80\x02N" + std::string(1'000'000, '\x85') + ".";
  llvm::Expected<pk::Ref> read = pk::Read(bytes);
  ASSERT_TRUE(static_cast<bool>(read)) << llvm::toString(read.takeError());
  EXPECT_EQ((*read)->kind, Kind::kTuple);
  // The same depth through APPEND: lists inside lists.
  std::string lists = "\x80\x02" + std::string(1'000'000, ']') + std::string(999'999, 'a') + ".";
  EXPECT_EQ(ReadError(lists), "");
}

// l = []; l.append(l): refused, and its memory freed (the fuzzer runs with leak detection).
TEST(TorchPickle, RefusesContainersInsideThemselves) {
  EXPECT_NE(ReadError(std::string("\x80\x02]q\x00h\x00" "a.", 9)).find("puts a container inside itself"),
            std::string::npos);
  // The same cycle popped off the stack before an acyclic result.
  EXPECT_NE(ReadError(std::string("\x80\x02]q\x00h\x00" "a0N.", 11)).find("inside itself"), std::string::npos);
  // One object referred to twice is no cycle.
  EXPECT_EQ(ReadError(std::string("\x80\x02]q\x00" "0](h\x00h\x00" "e.", 14)), "");
}

class TorchZipTest : public ::testing::Test {
 protected:
  std::string Write(const std::string& name, uint64_t zip64_from = 0xFFFFFFFFu) {
    llvm::Expected<std::string> pickled = pk::Write(*pk::Dict(
        {{pk::String("w"), pk::Tensor({"0", "F32", 4, 1, {3}, {1}})}, {pk::String("n"), pk::Int(5)}}));
    EXPECT_TRUE(static_cast<bool>(pickled));
    llvm::Expected<EncodedTorchFile> encoded =
        EncodeTorchFile("archive", std::move(*pickled), {{"0", {floats_}}}, zip64_from);
    EXPECT_TRUE(static_cast<bool>(encoded));
    std::string path = (dir_ / name).string();
    std::ofstream out(path, std::ios::binary);
    for (std::string_view part : encoded->parts()) out.write(part.data(), static_cast<std::streamsize>(part.size()));
    return path;
  }

  std::filesystem::path dir_ = accel::testing::ScratchDir("torch_zip");
  const float values_[4] = {1.0f, 2.0f, 3.0f, 4.0f};
  std::string_view floats_{reinterpret_cast<const char*>(values_), sizeof values_};
};

TEST_F(TorchZipTest, ReadsItsOwnArchivesWithAndWithoutZip64) {
  for (uint64_t zip64_from : {uint64_t{0xFFFFFFFFu}, uint64_t{0}}) {
    llvm::Expected<TorchFile> file = ReadTorchFile(Write("a.bin", zip64_from));
    ASSERT_TRUE(static_cast<bool>(file)) << llvm::toString(file.takeError());
    EXPECT_EQ(file->root->Find("n")->integer, 5);
    const pk::Object* tensor = file->root->Find("w");
    ASSERT_NE(tensor, nullptr);
    llvm::Expected<std::string_view> bytes = file->TensorBytes(tensor->tensor);
    ASSERT_TRUE(static_cast<bool>(bytes)) << llvm::toString(bytes.takeError());
    EXPECT_EQ(*bytes, floats_.substr(4)) << "offset 1, three elements";
    // Every record's data starts on a 64-byte boundary of the file, as torch.save aligns it.
    EXPECT_EQ((bytes->data() - 4 - file->bytes->view().data()) % 64, 0);
  }
}

TEST_F(TorchZipTest, RefusesTensorsOutsideTheirStorage) {
  llvm::Expected<TorchFile> file = ReadTorchFile(Write("b.bin"));
  ASSERT_TRUE(static_cast<bool>(file));
  pk::TensorInfo beyond{"0", "F32", 4, 2, {3}, {1}};
  llvm::Expected<std::string_view> bytes = file->TensorBytes(beyond);
  ASSERT_FALSE(static_cast<bool>(bytes));
  EXPECT_NE(llvm::toString(bytes.takeError()).find("beyond the end of its storage"), std::string::npos);
  // A scalar of an empty storage, at any offset: the element count must not wrap.
  pk::TensorInfo scalar{"0", "F32", 0, 5, {}, {}};
  bytes = file->TensorBytes(scalar);
  ASSERT_FALSE(static_cast<bool>(bytes));
  EXPECT_NE(llvm::toString(bytes.takeError()).find("beyond the end of its storage"), std::string::npos);
  pk::TensorInfo strided{"0", "F32", 4, 0, {2}, {2}};
  bytes = file->TensorBytes(strided);
  ASSERT_FALSE(static_cast<bool>(bytes));
  EXPECT_NE(llvm::toString(bytes.takeError()).find("not dense"), std::string::npos);
  pk::TensorInfo elsewhere{"9", "F32", 4, 0, {2}, {1}};
  bytes = file->TensorBytes(elsewhere);
  ASSERT_FALSE(static_cast<bool>(bytes));
  EXPECT_NE(llvm::toString(bytes.takeError()).find("no record data/9"), std::string::npos);
}

TEST_F(TorchZipTest, RefusesWhatTorchSaveDoesNotWrite) {
  std::string path = Write("c.bin");
  std::string bytes;
  {
    std::ifstream in(path, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), {});
  }
  // A compressed record: the method field of the first central directory entry set to deflate.
  std::string compressed = bytes;
  size_t central = compressed.find("PK\x01\x02");
  ASSERT_NE(central, std::string::npos);
  compressed[central + 10] = 8;
  std::string compressed_path = (dir_ / "compressed.bin").string();
  std::ofstream(compressed_path, std::ios::binary) << compressed;
  llvm::Expected<TorchFile> file = ReadTorchFile(compressed_path);
  ASSERT_FALSE(static_cast<bool>(file));
  EXPECT_NE(llvm::toString(file.takeError()).find("is compressed"), std::string::npos);

  // The legacy format (a bare pickle), and a file cut short.
  std::string legacy_path = (dir_ / "legacy.bin").string();
  std::ofstream(legacy_path, std::ios::binary) << std::string("\x80\x02}q\x00.", 6);
  file = ReadTorchFile(legacy_path);
  ASSERT_FALSE(static_cast<bool>(file));
  EXPECT_NE(llvm::toString(file.takeError()).find("before 1.6"), std::string::npos);
  std::string short_path = (dir_ / "short.bin").string();
  std::ofstream(short_path, std::ios::binary) << bytes.substr(0, bytes.size() - 30);
  file = ReadTorchFile(short_path);
  ASSERT_FALSE(static_cast<bool>(file));
  EXPECT_NE(llvm::toString(file.takeError()).find("end-of-directory"), std::string::npos);
}

// What Python's random.seed and numpy.random.seed leave (values printed by CPython 3.11 and
// NumPy 2): the e2e test compares whole states through Accelerate's load_state.
TEST(PythonRng, SeedsAsPythonAndNumpyDo) {
  MersenneState python = PythonSeededState(12345);
  EXPECT_EQ(python[0], 2147483648u);
  EXPECT_EQ(python[1], 2105189241u);
  EXPECT_EQ(python[623], 238504783u);
  EXPECT_EQ(PythonSeededState(uint64_t{1} << 40)[1], 1183272544u) << "a seed of two 32-bit words";
  MersenneState numpy = NumpySeededState(12345);
  EXPECT_EQ(numpy[1], 2003863422u);
  EXPECT_EQ(numpy[623], 277493156u);
}

}  // namespace
}  // namespace accel::rt::checkpoint
