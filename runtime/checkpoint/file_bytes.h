#ifndef ACCEL_RUNTIME_CHECKPOINT_FILE_BYTES_H_
#define ACCEL_RUNTIME_CHECKPOINT_FILE_BYTES_H_

#include <memory>
#include <string>
#include <string_view>

#include "llvm/Support/Error.h"

namespace accel::rt::checkpoint {

// The read-only bytes of a whole file: mapped from disk (no copy; pages load on first touch)
// or owned in memory (images built by tests and fuzzers). Shared, so views handed out by
// readers stay valid for as long as any holder keeps the `shared_ptr`.
class FileBytes {
 public:
  // What the caller may do with the mapping.
  enum class Access {
    kRead,         // read it
    kCopyOnWrite,  // also take ranges private and write them (TakePrivate); the file never changes
  };
  // Maps `path` (MAP_PRIVATE). An empty file gives an empty view. Errors name the path and the
  // system's reason. The file must not be truncated while mapped (reads past the new end
  // raise SIGBUS); checkpoint files are never modified in place, only replaced by rename.
  static llvm::Expected<std::shared_ptr<const FileBytes>> Map(const std::string& path,
                                                              Access access = Access::kRead);
  // Takes ownership of `bytes`.
  static std::shared_ptr<const FileBytes> Own(std::string bytes);

  FileBytes(const FileBytes&) = delete;
  FileBytes& operator=(const FileBytes&) = delete;
  ~FileBytes();

  std::string_view view() const { return view_; }

  // Loads and maps the pages under view().substr(offset, size) in one call
  // (MADV_POPULATE_READ): a thread about to read that range then takes no page fault per 4 KiB,
  // and threads loading different ranges keep the disk busy while others compute. Best effort:
  // a no-op for owned bytes, and where the kernel lacks it the pages fault in on first touch.
  void Populate(size_t offset, size_t size) const;

  // Makes the pages under view().substr(offset, size) of a kCopyOnWrite mapping this process's
  // own, in one call (MADV_POPULATE_WRITE: the kernel copies each page from the page cache; no
  // fresh page is zeroed first), and returns a writable pointer to byte `offset`. Writes through
  // it show in view() and never reach the file: whoever takes a range owns those bytes. This is
  // how tensors are built on a verified file without allocating, zeroing and copying. Null for
  // owned bytes, a kRead mapping, or when the kernel refuses (then copy the bytes instead).
  char* TakePrivate(size_t offset, size_t size) const;

 private:
  FileBytes() = default;

  std::string owned_;
  void* mapping_ = nullptr;
  bool writable_ = false;
  size_t mapping_size_ = 0;
  std::string_view view_;
};

}  // namespace accel::rt::checkpoint

#endif  // ACCEL_RUNTIME_CHECKPOINT_FILE_BYTES_H_
