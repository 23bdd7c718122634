#ifndef ACCEL_TESTS_SUPPORT_WEIGHTS_H_
#define ACCEL_TESTS_SUPPORT_WEIGHTS_H_

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "llvm/Support/Error.h"
#include "runtime/checkpoint/safetensors.h"

namespace accel::rt::checkpoint {

// Model weights read from any layout Accelerate's load_checkpoint_in_model accepts (catalog
// §6.4), safetensors only. Tensors are views into the mapped files; nothing is copied.
class Weights {
 public:
  // Reads `path`, checked in this order:
  //   * a file ending in `.json`: a shard index (`weight_map`, or the whole object as the map
  //     in the legacy form), shards resolved in the index's folder;
  //   * any other file: one safetensors file;
  //   * a folder with `model.safetensors`: that file;
  //   * a folder with exactly one `*.index.json`: that index.
  // Fails with the file and the reason on: a torch pickle (`pytorch_model.bin`, `.bin`, `.pt`,
  // `.pth`, `.pkl`: Accel reads no pickle), a shard name in an index that is not a plain file
  // name in the index's folder (`../../x`, `/etc/x`, `a/b`), a missing or invalid shard, a
  // tensor found in two shards, a tensor the index places in a shard that lacks it (or the
  // reverse), no weights file, or several index files.
  static llvm::Expected<Weights> Load(const std::string& path);

  struct Tensor {
    const TensorInfo* info = nullptr;
    std::string_view bytes;
    const std::string* file = nullptr;  // the file it came from
  };
  // Tensor `name`; `info` is null when there is none. Valid while this object lives.
  Tensor Find(const std::string& name) const;
  // Every tensor name, sorted.
  std::vector<std::string> names() const;
  // The files read, in the order read (one, or the index's shards sorted by name).
  const std::vector<std::string>& files() const { return paths_; }
  // Things worth telling the user that did not stop the load.
  const std::vector<std::string>& warnings() const { return warnings_; }

 private:
  static llvm::Expected<SafetensorsFile> ReadSafetensors(const std::string& path);
  void Add(const std::string& path, SafetensorsFile file);
  llvm::Error LoadFile(const std::string& path);
  llvm::Error LoadIndex(const std::string& index_path);

  std::vector<std::string> paths_;
  std::vector<SafetensorsFile> files_;
  std::map<std::string, size_t> file_of_;  // tensor name -> index into files_
  std::vector<std::string> warnings_;
};

}  // namespace accel::rt::checkpoint

#endif  // ACCEL_TESTS_SUPPORT_WEIGHTS_H_
