#ifndef ACCEL_RUNTIME_MEMORY_MODULE_TREE_H_
#define ACCEL_RUNTIME_MEMORY_MODULE_TREE_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "llvm/ADT/StringMap.h"
#include "llvm/Support/Error.h"

// The module tree a checkpoint implies: `encoder.layers.0.attn.q.weight` makes the modules
// `encoder`, `encoder.layers`, `encoder.layers.0`, `encoder.layers.0.attn` and
// `encoder.layers.0.attn.q`, and the tensor `weight` of the last. Torch-free: it stands in for
// the live `nn.Module` that Accelerate's modeling utilities walk (catalog §6.4).
namespace accel::rt::memory {

// One tensor as a checkpoint header describes it.
struct TensorEntry {
  std::string name;
  std::string dtype;  // safetensors dtype string: F32, BF16, I64, BOOL, F8_E4M3, ...
  std::vector<int64_t> shape;
  std::string file;  // the safetensors file whose header lists it
  // A buffer, as a live module reports it (`named_buffers()`); a checkpoint cannot tell, so
  // checkpoint headers leave this false and use TreeOptions::buffers instead.
  bool is_buffer = false;
};

// A pattern over dotted names, matched against the whole name segment by segment: `*` matches
// any run of characters inside one segment, `?` one character, and a segment that is exactly
// `**` matches any number of whole segments, none included. `model.layers.*` matches
// `model.layers.7` but not `model.layers.7.mlp`; `**.running_mean` matches it at any depth.
class NamePattern {
 public:
  // Fails on an empty pattern or an empty segment (`a..b`).
  static llvm::Expected<NamePattern> Parse(std::string_view text);

  bool Matches(std::string_view name) const;
  const std::string& text() const { return text_; }

 private:
  std::string text_;
  std::vector<std::string> segments_;
};

// True when any of `patterns` matches `name`.
bool MatchesAny(const std::vector<NamePattern>& patterns, std::string_view name);

struct TreeOptions {
  // Tensors whose names match one of these are buffers; every other tensor is a parameter. A
  // safetensors file does not record the difference (catalog §8.2).
  std::vector<NamePattern> buffers;
  // Groups of tensor names that share one storage (tied parameters). A checkpoint stores a tied
  // tensor once, so the other names are usually absent from it; they are added to the tree with
  // the stored one's dtype and shape. The group's bytes count under its first name in model
  // order, as `named_parameters()` reports a shared parameter under its first name.
  std::vector<std::vector<std::string>> tied;
  // Keep siblings in the order their first tensor comes in `tensors` (a state dict lists
  // tensors in registration order) instead of sorting them by name.
  bool order_as_given = false;
  // Modules to create even when they hold no tensor (a live module's `ReLU` or `Dropout`),
  // dotted names in pre-order (`named_modules()` order), the root ("") excluded. Accelerate's
  // walks see such modules (size 0); a checkpoint cannot name them. Created before the
  // tensors, so with `order_as_given` they also fix the order of siblings.
  std::vector<std::string> modules = {};
};

using NodeId = uint32_t;

// A module or a tensor of the tree.
struct Node {
  std::string name;  // full dotted name; "" is the root
  bool is_tensor = false;
  std::optional<NodeId> parent;  // unset only for the root

  // A module's direct parameters, child modules and direct buffers, each in model order.
  std::vector<NodeId> parameters;
  std::vector<NodeId> children;
  std::vector<NodeId> buffers;

  // A tensor's description. An alias is a tied name whose bytes count under another member of
  // its group; `file` is empty for a tied name absent from the checkpoint.
  std::string dtype;
  std::vector<int64_t> shape;
  uint64_t elements = 0;
  bool is_buffer = false;
  bool is_alias = false;
  std::string file;
};

// The tree. Children are in "model order": a checkpoint does not record the order in which a
// model registered its modules, so siblings are ordered by name with all-digit segments
// compared as numbers (`layers.2` before `layers.10`), which is the registration order of every
// `nn.ModuleList` and `nn.Sequential`; TreeOptions::order_as_given keeps the caller's order.
class ModuleTree {
 public:
  // Builds the tree. Fails on an empty name or an empty segment (`a..b`) in a tensor or a module
  // name, on a name of more than
  // 256 segments, on a name that is both a tensor and a module (`a.w` and `a.w.x`), on a
  // duplicate tensor, on more than 2^50 elements in all, and on a tied group whose members
  // differ in dtype or shape, name no stored tensor, or overlap another group.
  static llvm::Expected<ModuleTree> Build(const std::vector<TensorEntry>& tensors,
                                          const TreeOptions& options);

  NodeId root() const { return 0; }
  const Node& node(NodeId id) const { return nodes_[id]; }
  size_t size() const { return nodes_.size(); }
  // The node named `name`, or unset.
  std::optional<NodeId> Find(std::string_view name) const;

  // Tensors in the order Accelerate's `named_module_tensors` yields them: parameters module by
  // module in pre-order, then buffers the same way. Aliases included.
  std::vector<NodeId> TensorsInModelOrder() const;

  // The tied groups, each sorted by name and of at least two names, as `find_tied_parameters`
  // returns them.
  const std::vector<std::vector<std::string>>& tied_groups() const { return tied_groups_; }

 private:
  NodeId AddPath(std::string_view name, bool* conflict);
  NodeId AddModulePath(std::string_view name);
  void SortChildren(NodeId id);

  std::vector<Node> nodes_;
  llvm::StringMap<NodeId> by_name_;
  std::vector<std::vector<std::string>> tied_groups_;
};

// Modules in post-order, each subtree before its parent and the root last, as Accelerate's
// `get_module_children_bottom_up(model, return_fqns=True)` lists them.
std::vector<NodeId> GetModuleChildrenBottomUp(const ModuleTree& tree);

}  // namespace accel::rt::memory

#endif  // ACCEL_RUNTIME_MEMORY_MODULE_TREE_H_
