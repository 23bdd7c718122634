#include "runtime/launch/directory_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <string_view>

#include <fmt/format.h>

#include "runtime/support/error.h"

namespace accel::rt::launch {
namespace {

// What the holder wrote into the lock file, on one line; empty if it wrote nothing yet.
std::string ReadHolder(int fd) {
  char buffer[512];
  ssize_t n = ::pread(fd, buffer, sizeof buffer - 1, 0);
  if (n <= 0) return "";
  std::string_view text(buffer, static_cast<size_t>(n));
  return std::string(text.substr(0, text.find('\n')));
}

}  // namespace

llvm::Expected<DirectoryLock> DirectoryLock::Acquire(const std::string& dir, const std::string& holder) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return Fail(fmt::format("cannot create the directory `{}`: {}", dir, ec.message()));
  std::string path = (std::filesystem::path(dir) / kLockFileName).string();
  int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return Fail(fmt::format("cannot open `{}`: {}", path, std::strerror(errno)));
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    int error = errno;
    std::string other = error == EWOULDBLOCK ? ReadHolder(fd) : "";
    ::close(fd);
    if (error != EWOULDBLOCK) return Fail(fmt::format("cannot lock `{}`: {}", path, std::strerror(error)));
    return Fail(
        fmt::format("`{}` is in use by another job ({}); give this job another directory, or wait "
                    "for that one to end",
                    dir, other.empty() ? "it is starting" : other));
  }
  // Written only while holding the lock, so a reader that fails to lock sees a whole line.
  std::string line = holder + "\n";
  if (::ftruncate(fd, 0) != 0 ||
      ::pwrite(fd, line.data(), line.size(), 0) != static_cast<ssize_t>(line.size())) {
    int error = errno;
    ::close(fd);
    return Fail(fmt::format("cannot write `{}`: {}", path, std::strerror(error)));
  }
  return DirectoryLock(fd);
}

DirectoryLock::DirectoryLock(DirectoryLock&& other) noexcept : fd_(other.fd_) { other.fd_ = -1; }

DirectoryLock::~DirectoryLock() {
  if (fd_ >= 0) ::close(fd_);  // closing the last descriptor drops the flock
}

}  // namespace accel::rt::launch
