#include "runtime/checkpoint/file_bytes.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace accel::rt::checkpoint {
namespace {

// What O_DIRECT asks of offsets, lengths and memory on every device we meet (sectors are 512 or
// 4,096 bytes).
constexpr size_t kDirectBlock = 4096;

size_t RoundUp(size_t value, size_t multiple) { return (value + multiple - 1) / multiple * multiple; }

llvm::Error SystemError(const char* what, const std::string& path) {
  int error = errno;
  return llvm::createStringError(std::error_code(error, std::generic_category()), "%s: %s: %s", path.c_str(),
                                 what, std::strerror(error));
}

// Opens `path`, which must be a regular file, and gives its size.
llvm::Expected<int> OpenRegular(const std::string& path, size_t& size) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return SystemError("cannot open file", path);
  struct stat info {};
  if (::fstat(fd, &info) != 0) {
    llvm::Error error = SystemError("cannot stat file", path);
    ::close(fd);
    return error;
  }
  if (!S_ISREG(info.st_mode)) {
    ::close(fd);
    return llvm::createStringError(llvm::inconvertibleErrorCode(), "%s: not a regular file", path.c_str());
  }
  size = static_cast<size_t>(info.st_size);
  return fd;
}

}  // namespace

llvm::Expected<std::shared_ptr<const FileBytes>> FileBytes::Map(const std::string& path) {
  size_t size = 0;
  llvm::Expected<int> fd = OpenRegular(path, size);
  if (!fd) return fd.takeError();
  std::shared_ptr<FileBytes> bytes(new FileBytes());
  if (size > 0) {
    void* mapping = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, *fd, 0);
    if (mapping == MAP_FAILED) {
      llvm::Error error = SystemError("cannot map file", path);
      ::close(*fd);
      return error;
    }
    // Readers walk files front to back: ask for large read-ahead.
    ::madvise(mapping, size, MADV_SEQUENTIAL);
    bytes->mapping_ = mapping;
    bytes->mapping_size_ = size;
    bytes->view_ = std::string_view(static_cast<const char*>(mapping), size);
  }
  // The mapping keeps the file's pages; the descriptor is no longer needed.
  ::close(*fd);
  return std::shared_ptr<const FileBytes>(std::move(bytes));
}

std::shared_ptr<const FileBytes> FileBytes::Own(std::string bytes) {
  std::shared_ptr<FileBytes> file(new FileBytes());
  file->owned_ = std::move(bytes);
  file->view_ = file->owned_;
  return file;
}

llvm::Expected<std::shared_ptr<FileBytes>> FileBytes::OpenForReading(const std::string& path) {
  size_t size = 0;
  llvm::Expected<int> fd = OpenRegular(path, size);
  if (!fd) return fd.takeError();
  std::shared_ptr<FileBytes> bytes(new FileBytes());
  bytes->private_ = true;
  bytes->path_ = path;
  bytes->fd_ = *fd;
  // -1 where the file system refuses O_DIRECT (tmpfs): ReadRange then reads through the cache.
  bytes->direct_fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_DIRECT);
  if (size > 0) {
    // Whole direct blocks fit: the last read may ask for the rest of its block. Small pages:
    // huge ones would fault 512 times less, but on VMs whose host takes back free 2 MiB blocks
    // (free page reporting) a fresh huge page cost ~2.5-3.3 s per GiB against 0.6 s for small
    // ones (docs/performance.md, "Verified loads read around the page cache").
    const size_t reserved = RoundUp(size, kDirectBlock);
    void* memory = ::mmap(nullptr, reserved, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (memory == MAP_FAILED) return SystemError("cannot reserve memory to read the file into", path);
    bytes->mapping_ = memory;
    bytes->mapping_size_ = reserved;
    bytes->view_ = std::string_view(static_cast<const char*>(memory), size);
  }
  return bytes;
}

llvm::Error FileBytes::ReadRange(size_t offset, size_t size) {
  if (!private_ || offset > view_.size()) {
    return llvm::createStringError(llvm::inconvertibleErrorCode(), "%s: range %zu+%zu is outside the file",
                                   path_.c_str(), offset, size);
  }
  char* memory = static_cast<char*>(mapping_);
  const size_t end = std::min(view_.size(), offset + size);
  size_t done = offset;
  // Direct reads move whole blocks: a range that ends inside the file reads only its whole
  // blocks so (another thread may be reading the next range); the last one may read its last
  // block whole, into the reserve past the end. What is left goes through the page cache.
  const size_t direct_end =
      end == view_.size() ? RoundUp(end, kDirectBlock) : end / kDirectBlock * kDirectBlock;
  while (direct_fd_ >= 0 && done < end && done % kDirectBlock == 0 && done < direct_end) {
    ssize_t n = ::pread(direct_fd_, memory + done, direct_end - done, static_cast<off_t>(done));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;  // EINVAL: this file system's alignment differs; the cache serves the rest
    done += static_cast<size_t>(n);
  }
  done = std::min(done, end);
  while (done < end) {
    ssize_t n = ::pread(fd_, memory + done, end - done, static_cast<off_t>(done));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return SystemError("cannot read file", path_);
    if (n == 0) {
      return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                     "%s: the file ended at byte %zu while being read (it had %zu bytes)",
                                     path_.c_str(), done, view_.size());
    }
    done += static_cast<size_t>(n);
  }
  return llvm::Error::success();
}

void FileBytes::CloseFile() {
  if (fd_ >= 0) ::close(fd_);
  if (direct_fd_ >= 0) ::close(direct_fd_);
  fd_ = direct_fd_ = -1;
}

void FileBytes::Populate(size_t offset, size_t size) const {
  if (private_ || mapping_ == nullptr || offset >= mapping_size_) return;
  static const size_t page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
  const size_t begin = offset / page * page;
  const size_t end = std::min(mapping_size_, offset + size);
  ::madvise(static_cast<char*>(mapping_) + begin, end - begin, MADV_POPULATE_READ);
}

char* FileBytes::TakePrivate(size_t offset, size_t size) const {
  if (!private_ || mapping_ == nullptr || offset > view_.size() || size > view_.size() - offset)
    return nullptr;
  return static_cast<char*>(mapping_) + offset;
}

FileBytes::~FileBytes() {
  if (mapping_ != nullptr) ::munmap(mapping_, mapping_size_);
  if (fd_ >= 0) ::close(fd_);
  if (direct_fd_ >= 0) ::close(direct_fd_);
}

}  // namespace accel::rt::checkpoint
