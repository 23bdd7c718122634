// libFuzzer target for the checkpoint manifest reader (runtime/checkpoint/manifest.h), which
// decides what a resume trusts. Any bytes must give a manifest or an error, never a crash or a
// read outside the input (ASan and UBSan are on in build-fuzz). A manifest it accepts is written
// back and read again to the same bytes.
#include <cstddef>
#include <cstdint>
#include <string>

#include "runtime/checkpoint/manifest.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view input(reinterpret_cast<const char*>(data), size);
  llvm::Expected<accel::rt::checkpoint::Manifest> manifest =
      accel::rt::checkpoint::ParseManifest(input, "fuzz/accel_manifest.json");
  if (!manifest) {
    llvm::consumeError(manifest.takeError());
    return 0;
  }
  std::string written = accel::rt::checkpoint::EncodeManifest(*manifest);
  llvm::Expected<accel::rt::checkpoint::Manifest> again =
      accel::rt::checkpoint::ParseManifest(written, "fuzz/rewritten.json");
  if (!again) __builtin_trap();
  if (accel::rt::checkpoint::EncodeManifest(*again) != written) __builtin_trap();
  return 0;
}
