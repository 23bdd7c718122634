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

llvm::Error SystemError(const char* what, const std::string& path) {
  int error = errno;
  return llvm::createStringError(std::error_code(error, std::generic_category()), "%s: %s: %s", path.c_str(),
                                 what, std::strerror(error));
}

}  // namespace

llvm::Expected<std::shared_ptr<const FileBytes>> FileBytes::Map(const std::string& path, Access access) {
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
  std::shared_ptr<FileBytes> bytes(new FileBytes());
  if (info.st_size > 0) {
    size_t size = static_cast<size_t>(info.st_size);
    // Private either way: a writable private mapping copies a page only when it is written.
    int protection = PROT_READ | (access == Access::kCopyOnWrite ? PROT_WRITE : 0);
    void* mapping = ::mmap(nullptr, size, protection, MAP_PRIVATE, fd, 0);
    if (mapping == MAP_FAILED) {
      llvm::Error error = SystemError("cannot map file", path);
      ::close(fd);
      return error;
    }
    // Readers walk checkpoints front to back: ask for large read-ahead.
    ::madvise(mapping, size, MADV_SEQUENTIAL);
    bytes->mapping_ = mapping;
    bytes->mapping_size_ = size;
    bytes->writable_ = access == Access::kCopyOnWrite;
    bytes->view_ = std::string_view(static_cast<const char*>(mapping), size);
  }
  // The mapping keeps the file's pages; the descriptor is no longer needed.
  ::close(fd);
  return std::shared_ptr<const FileBytes>(std::move(bytes));
}

std::shared_ptr<const FileBytes> FileBytes::Own(std::string bytes) {
  std::shared_ptr<FileBytes> file(new FileBytes());
  file->owned_ = std::move(bytes);
  file->view_ = file->owned_;
  return file;
}

namespace {

// madvise(`advice`) over the pages that hold bytes [offset, offset + size) of `mapping`.
bool AdvisePages(void* mapping, size_t mapping_size, size_t offset, size_t size, int advice) {
  static const size_t page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
  size_t begin = offset / page * page;
  size_t end = std::min(mapping_size, offset + size);
  return ::madvise(static_cast<char*>(mapping) + begin, end - begin, advice) == 0;
}

}  // namespace

void FileBytes::Populate(size_t offset, size_t size) const {
  if (mapping_ == nullptr || offset >= mapping_size_) return;
  AdvisePages(mapping_, mapping_size_, offset, size, MADV_POPULATE_READ);
}

char* FileBytes::TakePrivate(size_t offset, size_t size) const {
  if (mapping_ == nullptr || !writable_ || offset > mapping_size_ || size > mapping_size_ - offset)
    return nullptr;
  if (size > 0 && !AdvisePages(mapping_, mapping_size_, offset, size, MADV_POPULATE_WRITE)) return nullptr;
  return static_cast<char*>(mapping_) + offset;
}

FileBytes::~FileBytes() {
  if (mapping_ != nullptr) ::munmap(mapping_, mapping_size_);
}

}  // namespace accel::rt::checkpoint
