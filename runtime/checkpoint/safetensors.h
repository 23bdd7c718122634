#ifndef ACCEL_RUNTIME_CHECKPOINT_SAFETENSORS_H_
#define ACCEL_RUNTIME_CHECKPOINT_SAFETENSORS_H_

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "llvm/Support/Error.h"

// The safetensors format at byte level (catalog §8): an 8-byte little-endian header length,
// a JSON header, then the raw tensor bytes. Torch-free: tensors are named byte ranges.
namespace accel::rt::checkpoint {

// A tensor to write: its bytes must stay valid until WriteSafetensors returns.
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
// prefix included. `order` receives the tensors' indices in data order.
llvm::Expected<std::string> EncodeHeader(const std::vector<TensorRef>& tensors,
                                         const std::map<std::string, std::string>& metadata,
                                         std::vector<size_t>* order);

// Writes a safetensors file crash-safely (see WriteFileAtomically). Fails on a duplicate or
// reserved name, an unknown dtype, or a byte count that does not match dtype × shape.
llvm::Error WriteSafetensors(const std::string& path, const std::vector<TensorRef>& tensors,
                             const std::map<std::string, std::string>& metadata = {{"format", "pt"}});

struct TensorInfo {
  std::string dtype;
  std::vector<int64_t> shape;
  uint64_t begin = 0;  // offsets relative to the data section
  uint64_t end = 0;
};

// A validated safetensors file held in memory.
class SafetensorsFile {
 public:
  // Reads and validates `path` against every rule of catalog §8.4 (ST-001 … ST-011). Errors
  // name the file and the rule broken.
  static llvm::Expected<SafetensorsFile> Read(const std::string& path);
  // Validates an in-memory file image; `name` is used in error messages.
  static llvm::Expected<SafetensorsFile> Parse(std::string bytes, const std::string& name);

  const std::map<std::string, TensorInfo>& tensors() const { return tensors_; }
  const std::map<std::string, std::string>& metadata() const { return metadata_; }
  // The raw bytes of tensor `name`; empty view when there is no such tensor.
  std::string_view Bytes(const std::string& name) const;

 private:
  std::string bytes_;
  uint64_t data_offset_ = 0;
  std::map<std::string, TensorInfo> tensors_;
  std::map<std::string, std::string> metadata_;
};

}  // namespace accel::rt::checkpoint

#endif  // ACCEL_RUNTIME_CHECKPOINT_SAFETENSORS_H_
