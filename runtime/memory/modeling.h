#ifndef ACCEL_RUNTIME_MEMORY_MODELING_H_
#define ACCEL_RUNTIME_MEMORY_MODELING_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "llvm/Support/Error.h"
#include "runtime/memory/dtype.h"
#include "runtime/memory/module_tree.h"

// Accelerate's modeling utilities (catalog §6.4) on a ModuleTree: module sizes, the largest
// layer, balanced memory and the automatic device map, step for step as Accelerate computes them.
// Torch-free and deterministic: nothing here probes devices.
//
// Sizes are bytes as doubles because Accelerate's are fractional for sub-byte dtypes (bool 1/8,
// int2 1/4, int4 1/2 byte per element); every size is a multiple of 1/8 below 2^53 bits, which
// a double holds exactly (ModuleTree::Build refuses more than 2^50 elements).
namespace accel::rt::memory {

// `convert_file_size_to_int`: a plain byte count (`1000`), or a number and a unit:
// `GIB/MIB/KIB` (2^30/2^20/2^10) or `GB/MB/KB` (10^9/10^6/10^3), case-insensitive; a final
// lower-case `b` (`5Gb`) means bits, so the result is divided by 8. Fails on anything else,
// on a negative or non-finite number, and above 2^62 bytes.
llvm::Expected<uint64_t> ParseSize(std::string_view text);

// One device's memory budget. Devices are named as Accelerate keys `max_memory`: a GPU index
// (`0`, `1`, ...), `mps`, `cpu` or `disk`.
struct DeviceLimit {
  std::string device;
  double bytes = 0;
};
using MaxMemory = std::vector<DeviceLimit>;

// True for a GPU index (`0`, `12`).
bool IsGpu(std::string_view device);

// Parses `cpu=8GB,0=20GB` (sizes as ParseSize reads them) and orders the devices as
// `get_max_memory` does: GPU indices ascending, then `mps`, `cpu`, `disk`. Fails on an unknown or
// repeated device, a missing `=`, or a bad size. Does not add `cpu` when it is missing.
llvm::Expected<MaxMemory> ParseMaxMemory(std::string_view text);

// What `compute_module_sizes` takes besides the model.
struct SizeOptions {
  // `dtype`: if set, every floating tensor counts min(this size, its own); integer and bool
  // tensors keep their own size.
  std::optional<Dtype> dtype;
  // `special_dtypes`, by full tensor name: the size of this dtype whatever the tensor's own.
  std::map<std::string, Dtype, std::less<>> special_dtypes;
};

// The result of `compute_module_sizes`: for every module-name prefix ("" = the whole model) and
// every tensor, the bytes of the tensors below it. Tied aliases count nothing.
class ModuleSizes {
 public:
  explicit ModuleSizes(size_t nodes) : bytes_(nodes, 0.0), present_(nodes, false) {}

  // Bytes under `id`; 0 for a node without entry (Accelerate's sizes are a defaultdict).
  double Get(NodeId id) const { return bytes_[id]; }
  double total() const { return bytes_[0]; }
  // Whether Accelerate's mapping has an entry for `id` (false for a subtree of aliases only).
  bool Has(NodeId id) const { return present_[id]; }
  // The nodes with an entry, in the mapping's insertion order: each tensor's prefixes from the
  // root down to the tensor, tensors in model order.
  const std::vector<NodeId>& order() const { return order_; }

  // Adds `bytes` to `id`, creating its entry if needed.
  void Add(NodeId id, double bytes);

