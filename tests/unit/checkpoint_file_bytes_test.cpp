// FileBytes read into this process's memory (OpenForReading + ReadRange), as a checkpoint's
// files are loaded: ranges of any alignment give the file's bytes exactly (direct reads of whole
// blocks, the rest through the page cache), on a file system without O_DIRECT too; the bytes
// taken are writable and the file never changes; a file that shrinks while read is an error.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <thread>

#include "runtime/checkpoint/file_bytes.h"
#include "tests/unit/scratch_dir.h"

namespace accel::rt::checkpoint {
namespace {

namespace fs = std::filesystem;

// 3 blocks of 4 KiB and 123 bytes more.
std::string Content() {
  std::mt19937 random(5);
  std::string bytes(3 * 4096 + 123, '\0');
  for (char& byte : bytes) byte = static_cast<char>(random());
  return bytes;
}

fs::path WriteFile(const fs::path& directory, const std::string& bytes) {
  fs::path path = directory / "state.bin";
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
  return path;
}

std::string ReadText(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// Reads the file in three ranges, two of them on other threads: one that ends inside a block
// (a direct read and a cached one), one that starts inside a block (cached), and the last from
// a block boundary to the end (a direct read past the end of the file).
void ExpectReadsExactly(const fs::path& directory) {
  const std::string content = Content();
  fs::path path = WriteFile(directory, content);
  llvm::Expected<std::shared_ptr<FileBytes>> bytes = FileBytes::OpenForReading(path.string());
  ASSERT_TRUE(static_cast<bool>(bytes)) << llvm::toString(bytes.takeError());
  ASSERT_EQ((*bytes)->view().size(), content.size());
  auto read = [&](size_t offset, size_t size) {
    llvm::Error error = (*bytes)->ReadRange(offset, size);
    EXPECT_FALSE(static_cast<bool>(error)) << llvm::toString(std::move(error));
  };
  std::thread first(read, 0, 5000);
  std::thread second(read, 5000, 8192 - 5000);
  read(8192, content.size() - 8192);
  first.join();
  second.join();
  (*bytes)->CloseFile();
  EXPECT_TRUE((*bytes)->view() == content) << "the bytes read differ from the file's";

  char* taken = (*bytes)->TakePrivate(4096, 100);
  ASSERT_NE(taken, nullptr);
  taken[0] = static_cast<char>(~taken[0]);
  EXPECT_EQ((*bytes)->view()[4096], taken[0]);
  EXPECT_EQ(ReadText(path), content) << "a write to the taken bytes reached the file";
}

TEST(FileBytesRead, RangesOfAnyAlignmentGiveTheFilesBytes) {
  ExpectReadsExactly(accel::testing::ScratchDir("read"));
}

// tmpfs refuses O_DIRECT: every range is read through the page cache.
TEST(FileBytesRead, AFileSystemWithoutDirectReadsReadsThroughTheCache) {
  fs::path shm = "/dev/shm";
  std::error_code ec;
  if (!fs::is_directory(shm, ec)) GTEST_SKIP() << "skipped: no /dev/shm on this machine";
  fs::path directory = shm / ("accel_test_" + std::to_string(::getpid()));
  fs::create_directories(directory);
  ExpectReadsExactly(directory);
  fs::remove_all(directory);
}

TEST(FileBytesRead, AFileThatShrinksWhileReadIsAnError) {
  fs::path path = WriteFile(accel::testing::ScratchDir("shrinks"), Content());
  llvm::Expected<std::shared_ptr<FileBytes>> bytes = FileBytes::OpenForReading(path.string());
  ASSERT_TRUE(static_cast<bool>(bytes)) << llvm::toString(bytes.takeError());
  fs::resize_file(path, 6000);
  llvm::Error error = (*bytes)->ReadRange(4096, 8192);
  ASSERT_TRUE(static_cast<bool>(error));
  std::string message = llvm::toString(std::move(error));
  EXPECT_NE(message.find(path.string()), std::string::npos) << message;
  EXPECT_NE(message.find("ended at byte 6000"), std::string::npos) << message;
}

TEST(FileBytesRead, EmptyFilesAndMappedBytes) {
  fs::path directory = accel::testing::ScratchDir("empty");
  fs::path path = WriteFile(directory, "");
  llvm::Expected<std::shared_ptr<FileBytes>> bytes = FileBytes::OpenForReading(path.string());
  ASSERT_TRUE(static_cast<bool>(bytes)) << llvm::toString(bytes.takeError());
  EXPECT_TRUE((*bytes)->view().empty());
  EXPECT_FALSE(static_cast<bool>((*bytes)->ReadRange(0, 0)));
  // A mapping is read-only: nothing to take.
  llvm::Expected<std::shared_ptr<const FileBytes>> mapped =
      FileBytes::Map(WriteFile(directory, Content()).string());
  ASSERT_TRUE(static_cast<bool>(mapped)) << llvm::toString(mapped.takeError());
  EXPECT_EQ((*mapped)->TakePrivate(0, 10), nullptr);
  EXPECT_FALSE(static_cast<bool>(FileBytes::OpenForReading((directory / "missing").string())));
}

}  // namespace
}  // namespace accel::rt::checkpoint
