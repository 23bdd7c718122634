// libFuzzer target for the safetensors reader (runtime/checkpoint/safetensors.h). Any bytes
// must give either a file or an error, never a crash or a read outside the input (ASan and
// UBSan are on in build-fuzz). For every file it accepts, two more properties are checked:
// each tensor view lies inside the input and has the header's size, and the writer re-encodes
// the file into one the reader accepts with the same tensors, bytes and metadata.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "runtime/checkpoint/safetensors.h"

using accel::rt::checkpoint::EncodedSafetensors;
using accel::rt::checkpoint::EncodeSafetensors;
using accel::rt::checkpoint::SafetensorsFile;
using accel::rt::checkpoint::TensorRef;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string input(reinterpret_cast<const char*>(data), size);
  llvm::Expected<SafetensorsFile> file = SafetensorsFile::Parse(input, "fuzz.safetensors");
  if (!file) {
    llvm::consumeError(file.takeError());
    return 0;
  }
  std::vector<TensorRef> tensors;
  for (const auto& [name, info] : file->tensors()) {
    std::string_view bytes = file->Bytes(name);
    if (bytes.size() != info.end - info.begin) __builtin_trap();
    tensors.push_back({name, info.dtype, info.shape, bytes});
  }
  llvm::Expected<EncodedSafetensors> encoded = EncodeSafetensors(tensors, file->metadata());
  if (!encoded) __builtin_trap();  // the writer refused what the reader accepted
  std::string image;
  for (std::string_view part : encoded->Parts()) image.append(part);
  llvm::Expected<SafetensorsFile> again = SafetensorsFile::Parse(image, "fuzz-rewritten.safetensors");
  if (!again) __builtin_trap();  // the reader refused what the writer wrote
  if (again->metadata() != file->metadata() || again->tensors().size() != file->tensors().size())
    __builtin_trap();
  for (const auto& [name, info] : file->tensors()) {
    auto it = again->tensors().find(name);
    if (it == again->tensors().end() || it->second.dtype != info.dtype || it->second.shape != info.shape ||
        again->Bytes(name) != file->Bytes(name)) {
      __builtin_trap();
    }
  }
  return 0;
}
