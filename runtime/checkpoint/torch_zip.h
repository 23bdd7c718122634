#ifndef ACCEL_RUNTIME_CHECKPOINT_TORCH_ZIP_H_
#define ACCEL_RUNTIME_CHECKPOINT_TORCH_ZIP_H_

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "llvm/Support/Error.h"
#include "runtime/checkpoint/file_bytes.h"
#include "runtime/checkpoint/torch_pickle.h"

// The file `torch.save` writes: a zip archive of uncompressed records under one folder
// (`<name>/data.pkl`, the pickle; `<name>/data/<key>`, each storage's bytes, aligned to 64;
// `byteorder`, `version` and the format's small records). Torch-free: what `torch.load` reads
// is written from a pickle and byte views, and read back into a pickle tree and views.
namespace accel::rt::checkpoint {

// A storage to write: record `data/<key>`, its bytes as pieces written back to back.
struct TorchStorage {
  std::string key;
  std::vector<std::string_view> parts;
};

// A torch.save file ready to be written without copying the storages' bytes.
class EncodedTorchFile {
 public:
  // Pieces to write back to back: they point into this object and into the storages' memory.
  const std::vector<std::string_view>& parts() const { return parts_; }
  uint64_t size() const;

 private:
  friend llvm::Expected<EncodedTorchFile> EncodeTorchFile(std::string_view, std::string,
                                                          const std::vector<TorchStorage>&, uint64_t);
  std::deque<std::string> text_;
  std::vector<std::string_view> parts_;
};

// The archive torch.save(obj) writes to `<archive_name>.pt`-like files: `pickle` (from
// pickle::Write) as data.pkl, and each storage. Entries at or beyond `zip64_from` bytes (in
// size or offset) take the zip64 extensions; 4 GiB - 1, the zip limit, unless a test lowers it.
llvm::Expected<EncodedTorchFile> EncodeTorchFile(std::string_view archive_name, std::string pickle,
                                                 const std::vector<TorchStorage>& storages,
                                                 uint64_t zip64_from = 0xFFFFFFFFu);

// A torch.save file read: its pickle, as a tree, and its records' bytes, viewed in the mapped
// file (which `bytes` keeps alive).
struct TorchFile {
  std::shared_ptr<const FileBytes> bytes;
  pickle::Ref root;
  std::map<std::string, std::string_view> storages;  // by key

  // The bytes of `tensor` (checked: within its storage, dense, row-major), or an error naming it.
  llvm::Expected<std::string_view> TensorBytes(const pickle::TensorInfo& tensor) const;
};

// Reads `path` as a torch.save file, never running its pickle (torch_pickle.h). Fails, naming
// the file, on anything but a zip archive of stored records under one folder with a data.pkl,
// a record outside the file, a compressed record, or a pickle the reader refuses. A pickle
// file of the older, non-zip torch.save format is refused with a hint to save it again.
llvm::Expected<TorchFile> ReadTorchFile(const std::string& path);

// The same for bytes already in memory or mapped; `name` is what errors call them.
llvm::Expected<TorchFile> ParseTorchFile(std::shared_ptr<const FileBytes> bytes, const std::string& name);

}  // namespace accel::rt::checkpoint

#endif  // ACCEL_RUNTIME_CHECKPOINT_TORCH_ZIP_H_