 private:
  std::vector<double> bytes_;
  std::vector<bool> present_;
  std::vector<NodeId> order_;
};

// `compute_module_sizes(model, dtype, special_dtypes, buffers_only)`.
ModuleSizes ComputeModuleSizes(const ModuleTree& tree, const SizeOptions& options, bool buffers_only = false);

// The work queue Accelerate starts from: the root's direct parameters, then its child modules,
// then its direct buffers.
std::vector<NodeId> RootEntries(const ModuleTree& tree);

// A module's split, as Accelerate splits it: its direct parameters, then its child modules (its
// direct buffers are dropped, as in Accelerate).
std::vector<NodeId> SplitEntries(const ModuleTree& tree, NodeId module);

// True for a module Accelerate would split: it has child modules and no no-split pattern
// matches its name. No-split patterns stand in for `no_split_module_classes`: a checkpoint
// has names, not classes.
bool CanSplit(const ModuleTree& tree, NodeId id, const std::vector<NamePattern>& no_split);

struct LayerSize {
  double bytes = 0;
  std::vector<std::string> names;  // every layer of that size, in walk order
};

// `get_max_layer_size(modules, module_sizes, no_split_module_classes)`: depth-first over
// `entries`; a layer is a tensor, a module without child modules, or a no-split module.
LayerSize GetMaxLayerSize(const ModuleTree& tree, const std::vector<NodeId>& entries,
                          const ModuleSizes& sizes, const std::vector<NamePattern>& no_split);

struct MaximumSizes {
  double total_bytes = 0;
  LayerSize largest_layer;
};

// `calculate_maximum_sizes(model)` with `no_split` standing in for the model's
// `_no_split_modules`. Sizes use `options` (Accelerate's uses the stored dtypes: pass {}).
MaximumSizes CalculateMaximumSizes(const ModuleTree& tree, const std::vector<NamePattern>& no_split,
                                   const SizeOptions& options = {});

// `get_balanced_memory(model, max_memory, no_split_module_classes, dtype, special_dtypes,
// low_zero)` for an explicit `max_memory` (so a single GPU keeps all of its budget: Accelerate
// takes 10% off only when it measured the memory itself). Fails when `low_zero` needs a GPU
// index the budget lacks (Accelerate raises KeyError).
llvm::Expected<MaxMemory> GetBalancedMemory(const ModuleTree& tree, MaxMemory max_memory,
                                            const std::vector<NamePattern>& no_split,
                                            const SizeOptions& options, bool low_zero = false);

struct DeviceMapOptions {
  std::vector<NamePattern> no_split;
  SizeOptions sizes;
  bool clean_result = true;
  bool offload_buffers = false;
  bool fallback_allocation = false;
};

// An ordered device map: module or tensor name → device.
using DeviceMapEntries = std::vector<std::pair<std::string, std::string>>;

struct DeviceMap {
  DeviceMapEntries entries;
  // `device_memory_used` for each device that got anything, in device order; a main device's
  // figure includes the room it keeps for the largest layer once the walk moved past it.
  std::vector<DeviceLimit> used;
  // Devices that received nothing, and the bytes they would have needed for the first module
  // offered to them (Accelerate's info log).
  std::vector<DeviceLimit> minimum_needed;
  // Bytes of buffers in modules placed on cpu or disk (Accelerate keeps those on the GPU at run
  // time unless `offload_buffers`).
  double offloaded_buffer_bytes = 0;
  // Accelerate's warnings, as sentences.
  std::vector<std::string> warnings;
};

// `infer_auto_device_map(model, max_memory, no_split_module_classes, dtype, special_dtypes,
// clean_result=, offload_buffers=, fallback_allocation=)` with the algorithm of catalog §6.4.
// `max_memory` must be ordered as ParseMaxMemory orders it; `disk` is added at the end when
// absent and is never full. Always succeeds: what fits nowhere else goes to disk.
DeviceMap InferAutoDeviceMap(const ModuleTree& tree, const MaxMemory& max_memory,
                             const DeviceMapOptions& options);

// `clean_device_map`: wherever every entry under a prefix maps to one device, the entries
// collapse into the prefix, recursively from the root down. The collapsed entry takes the place
// of the first entry it replaces (Accelerate moves it to the end; the mapping is the same).
void CleanDeviceMap(DeviceMapEntries& entries);

// The tensors no entry of `entries` covers (an entry covers its name and everything below it),
// in model order. Accelerate's `check_device_map` raises on these.
std::vector<std::string> UncoveredTensors(const ModuleTree& tree, const DeviceMapEntries& entries);

}  // namespace accel::rt::memory

#endif  // ACCEL_RUNTIME_MEMORY_MODELING_H_
