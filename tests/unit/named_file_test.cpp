// The policy for files a config names (compiler/source/named_file.h): what may be read, where,
// and when a file may be quoted as JSON.
#include "compiler/source/named_file.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "tests/unit/scratch_dir.h"

namespace accel::source {
namespace {

namespace fs = std::filesystem;

TEST(NamedFile, RefusesTheSystemsFilesAndEveryKindButARegularFile) {
  fs::path dir = testing::ScratchDir("named_file_kinds");
  std::ofstream(dir / "plain.json") << "{}";
  EXPECT_EQ(WhyNotReadable((dir / "plain.json").string()), "");
  EXPECT_EQ(WhyNotReadable((dir / "missing.json").string()), "");  // the caller says "missing"
  // /proc's files are regular files of size 0; refused by where they are, even through a link.
  EXPECT_EQ(WhyNotReadable("/proc/self/environ"), "it is under /proc, a file the system makes, not one a config names");
  fs::create_symlink("/proc/self/environ", dir / "innocent.json");
  EXPECT_EQ(WhyNotReadable((dir / "innocent.json").string()),
            "it is under /proc, a file the system makes, not one a config names");
  EXPECT_NE(WhyNotReadable("/sys/kernel/mm/transparent_hugepage/enabled"), "");
  EXPECT_EQ(WhyNotReadable("/dev/zero"), "it is under /dev, a file the system makes, not one a config names");
  ASSERT_EQ(::mkfifo((dir / "fifo").c_str(), 0600), 0);
  EXPECT_EQ(WhyNotReadable((dir / "fifo").string()), "it is a FIFO (named pipe)");
  EXPECT_EQ(WhyNotReadable(dir.string()), "it is a directory");
  int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  std::string socket_path = (dir / "sock").string();
  ASSERT_LT(socket_path.size(), sizeof address.sun_path);
  socket_path.copy(address.sun_path, socket_path.size());
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address), 0);
  EXPECT_EQ(WhyNotReadable(socket_path), "it is a socket");
  ::close(fd);
}

TEST(NamedFile, TheRepositoryIsTheNearestFolderHoldingGitElseTheFilesOwn) {
  fs::path dir = fs::weakly_canonical(testing::ScratchDir("named_file_repo"));
  fs::create_directories(dir / "repo" / ".git");
  fs::create_directories(dir / "repo" / "a" / "b");
  fs::create_directories(dir / "loose");
  EXPECT_EQ(RepositoryOf((dir / "repo" / "a" / "b" / "cfg.yaml").string()), dir / "repo");
  EXPECT_TRUE(IsInside((dir / "repo" / "a" / "x.json").string(), dir / "repo"));
  EXPECT_FALSE(IsInside((dir / "loose" / "x.json").string(), dir / "repo"));
  // `..` and symlinks are resolved before the comparison.
  EXPECT_FALSE(IsInside((dir / "repo" / ".." / "loose" / "x.json").string(), dir / "repo"));
  fs::create_directory_symlink(dir / "loose", dir / "repo" / "a" / "link");
  EXPECT_FALSE(IsInside((dir / "repo" / "a" / "link" / "x.json").string(), dir / "repo"));
  // A sibling whose name extends the folder's is not inside it.
  EXPECT_FALSE(IsInside((dir / "repo2" / "x.json").string(), dir / "repo"));
}

TEST(NamedFile, OnlyAnObjectLooksLikeJson) {
  EXPECT_TRUE(LooksLikeJsonObject("{}"));
  EXPECT_TRUE(LooksLikeJsonObject("\xEF\xBB\xBF \n\t{\"a\": 1}"));
  EXPECT_FALSE(LooksLikeJsonObject("root:x:0:0:root:/root:/bin/bash"));
  EXPECT_FALSE(LooksLikeJsonObject("-----BEGIN OPENSSH PRIVATE KEY-----"));
  EXPECT_FALSE(LooksLikeJsonObject("[1, 2]"));
  EXPECT_FALSE(LooksLikeJsonObject(""));
}

}  // namespace
}  // namespace accel::source
