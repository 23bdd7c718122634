#ifndef ACCEL_RUNTIME_MEMORY_LIVE_MODULE_H_
#define ACCEL_RUNTIME_MEMORY_LIVE_MODULE_H_

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>
#include <c10/core/ScalarType.h>
#include <torch/nn/module.h>

#include "llvm/Support/Error.h"
#include "runtime/memory/modeling.h"
#include "runtime/memory/module_tree.h"

// Accelerate's modeling utilities on a live `torch::nn::Module` (catalog §6.4): the ModuleTree a
// module implies, so every function of modeling.h works on it as on checkpoint headers, and the
// functions that need tensors: set_module_tensor_to_device, retie_parameters,
// extract_model_from_parallel, the disk-offload folder and load_checkpoint_in_model.
//
// How a C++ module differs from a Python one, and what follows (docs/memory.md, "Live modules"):
// a built-in module keeps its tensors twice, in its registry (`named_parameters()`) and in
// members (`LinearImpl::weight`), both handles of one TensorImpl. Nothing here can reach the
// members, so tensors are never replaced: they are changed in place (storage, shape, dtype and
// device of the one TensorImpl), which every handle sees, autograd flags included. A tensor
// registered under two names (one TensorImpl) is therefore never untied by a move.
//
// Every function catches LibTorch's exceptions and returns them as errors.
namespace accel::rt::memory {

// A device as Accelerate names it: a GPU index (`0` → cuda:0), `cpu`, `meta`, `mps`, or any
// name torch parses (`cuda:1`). `disk` is not a torch device: fails, as does anything else.
llvm::Expected<c10::Device> ParseTorchDevice(std::string_view device);

// The safetensors dtype string of a torch dtype (`F32`, `BF16`, `I64`, `BOOL`, ...), or fails for
// a dtype safetensors cannot name (quantized, complex128).
llvm::Expected<std::string> SafetensorsDtype(c10::ScalarType dtype);
// The torch dtype of a safetensors dtype string; fails for one LibTorch 1.13 lacks (U16, F8_*).
llvm::Expected<c10::ScalarType> TorchDtype(std::string_view safetensors_dtype);

// `find_tied_parameters`: groups of tensor names (parameters and buffers) that are one tensor,
// that is one TensorImpl registered under several names or distinct tensors viewing one storage
// with the same offset, shape, strides and dtype. Each group sorted by name, groups in the order
// of their first member in `named_parameters()` then `named_buffers()`. Two different views of
// one storage (a flat buffer cut into parameters) are not a tie.
std::vector<std::vector<std::string>> FindTiedParameters(const torch::nn::Module& model);

// The ModuleTree of a live module, for ComputeModuleSizes … InferAutoDeviceMap: every
// parameter and buffer by its dotted name with its dtype and shape (meta tensors included: no
// data is read), buffers marked as buffers, ties from FindTiedParameters (counted once, under
// their first name in `named_parameters()` order, as Python's dedup does), tensor-less modules
// (ReLU) kept, and siblings in registration order. Undefined tensors (a buffer registered
// empty) are left out. Fails as ModuleTree::Build does, or on a dtype safetensors cannot name.
llvm::Expected<ModuleTree> BuildModuleTree(const torch::nn::Module& model);

// `no_split_module_classes` for a live module: a pattern for the exact name of every module
// whose class is one of `classes`. A class matches by its full C++ name (`MyLib::Block`,
// `torch::nn::LinearImpl`), its last component (`LinearImpl`), or that without the `Impl` of a
// ModuleHolder's implementation (`Linear`).
std::vector<NamePattern> NoSplitPatterns(const torch::nn::Module& model,
                                         const std::vector<std::string>& classes);

// `get_module_children_bottom_up(model, return_fqns=True)`: every module with its dotted name,
// in post-order (children in registration order, each subtree before its parent), `model`
// itself last under "".
std::vector<std::pair<std::string, std::shared_ptr<torch::nn::Module>>> GetModuleChildrenBottomUp(
    const std::shared_ptr<torch::nn::Module>& model);

// A parallel wrapper, as Accel defines one for C++ modules: a module with no parameter or buffer
// of its own and exactly one child, named `module` (how DDP, DataParallel, DeepSpeedEngine and
// FSDP hold the model they wrap) or `_orig_mod` (torch.compile's shell).
bool IsParallelWrapper(const torch::nn::Module& module);

// `extract_model_from_parallel(model, keep_torch_compile=, recursive=)`: peels a `_orig_mod`
// shell, then every `module` wrapper below it; with `recursive`, also replaces every wrapper
// found deeper in the tree by the module it wraps (registered under the wrapper's name). With
// `keep_torch_compile` and a shell at the top, the shell's `_orig_mod` is replaced by the
// unwrapped model and the shell is returned, as Accelerate re-wraps it. `keep_fp32_wrapper`
// has no C++ counterpart (a C++ module's forward cannot be patched) and is not offered.
// `model` must not be null.
std::shared_ptr<torch::nn::Module> ExtractModelFromParallel(std::shared_ptr<torch::nn::Module> model,
                                                            bool keep_torch_compile = true,
                                                            bool recursive = false);

// The state-dict keys of a wrapped model as the unwrapped model names them: while every key
// starts with `module.` or every key starts with `_orig_mod.`, that segment is dropped (a
// wrapper holds nothing but its one child, so all its keys share the prefix). Other keys are
// returned unchanged.
std::vector<std::string> StripParallelPrefixes(std::vector<std::string> keys);

// `set_module_tensor_to_device(module, tensor_name, device, value, dtype)`. Walks the dotted
// name through child modules; the last segment must be a registered parameter or buffer. Then:
//   * with `value`: its shape must equal the tensor's; it is cast to the tensor's dtype when
//     `dtype` is unset, else to `dtype` unless `value` is integer or bool; then moved to
//     `device`;
//   * without `value`: the tensor itself moves to `device`; `dtype` applies only when `device`
//     is meta, and not to integer or bool tensors;
// and the registered tensor takes the result in place (see above: members and other names of
// the same tensor follow; `requires_grad` is kept). A value on the same device and of the same
// dtype is shared, not copied. Fails, naming the tensor, on a missing module or tensor, a shape
// mismatch, a meta tensor without `value` going to a real device, a sparse, quantized or MKL-DNN
// tensor (only dense ones can be changed in place), or a device torch cannot reach (cuda on a
// CPU-only build).
llvm::Error SetModuleTensorToDevice(torch::nn::Module& module, std::string_view tensor_name,
                                    const c10::Device& device, const std::optional<at::Tensor>& value = {},
                                    std::optional<c10::ScalarType> dtype = {});

// `retie_parameters(model, tied_params)`: in each group, every member takes the storage, shape,
// dtype and device of the group's first member (in the given order) that is not on meta; a
// group all on meta is left alone. Members that are already one TensorImpl stay so. Fails on a
// name that is not a registered tensor.
llvm::Error RetieParameters(torch::nn::Module& model,
                            const std::vector<std::vector<std::string>>& tied_params);

// The disk-offload folder (catalog §6.4, `offload_weight` / `offload_state_dict`): one raw file
// `<folder>/<name>.dat` per tensor, its elements in C order and host byte order with no header
// (bfloat16 as its 16-bit pattern, a 0-dim tensor as one element), and `<folder>/index.json`
// mapping each name to `{"dtype": <NumPy name: float32, float16, bfloat16, int64, bool, ...>,
// "shape": [...]}`.
struct OffloadEntry {
  std::string name;
  std::string dtype;  // NumPy's name, or `bfloat16`
  std::vector<int64_t> shape;
  // Set instead of a `.dat` file when the entry points into a safetensors file (Accelerate's
  // lazy loader writes these: `{"safetensors_file", "weight_name", "dtype"}`).
  std::string safetensors_file;
  std::string weight_name;
};
using OffloadIndex = std::vector<OffloadEntry>;

// Writes `tensor` (moved to the cpu, made contiguous) to `<folder>/<name>.dat` and records it in
// `index` (replacing an entry of the same name). Fails on a float8 or other dtype NumPy lacks,
// on a name that cannot be a file name (`/`, an empty segment), or on an I/O error.
llvm::Error OffloadWeight(const at::Tensor& tensor, const std::string& name, const std::string& folder,
                          OffloadIndex& index);
// Raw bytes already in safetensors layout (little-endian, C order) written as OffloadWeight
// would write the tensor they describe; used to offload a checkpoint tensor without a copy.
llvm::Error OffloadBytes(std::string_view bytes, const std::string& safetensors_dtype,
                         const std::vector<int64_t>& shape, const std::string& name,
                         const std::string& folder, OffloadIndex& index);

// Reads `<folder>/index.json`; an absent file is an empty index. Fails on a malformed index.
llvm::Expected<OffloadIndex> ReadOffloadIndex(const std::string& folder);
// Merges `index` into `<folder>/index.json` (entries of `index` win) and writes it crash-safely
// with an indent of 2, as `save_offload_index` does.
llvm::Error SaveOffloadIndex(const OffloadIndex& index, const std::string& folder);
// `offload_state_dict(save_dir, state_dict)`: every tensor through OffloadWeight, then the
// merged index.
llvm::Error OffloadStateDict(const std::string& folder,
                             const std::vector<std::pair<std::string, at::Tensor>>& tensors);
// One offloaded tensor read back on the cpu (`load_offloaded_weight`). Fails on a missing file
// or one whose size disagrees with the entry.
llvm::Expected<at::Tensor> LoadOffloadedWeight(const std::string& folder, const OffloadEntry& entry);
// `load_offloaded_weights(model, index, offload_folder)`: every entry whose name does not
// contain `SCB` read back and set on the cpu with SetModuleTensorToDevice (cast to the model
// tensor's dtype).
llvm::Error LoadOffloadedWeights(torch::nn::Module& model, const OffloadIndex& index,
                                 const std::string& folder);

struct LoadCheckpointOptions {
  // Module or tensor name → device (`cpu`, `meta`, `disk`, a GPU index). Unset: every tensor is
  // loaded where the model has it, as `load_state_dict` does.
  std::optional<DeviceMapEntries> device_map;
  // Where `disk` tensors go; required when the map uses `disk`; created if missing.
  std::string offload_folder;
  // Floating tensors are cast to this (with a device map only, as in Accelerate).
  std::optional<c10::ScalarType> dtype;
  // `cpu` tensors are spilled to a temporary folder while loading and read back at the end.
  bool offload_state_dict = false;
  // Buffers mapped to `disk` are offloaded too; otherwise they are loaded on the cpu.
  bool offload_buffers = false;
  // With `dtype` float16: floating tensors whose names contain `key.` (or equal `key`) stay
  // float32.
  std::vector<std::string> keep_in_fp32_modules;
  // Checkpoint tensors the model lacks are errors instead of a warning; without a device map,
  // model tensors the checkpoint lacks are errors too.
  bool strict = false;
};

struct LoadCheckpointReport {
  std::vector<std::string> unexpected;  // checkpoint tensors the model lacks, sorted
  std::vector<std::string> missing;     // model tensors the checkpoint lacks (no device map only)
  std::vector<std::string> offloaded;   // tensors written to the offload folder
  std::vector<std::string> warnings;
};

// `load_checkpoint_in_model(model, checkpoint, device_map, offload_folder, dtype,
// offload_state_dict, offload_buffers, keep_in_fp32_modules, strict)` for safetensors
// checkpoints in the four layouts checkpoint::Weights::Load reads. Per checkpoint tensor (names
// containing `SCB` skipped): its device is the map entry of its longest dotted prefix (`""`
// for the whole model); `disk` writes the stored bytes to the offload folder and puts the model
// tensor on meta (at `dtype` or the stored dtype); otherwise SetModuleTensorToDevice with the
// checkpoint tensor as value. The offload index is merged into `<offload_folder>/index.json`;
// tied groups found before loading are retied at the end, and a group split across devices is
// a warning. Fails on a checkpoint Weights::Load refuses, a tensor without device, `disk`
// without offload folder, a shape mismatch, and what SetModuleTensorToDevice refuses; tensors
// set before the failure stay set.
llvm::Expected<LoadCheckpointReport> LoadCheckpointInModel(torch::nn::Module& model,
                                                           const std::string& checkpoint,
                                                           const LoadCheckpointOptions& options = {});

}  // namespace accel::rt::memory

#endif  // ACCEL_RUNTIME_MEMORY_LIVE_MODULE_H_
