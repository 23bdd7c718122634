#ifndef ACCEL_RUNTIME_CHECKPOINT_SAFETENSORS_H_
#define ACCEL_RUNTIME_CHECKPOINT_SAFETENSORS_H_

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "llvm/Support/Error.h"
#include "runtime/checkpoint/file_bytes.h"

// The safetensors format at byte level (catalog §8): an 8-byte little-endian header length,
// a JSON header, then the raw tensor bytes. Torch-free: tensors are named byte ranges.
namespace accel::rt::checkpoint {

// Headers larger than this are refused by writer and reader alike (catalog §8.3 step 4).
inline constexpr uint64_t kMaxHeaderBytes = 100'000'000;

// A tensor to write: its bytes must stay valid until the write returns.
struct TensorRef {
  std::string name;
  std::string dtype;  // safetensors dtype string: F32, F16, BF16, I64, ...
  std::vector<int64_t> shape;
  std::string_view bytes;  // little-endian, row-major, dense
};

// Bytes per element of a byte-sized safetensors dtype, or 0 when unknown or sub-byte.
size_t DtypeSize(std::string_view dtype);

// Lays out the file as the reference writer does (tensors ordered by dtype alignment, then
// name; header padded with spaces to a multiple of 8) and returns the header bytes, length
// prefix included. `order` receives the tensors' indices in data order. Fails, naming the
// tensor, on a duplicate or reserved name, an unknown dtype, a byte count that does not match
// dtype × shape, a name or metadata string that is not UTF-8, or a header over 100 MB.
llvm::Expected<std::string> EncodeHeader(const std::vector<TensorRef>& tensors,
                                         const std::map<std::string, std::string>& metadata,
                                         std::vector<size_t>* order);

// A file ready to be written without copying tensor bytes: the header, then views of the
// tensors' bytes in file order. The views point into the `TensorRef`s' memory.
struct EncodedSafetensors {
  std::string header;
  std::vector<std::string_view> data;

  // The whole file as pieces to write back to back; they point into this object (header)
  // and into the tensors' memory, so both must outlive the returned views.
  std::vector<std::string_view> Parts() const;
  uint64_t size() const;
};

// EncodeHeader plus the data views; fails as EncodeHeader does.
llvm::Expected<EncodedSafetensors> EncodeSafetensors(const std::vector<TensorRef>& tensors,
                                                     const std::map<std::string, std::string>& metadata = {
                                                         {"format", "pt"}});

// A tensor whose bytes lie in several places (e.g. slices of a sharded checkpoint): `pieces`
// written back to back are its dense bytes. The views must stay valid until the write returns.
struct ScatteredTensorRef {
  std::string name;
  std::string dtype;
  std::vector<int64_t> shape;
  std::vector<std::string_view> pieces;
};

// The same file layout for scattered tensors: each tensor's pieces follow one another in the
// data views, so a file is assembled from many sources without copying. Fails as EncodeHeader
// does, the byte count being the pieces' total.
llvm::Expected<EncodedSafetensors> EncodeScatteredSafetensors(
    const std::vector<ScatteredTensorRef>& tensors, const std::map<std::string, std::string>& metadata);

// Writes a safetensors file crash-safely (see WriteFileAtomically). Fails as EncodeHeader does,
// with the path in the message, or on an I/O error.
llvm::Error WriteSafetensors(const std::string& path, const std::vector<TensorRef>& tensors,
                             const std::map<std::string, std::string>& metadata = {{"format", "pt"}});

struct TensorInfo {
  std::string dtype;
  std::vector<int64_t> shape;
  uint64_t begin = 0;  // offsets relative to the data section
  uint64_t end = 0;
};

// A validated safetensors file. The tensor bytes are views into the mapped (or owned) file:
// nothing is copied, and a view stays valid while this object or a copy of it lives. The
// views are not aligned to their element size when a foreign writer did not pad the header
// (ST-014): copy or check alignment before reinterpreting them as numbers.
class SafetensorsFile {
 public:
  // Maps `path` and validates it against every rule of catalog §8.4 (ST-001 … ST-015). Errors
  // name the file, the rule id and what was wrong.
  static llvm::Expected<SafetensorsFile> Read(const std::string& path);
  // Validates an in-memory file image; `name` is used in error messages.
  static llvm::Expected<SafetensorsFile> Parse(std::string bytes, const std::string& name);
  // Validates bytes already mapped or owned elsewhere (e.g. a checkpoint's verified files).
  static llvm::Expected<SafetensorsFile> FromBytes(std::shared_ptr<const FileBytes> bytes,
                                                   const std::string& name);

  const std::map<std::string, TensorInfo>& tensors() const { return tensors_; }
  const std::map<std::string, std::string>& metadata() const { return metadata_; }
  // The raw bytes of tensor `name`; empty view when there is no such tensor.
  std::string_view Bytes(const std::string& name) const;

 private:
  std::shared_ptr<const FileBytes> file_;
  uint64_t data_offset_ = 0;
  std::map<std::string, TensorInfo> tensors_;
  std::map<std::string, std::string> metadata_;
};

}  // namespace accel::rt::checkpoint

#endif  // ACCEL_RUNTIME_CHECKPOINT_SAFETENSORS_H_
