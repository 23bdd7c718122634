#ifndef ACCEL_RUNTIME_CHECKPOINT_FILE_BYTES_H_
#define ACCEL_RUNTIME_CHECKPOINT_FILE_BYTES_H_

#include <memory>
#include <string>
#include <string_view>

#include "llvm/Support/Error.h"

namespace accel::rt::checkpoint {

// The bytes of a whole file: mapped from disk (no copy; pages load on first touch), read into
// this process's own memory (a checkpoint being loaded), or owned in memory (images built by
// tests and fuzzers). Shared, so views handed out by readers stay valid for as long as any holder
// keeps the `shared_ptr`.
class FileBytes {
 public:
  // Maps `path` read-only. An empty file gives an empty view. Errors name the path and the
  // system's reason. The file must not be truncated while mapped (reads past the new end raise
  // SIGBUS); checkpoint files are never modified in place, only replaced by rename.
  static llvm::Expected<std::shared_ptr<const FileBytes>> Map(const std::string& path);
  // Takes ownership of `bytes`.
  static std::shared_ptr<const FileBytes> Own(std::string bytes);
  // Opens `path` and reserves memory for all of it; ReadRange fills it. For a file read once, whole: a
  // checkpoint being loaded, whose pages then belong to this process (TakePrivate) without a copy-on-write
  // fault per 4 KiB page.
  static llvm::Expected<std::shared_ptr<FileBytes>> OpenForReading(const std::string& path);

  FileBytes(const FileBytes&) = delete;
  FileBytes& operator=(const FileBytes&) = delete;
  ~FileBytes();

  std::string_view view() const { return view_; }

  // Loads and maps the pages under view().substr(offset, size) of a mapping in one call
  // (MADV_POPULATE_READ): a thread about to read that range then takes no page fault per 4 KiB,
  // and threads loading different ranges keep the disk busy while others compute. Best effort:
  // a no-op for other bytes, and where the kernel lacks it the pages fault in on first touch.
  void Populate(size_t offset, size_t size) const;

  // Reads bytes [offset, offset + size) of an OpenForReading file into view(). Disjoint ranges
  // may be read on several threads at once. Reads go around the page cache (O_DIRECT) where the
  // file system allows it: the disk writes straight into this memory, and no page of a file read
  // once is cached, filled and reclaimed on the way; else through it. An error names the path.
  llvm::Error ReadRange(size_t offset, size_t size);
  // Closes the file of an OpenForReading view once every range is read.
  void CloseFile();

  // A writable pointer to byte `offset` of bytes read into this process's memory (OpenForReading),
  // for building tensors on them without allocating, zeroing and copying: whoever takes a
  // range owns those bytes, and writes through it show in view(). Null for mapped or owned bytes
  // (copy them instead).
  char* TakePrivate(size_t offset, size_t size) const;

 private:
  FileBytes() = default;

  std::string owned_;
  void* mapping_ = nullptr;  // Map: the file's pages; OpenForReading: the reserved memory
  size_t mapping_size_ = 0;
  bool private_ = false;  // OpenForReading
  std::string path_;      // OpenForReading, for errors
  int fd_ = -1;           // OpenForReading, until CloseFile
  int direct_fd_ = -1;    // the same file opened with O_DIRECT, where allowed
  std::string_view view_;
};

}  // namespace accel::rt::checkpoint

#endif  // ACCEL_RUNTIME_CHECKPOINT_FILE_BYTES_H_
