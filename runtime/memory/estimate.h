#ifndef ACCEL_RUNTIME_MEMORY_ESTIMATE_H_
#define ACCEL_RUNTIME_MEMORY_ESTIMATE_H_

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "llvm/Support/Error.h"
#include "runtime/memory/checkpoint_headers.h"
#include "runtime/memory/modeling.h"
#include "runtime/memory/module_tree.h"

// `accelrun estimate-memory`: sizes, the largest layer and a device map for a checkpoint, from
// its headers alone. The entry point of runtime/memory for tools.
namespace accel::rt::memory {

// What the estimate asks of the machine it runs on, behind a seam tests can fake.
struct EstimateEnvironment {
  // Bytes of RAM available now, or unset when unknown. Used only when `--max-memory` gives no
  // `cpu` budget: Accelerate then takes 80% of it.
  std::function<std::optional<uint64_t>()> available_ram;
};

// The environment of this machine: MemAvailable from /proc/meminfo.
EstimateEnvironment SystemEnvironment();

struct EstimateOptions {
  std::string checkpoint;  // a .safetensors file, an .index.json or a directory
  // Unset: sizes only, no device map.
  std::optional<MaxMemory> max_memory;
  std::optional<Dtype> dtype;
  std::vector<NamePattern> no_split;
  std::vector<NamePattern> buffers;
  std::vector<std::vector<std::string>> tied;
  // Tensors matching the pattern are sized as the dtype (Accelerate's special_dtypes, which
  // takes exact names); the first matching pattern wins.
  std::vector<std::pair<NamePattern, Dtype>> special_dtypes;
  bool balanced = false;  // get_balanced_memory before the device map
  bool low_zero = false;  // with balanced: keep GPU 0 as empty as possible
  bool offload_buffers = false;
  bool fallback_allocation = false;
  bool clean_result = true;
  int depth = 1;  // module rows down to this depth
};

struct ModuleRow {
  std::string name;
  int depth = 1;
  bool is_tensor = false;
  double bytes = 0;    // under the requested dtype
  size_t tensors = 0;  // tensors its size counts (a tied tensor counts once, under its first name)
};

struct Estimate {
  CheckpointHeaders headers;
  size_t tensor_count = 0;  // stored tensors
  double stored_bytes = 0;  // total at the stored dtypes
  double total_bytes = 0;   // total under the requested dtype
  LayerSize stored_largest_layer;
  LayerSize largest_layer;  // under the requested dtype
  std::vector<ModuleRow> modules;
  // Set with a device map: the budget used (cpu filled in, balanced if asked), the map, and the
  // size of each entry under the requested dtype.
  std::optional<MaxMemory> max_memory;
  std::optional<DeviceMap> device_map;
  std::vector<double> entry_bytes;
  std::vector<std::string> uncovered;  // tensors the map does not place
  std::vector<std::string> notes;      // how a budget was filled in
  std::vector<std::string> warnings;   // header, tree and device-map warnings, in that order
};

// Reads the checkpoint's headers and computes everything the command prints. Fails on an
// unreadable or invalid checkpoint, a bad tied group, or a balanced budget it cannot build.
llvm::Expected<Estimate> EstimateMemory(const EstimateOptions& options,
                                        const EstimateEnvironment& environment);

// The estimate as the command prints it: a text report, or one JSON object.
std::string RenderText(const Estimate& estimate, const EstimateOptions& options);
// `bytes` in the largest binary unit under 1024 of it, two decimals: `1.50 KiB`.
std::string HumanBytes(double bytes);
std::string RenderJson(const Estimate& estimate, const EstimateOptions& options);

struct CommandResult {
  int exit_code = 0;  // 0, or 2 for a bad flag or a bad checkpoint
  std::string out;
  std::string err;
};

// `accelrun estimate-memory ARGS...` (`args` without the subcommand). Never throws; usage and
// checkpoint errors are `accelrun: error: ...` lines on `err` with exit code 2.
CommandResult RunEstimateMemoryCommand(const std::vector<std::string>& args,
                                       const EstimateEnvironment& environment);

}  // namespace accel::rt::memory

#endif  // ACCEL_RUNTIME_MEMORY_ESTIMATE_H_
