#include "runtime/checkpoint/atomic_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include <fmt/format.h>

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
  int fd = ::open(temporary.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return SystemError("cannot create", temporary);
  for (std::string_view part : parts) {
    if (!WriteAll(fd, part)) {
      llvm::Error error = SystemError("cannot write", temporary);
      ::close(fd);
      ::unlink(temporary.c_str());
      return error;
    }
  }
  bool synced = ::fsync(fd) == 0;
  int sync_errno = errno;
  bool closed = ::close(fd) == 0;
  if (!synced || !closed) {
    if (!synced) errno = sync_errno;
    llvm::Error error = SystemError("cannot flush", temporary);
    ::unlink(temporary.c_str());
    return error;
  }
  if (::rename(temporary.c_str(), path.c_str()) != 0) {
    llvm::Error error = SystemError("cannot rename into place", path);
    ::unlink(temporary.c_str());
    return error;
  }
  // The rename is durable only once the directory entry is on disk.
  int dir_fd = ::open(directory.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir_fd < 0) return SystemError("cannot open directory", directory.string());
  bool dir_synced = ::fsync(dir_fd) == 0;
  int dir_errno = errno;
  ::close(dir_fd);
  if (!dir_synced) {
    errno = dir_errno;
    return SystemError("cannot flush directory", directory.string());
  }
  return llvm::Error::success();
}

}  // namespace accel::rt::checkpoint
