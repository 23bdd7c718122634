#ifndef ACCEL_RUNTIME_MEMORY_CHECKPOINT_HEADERS_H_
#define ACCEL_RUNTIME_MEMORY_CHECKPOINT_HEADERS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "llvm/Support/Error.h"
#include "runtime/memory/module_tree.h"

// A checkpoint's tensors from its safetensors headers alone: the first 8 + N bytes of each file
// are read, never the tensor data, so a 100 GB checkpoint costs what its headers cost.
namespace accel::rt::memory {

struct CheckpointHeaders {
  std::string index;                  // the shard index read, or empty for a single file
  std::vector<std::string> files;     // the safetensors files read, in order
  std::vector<TensorEntry> tensors;   // file by file, each in data order
  uint64_t data_bytes = 0;            // the data sections' bytes, all files together
  std::vector<std::string> warnings;  // what is odd but does not stop an estimate
};

// Reads the header of the safetensors file `path` and checks it against catalog §8.4 (ST-001 …
// ST-010), with the file's size standing in for its data: the tensors must tile the data section
// exactly and end where the file ends. Errors name the file and the rule. `data_bytes`, if set,
// receives the size of the data section.
llvm::Expected<std::vector<TensorEntry>> ReadSafetensorsHeader(const std::string& path,
                                                               uint64_t* data_bytes = nullptr);

// Reads a checkpoint as Accelerate's `load_checkpoint_in_model` finds one (catalog §6.4): a file
// ending in `.json` is a shard index (its `weight_map`, or the whole object in the legacy
// layout; shards relative to the index's folder), except Accel's own sharded checkpoint index
// (`sharded_state.index.json`), whose whole tensors' shapes are read from it; any other file is
// one safetensors file; a directory holds `model.safetensors` or exactly one `*.index.json`. Torch pickles
// (`pytorch_model.bin`) are refused, as they have no header to read; Accelerate would prefer one
// over `model.safetensors`. Fails when the index names a tensor its shard lacks, or two shards
// hold the same tensor.
llvm::Expected<CheckpointHeaders> ReadCheckpointHeaders(const std::string& path);

}  // namespace accel::rt::memory

#endif  // ACCEL_RUNTIME_MEMORY_CHECKPOINT_HEADERS_H_
