// libFuzzer target for the torch.save reader (runtime/checkpoint/torch_zip.h, torch_pickle.h),
// what `accelrun import-state` reads from a folder it was given. Any bytes, as a bare pickle and
// as an archive, must give a tree or an error, never a crash, a hang or a read outside the input
// (ASan and UBSan are on in build-fuzz). For every pickle it accepts whose tree the writer can
// write (no callables left over, no cycles), writing, reading and writing again must give the
// same bytes, and every tensor's bytes must lie inside the archive.
#include <cstddef>
#include <cstdint>
#include <set>
#include <string>

#include "runtime/checkpoint/torch_pickle.h"
#include "runtime/checkpoint/torch_zip.h"

namespace pk = accel::rt::checkpoint::pickle;

namespace {

// Whether the tree under `object` is finite and at most 64 deep (a pickle can append a list to
// itself).
bool Finite(const pk::Object& object, std::set<const pk::Object*>& path, int depth) {
  if (depth > 64 || !path.insert(&object).second) return false;
  for (const pk::Ref& item : object.items)
    if (!Finite(*item, path, depth + 1)) return false;
  path.erase(&object);
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string input(reinterpret_cast<const char*>(data), size);
  llvm::Expected<pk::Ref> read = pk::Read(input);
  if (!read) {
    llvm::consumeError(read.takeError());
  } else {
    std::set<const pk::Object*> path;
    if (Finite(**read, path, 0)) {
      llvm::Expected<std::string> written = pk::Write(**read);
      if (written) {
        llvm::Expected<pk::Ref> again = pk::Read(*written);
        if (!again) __builtin_trap();  // the reader refused what the writer wrote
        llvm::Expected<std::string> rewritten = pk::Write(**again);
        if (!rewritten || *rewritten != *written) __builtin_trap();
      } else {
        llvm::consumeError(written.takeError());
      }
    }
  }
  auto bytes = accel::rt::checkpoint::FileBytes::Own(input);
  llvm::Expected<accel::rt::checkpoint::TorchFile> file = accel::rt::checkpoint::ParseTorchFile(bytes, "fuzz.bin");
  if (!file) {
    llvm::consumeError(file.takeError());
    return 0;
  }
  const pk::Object& root = *file->root;
  for (const pk::Ref& item : root.items) {
    if (item->kind != pk::Object::Kind::kTensor) continue;
    llvm::Expected<std::string_view> tensor = file->TensorBytes(item->tensor);
    if (!tensor) {
      llvm::consumeError(tensor.takeError());
      continue;
    }
    std::string_view all = bytes->view();
    if (tensor->data() < all.data() || tensor->data() + tensor->size() > all.data() + all.size()) __builtin_trap();
  }
  return 0;
}
