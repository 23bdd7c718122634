#include "runtime/checkpoint/atomic_file.h"

#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstring>
#include <filesystem>

#include <fmt/format.h>

#include "runtime/checkpoint/sha256.h"
#include "runtime/support/progress.h"

namespace accel::rt::checkpoint {
namespace {

llvm::Error SystemError(const std::string& what, const std::string& path) {
  int error = errno;
  return llvm::createStringError(std::error_code(error, std::generic_category()), "%s `%s`: %s", what.c_str(),
                                 path.c_str(), std::strerror(error));
}

bool WriteAll(int fd, std::string_view data) {
  while (!data.empty()) {
    ssize_t written = ::write(fd, data.data(), data.size());
    if (written < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    data.remove_prefix(static_cast<size_t>(written));
  }
  return true;
}

}  // namespace

llvm::Error WriteAndSync(const std::string& path, const std::vector<std::string_view>& parts,
                         ChunkedSha256* hasher) {
  // Hashing a chunk and writing it right after reads the bytes from cache the second time; a
  // chunk at a time without a hasher too, so that the heartbeat below comes every MiB.
  constexpr size_t kChunk = size_t{1} << 20;
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return SystemError("cannot create", path);
  // Start writeback every few MiB instead of leaving the whole file to the final fsync: the
  // disk then works while the rest is hashed and copied.
  constexpr off_t kWritebackBytes = off_t{16} << 20;
  off_t written = 0, flushed = 0;
  for (std::string_view part : parts) {
    while (!part.empty()) {
      // A checkpoint file of many GiB takes longer to hash and write than the collective
      // timeout: say once a chunk that the rank is at work.
      progress::StillWorking();
      std::string_view chunk = part.substr(0, kChunk);
      if (hasher) hasher->Update(chunk);
      if (!WriteAll(fd, chunk)) {
        llvm::Error error = SystemError("cannot write", path);
        ::close(fd);
        return error;
      }
      part.remove_prefix(chunk.size());
      written += static_cast<off_t>(chunk.size());
      if (written - flushed >= kWritebackBytes) {
        ::sync_file_range(fd, flushed, written - flushed, SYNC_FILE_RANGE_WRITE);
        flushed = written;
      }
    }
  }
  bool synced = ::fsync(fd) == 0;
  int sync_errno = errno;
  bool closed = ::close(fd) == 0;
  if (!synced || !closed) {
    if (!synced) errno = sync_errno;
    return SystemError("cannot flush", path);
  }
  return llvm::Error::success();
}

llvm::Error WriteFileAtomically(const std::string& path, const std::vector<std::string_view>& parts) {
  std::filesystem::path target(path);
  std::filesystem::path directory = target.has_parent_path() ? target.parent_path() : ".";
  std::error_code ec;
  std::filesystem::create_directories(directory, ec);
  if (ec) {
    return llvm::createStringError(ec, "cannot create directory `%s`: %s", directory.c_str(),
                                   ec.message().c_str());
  }
  // The temporary name carries the pid so two writers never share one.
  std::string temporary = fmt::format("{}.tmp.{}", path, ::getpid());
  if (llvm::Error error = WriteAndSync(temporary, parts)) {
    ::unlink(temporary.c_str());
    return error;
  }
  if (::rename(temporary.c_str(), path.c_str()) != 0) {
    llvm::Error error = SystemError("cannot rename into place", path);
    ::unlink(temporary.c_str());
    return error;
  }
  // The rename is durable only once the directory entry is on disk.
  return SyncDirectory(directory.string());
}

std::vector<std::string> RemoveStaleTemporaries(const std::string& path) {
  std::filesystem::path target(path);
  std::filesystem::path directory = target.has_parent_path() ? target.parent_path() : ".";
  const std::string prefix = target.filename().string() + ".tmp.";
  std::vector<std::string> removed;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(directory, ec)) {
    std::string name = entry.path().filename().string();
    if (name.size() <= prefix.size() || name.compare(0, prefix.size(), prefix) != 0) continue;
    std::string_view digits = std::string_view(name).substr(prefix.size());
    pid_t pid = 0;
    auto [end, problem] = std::from_chars(digits.data(), digits.data() + digits.size(), pid);
    if (problem != std::errc() || end != digits.data() + digits.size() || pid <= 0) continue;
    // Alive (or another user's, EPERM): not ours to remove.
    if (::kill(pid, 0) == 0 || errno != ESRCH) continue;
    if (!entry.is_regular_file(ec)) continue;
    if (std::filesystem::remove(entry.path(), ec)) removed.push_back(entry.path().string());
  }
  return removed;
}

llvm::Error SyncDirectory(const std::string& path) {
  int dir_fd = ::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir_fd < 0) return SystemError("cannot open directory", path);
  bool dir_synced = ::fsync(dir_fd) == 0;
  int dir_errno = errno;
  ::close(dir_fd);
  if (!dir_synced) {
    errno = dir_errno;
    return SystemError("cannot flush directory", path);
  }
  return llvm::Error::success();
}

llvm::Error RenameNoReplace(const std::string& from, const std::string& to) {
  if (::renameat2(AT_FDCWD, from.c_str(), AT_FDCWD, to.c_str(), RENAME_NOREPLACE) != 0) {
    return SystemError("cannot rename `" + from + "` to", to);
  }
  return llvm::Error::success();
}

llvm::Error ExchangePaths(const std::string& a, const std::string& b) {
  if (::renameat2(AT_FDCWD, a.c_str(), AT_FDCWD, b.c_str(), RENAME_EXCHANGE) != 0) {
    return SystemError("cannot exchange `" + a + "` with", b);
  }
  return llvm::Error::success();
}

}  // namespace accel::rt::checkpoint
