#include "runtime/memory/modeling.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>

#include <fmt/format.h>

#include "runtime/support/error.h"

namespace accel::rt::memory {
namespace {

bool EndsWithUpper(std::string_view text, std::string_view suffix) {
  if (text.size() < suffix.size()) return false;
  std::string_view tail = text.substr(text.size() - suffix.size());
  for (size_t i = 0; i < tail.size(); ++i) {
    if (std::toupper(static_cast<unsigned char>(tail[i])) != suffix[i]) return false;
  }
  return true;
}

// Bytes of one tensor under `options`; `lookup` is the name special_dtypes is keyed by.
double TensorBytes(const Node& tensor, const SizeOptions& options, std::string_view lookup) {
  double elements = static_cast<double>(tensor.elements);
  if (auto special = options.special_dtypes.find(lookup); special != options.special_dtypes.end()) {
    return elements * special->second.bytes;
  }
  // ModuleTree::Build only keeps tensors whose dtype the header reader accepted; an unknown one
  // (a hand-built tree) counts nothing rather than guessing.
  std::optional<Dtype> own = DtypeOfSafetensors(tensor.dtype);
  if (!own) return 0;
  if (!options.dtype || own->integral) return elements * own->bytes;
  // Casting can only shrink a tensor.
  return elements * std::min(options.dtype->bytes, own->bytes);
}

// Accelerate's `compute_module_total_buffer_size(module, ...)` computes sizes on the submodule,
// so special_dtypes is looked up by the name relative to it.
double SubtreeBufferBytes(const ModuleTree& tree, NodeId id, const SizeOptions& options) {
  const Node& root = tree.node(id);
  size_t strip = root.name.empty() ? 0 : root.name.size() + 1;
  double total = 0;
  std::vector<NodeId> stack{id};
  while (!stack.empty()) {
    const Node& node = tree.node(stack.back());
    stack.pop_back();
    for (NodeId b : node.buffers) {
      const Node& buffer = tree.node(b);
      if (buffer.is_alias) continue;
      total += TensorBytes(buffer, options, std::string_view(buffer.name).substr(strip));
    }
    stack.insert(stack.end(), node.children.begin(), node.children.end());
  }
  return total;
}

// `name + "." in k + "."`: Accelerate tests tied names by substring, not by prefix.
bool TiedInside(std::string_view name, std::string_view k) {
  return (std::string(k) + ".").find(std::string(name) + ".") != std::string::npos;
}

struct SizeWithTies {
  double bytes = 0;
  std::vector<NodeId> modules;  // the queue entries holding the tied parameters
};

// `get_module_size_with_ties`: adds, for each tied parameter outside the module, the queue entry
// that holds it minus the parameter itself (it is shared, so counted once).
SizeWithTies GetModuleSizeWithTies(const ModuleTree& tree, const std::vector<std::string>& tied_params,
                                   double module_bytes, const ModuleSizes& sizes,
                                   const std::vector<NodeId>& queue) {
  SizeWithTies result{module_bytes, {}};
  for (const std::string& param : tied_params) {
    auto holder = std::find_if(queue.begin(), queue.end(), [&](NodeId id) {
      const std::string& n = tree.node(id).name;
      // Accelerate matches `param.startswith(n + ".")` only, and raises IndexError when the
      // parameter is itself a queue entry or already placed; we accept the first and skip the
      // second.
      return param == n ||
             (param.size() > n.size() && param.compare(0, n.size(), n) == 0 && param[n.size()] == '.');
    });
    if (holder == queue.end()) continue;
    result.modules.push_back(*holder);
    std::optional<NodeId> param_id = tree.Find(param);
    result.bytes += sizes.Get(*holder) - (param_id ? sizes.Get(*param_id) : 0);
  }
  return result;
}

// The tied parameters outside `name` of every group with members both inside and outside it.
std::vector<std::string> OutsideTiedParams(const ModuleTree& tree, std::string_view name) {
  std::vector<std::string> outside;
  for (const std::vector<std::string>& group : tree.tied_groups()) {
    bool any = false, all = true;
    for (const std::string& k : group) {
      bool inside = TiedInside(name, k);
      any = any || inside;
      all = all && inside;
    }
    if (!any || all) continue;
    for (const std::string& k : group) {
      if (!TiedInside(name, k)) outside.push_back(k);
    }
  }
  return outside;
}

std::vector<NodeId> ModulesOnly(const ModuleTree& tree, const std::vector<NodeId>& entries) {
  std::vector<NodeId> modules;
  for (NodeId id : entries) {
    if (!tree.node(id).is_tensor) modules.push_back(id);
  }
  return modules;
}

ptrdiff_t IndexOf(const std::vector<NodeId>& queue, NodeId id) {
  auto it = std::find(queue.begin(), queue.end(), id);
  return it == queue.end() ? -1 : it - queue.begin();
}

// `fallback_allocate`: the first module, searching the queue and splitting what is too big, whose
// size with ties fits `limit`; the queue is then restructured so that module is a direct entry
// and removed from it. The catalog calls the search breadth-first; Accelerate's code puts the
// children of a split module in front, so it is depth-first, and so is this.
std::optional<NodeId> FallbackAllocate(const ModuleTree& tree, std::vector<NodeId>& queue,
                                       const ModuleSizes& sizes, double limit,
                                       const std::vector<NamePattern>& no_split) {
  // Accelerate's convert_file_size_to_int refuses a negative limit: nothing is found.
  if (limit < 0) return std::nullopt;
  std::vector<NodeId> search = queue;
  std::optional<NodeId> found;
  while (!search.empty()) {
    NodeId id = search.front();
    search.erase(search.begin());
    std::vector<std::string> tied = OutsideTiedParams(tree, tree.node(id).name);
    if (GetModuleSizeWithTies(tree, tied, sizes.Get(id), sizes, search).bytes <= limit) {
      found = id;
      break;
    }
    if (!CanSplit(tree, id, no_split)) continue;
    std::vector<NodeId> split = SplitEntries(tree, id);
    search.insert(search.begin(), split.begin(), split.end());
  }
  if (!found) return std::nullopt;
  // Split every ancestor of the found module that is a queue entry, outermost first.
  const std::string& name = tree.node(*found).name;
  for (size_t dot = name.find('.'); dot != std::string::npos; dot = name.find('.', dot + 1)) {
    std::optional<NodeId> parent = tree.Find(std::string_view(name).substr(0, dot));
    ptrdiff_t index = parent ? IndexOf(queue, *parent) : -1;
    if (index < 0) continue;
    std::vector<NodeId> split = SplitEntries(tree, *parent);
    queue.erase(queue.begin() + index);
    queue.insert(queue.begin() + index, split.begin(), split.end());
  }
  ptrdiff_t target = IndexOf(queue, *found);
  // Accelerate raises ValueError here (a buffer dropped by a split); treat it as not found.
  if (target < 0) return std::nullopt;
  queue.erase(queue.begin() + target);
  return found;
}

void Assign(DeviceMapEntries& entries, const std::string& name, const std::string& device) {
  for (auto& [key, value] : entries) {
    if (key == name) {
      value = device;
      return;
    }
  }
  entries.emplace_back(name, device);
}

bool StartsWith(std::string_view text, std::string_view prefix) {
  return text.substr(0, prefix.size()) == prefix;
}

void CleanFrom(DeviceMapEntries& entries, const std::string& module_name) {
  std::string prefix = module_name.empty() ? "" : module_name + ".";
  std::vector<size_t> under;
  for (size_t i = 0; i < entries.size(); ++i) {
    if (StartsWith(entries[i].first, prefix)) under.push_back(i);
  }
  bool one_device = under.size() > 1 && std::all_of(under.begin(), under.end(), [&](size_t i) {
                      return entries[i].second == entries[under[0]].second;
                    });
  if (one_device) {
    std::string device = entries[under[0]].second;
    entries[under[0]] = {module_name, device};
    for (size_t k = under.size() - 1; k > 0; --k) entries.erase(entries.begin() + under[k]);
  }
  // Recurse into the next level of names below the prefix, in the order they first appear.
  size_t depth = module_name.empty() ? 1 : std::count(module_name.begin(), module_name.end(), '.') + 2;
  std::vector<std::string> children;
  for (const auto& [key, device] : entries) {
    if (!StartsWith(key, prefix) || key.size() <= module_name.size()) continue;
    // The first `depth` segments of the key.
    size_t end = std::string::npos;
    for (size_t d = 0, from = 0; d < depth; ++d, from = end + 1) {
      end = key.find('.', from);
      if (end == std::string::npos) break;
    }
    std::string child = key.substr(0, end);
    if (std::find(children.begin(), children.end(), child) == children.end()) children.push_back(child);
  }
  for (const std::string& child : children) CleanFrom(entries, child);
}

}  // namespace

llvm::Expected<uint64_t> ParseSize(std::string_view text) {
  std::string message = fmt::format(
      "size `{}` is not valid; use a byte count or a number with a unit (5GB, 1.5GiB, 512MiB, 800MB)", text);
  if (!text.empty() && std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    if (text.size() > 18) return Fail(message);
    return std::strtoull(std::string(text).c_str(), nullptr, 10);
  }
  struct Unit {
    std::string_view suffix;
    double factor;
    bool bits_if_lower_b;
  };
  // Checked in Accelerate's order: the binary units first, so `GIB` is not read as `GB`.
  constexpr Unit kUnits[] = {{"GIB", 1073741824.0, false},
                             {"MIB", 1048576.0, false},
                             {"KIB", 1024.0, false},
                             {"GB", 1e9, true},
                             {"MB", 1e6, true},
                             {"KB", 1e3, true}};
  for (const Unit& unit : kUnits) {
    if (!EndsWithUpper(text, unit.suffix)) continue;
    std::string number(text.substr(0, text.size() - unit.suffix.size()));
    // Python's float(): a plain decimal or exponent literal; no spaces, no hex, no inf/nan.
    if (number.empty() || number.find_first_not_of("0123456789.eE+-") != std::string::npos) {
      return Fail(message);
    }
    char* end = nullptr;
    double value = std::strtod(number.c_str(), &end);
    if (end != number.c_str() + number.size() || !std::isfinite(value)) return Fail(message);
    double bytes = std::trunc(value * unit.factor);
    if (bytes < 0) return Fail(message);
    if (bytes > 4.6e18) return Fail(fmt::format("size `{}` is too large", text));
    uint64_t result = static_cast<uint64_t>(bytes);
    // `5Gb` is gigabits.
    if (unit.bits_if_lower_b && text.back() == 'b') result /= 8;
    return result;
  }
  return Fail(message);
}

bool IsGpu(std::string_view device) {
  return !device.empty() &&
         std::all_of(device.begin(), device.end(), [](char c) { return c >= '0' && c <= '9'; });
}

llvm::Expected<MaxMemory> ParseMaxMemory(std::string_view text) {
  MaxMemory limits;
  size_t start = 0;
  while (start <= text.size()) {
    size_t comma = text.find(',', start);
    if (comma == std::string_view::npos) comma = text.size();
    std::string_view item = text.substr(start, comma - start);
    start = comma + 1;
    size_t equals = item.find('=');
    if (equals == std::string_view::npos) {
      return Fail(fmt::format("`{}` is not `DEVICE=SIZE` (for example `cpu=8GB,0=20GB`)", item));
    }
    std::string device(item.substr(0, equals));
    if (IsGpu(device)) {
      // `00` and `0` are the same GPU.
      device = device.substr(std::min(device.find_first_not_of('0'), device.size() - 1));
      if (device.size() > 6) {
        return Fail(fmt::format("GPU index `{}` is out of range", item.substr(0, equals)));
      }
    } else if (device != "mps" && device != "cpu" && device != "disk") {
      return Fail(fmt::format("unknown device `{}`; expected a GPU index (0, 1, ...), `mps`, `cpu` or `disk`",
                              device));
    }
    for (const DeviceLimit& limit : limits) {
      if (limit.device == device) return Fail(fmt::format("device `{}` is given twice", device));
    }
    llvm::Expected<uint64_t> bytes = ParseSize(item.substr(equals + 1));
    if (!bytes) return bytes.takeError();
    limits.push_back({device, static_cast<double>(*bytes)});
  }
  // GPUs first by index, then mps, cpu, disk: the order the device map fills them.
  auto rank = [](const std::string& d) -> std::pair<int, long> {
    if (IsGpu(d)) return {0, std::stol(d)};
    return {d == "mps" ? 1 : d == "cpu" ? 2 : 3, 0};
  };
  std::stable_sort(limits.begin(), limits.end(), [&](const DeviceLimit& a, const DeviceLimit& b) {
    return rank(a.device) < rank(b.device);
  });
  return limits;
}

void ModuleSizes::Add(NodeId id, double bytes) {
  if (!present_[id]) {
    present_[id] = true;
    order_.push_back(id);
  }
  bytes_[id] += bytes;
}

ModuleSizes ComputeModuleSizes(const ModuleTree& tree, const SizeOptions& options, bool buffers_only) {
  ModuleSizes sizes(tree.size());
  for (NodeId id : tree.TensorsInModelOrder()) {
    const Node& tensor = tree.node(id);
    // Tied aliases are not yielded by named_parameters(); buffers only when asked.
    if (tensor.is_alias || (buffers_only && !tensor.is_buffer)) continue;
    double bytes = TensorBytes(tensor, options, tensor.name);
    // Every prefix of the dotted name, from "" down to the tensor, gets the bytes.
    std::vector<NodeId> chain;
    for (std::optional<NodeId> at = id; at; at = tree.node(*at).parent) chain.push_back(*at);
    for (auto it = chain.rbegin(); it != chain.rend(); ++it) sizes.Add(*it, bytes);
  }
  return sizes;
}

std::vector<NodeId> RootEntries(const ModuleTree& tree) {
  const Node& root = tree.node(tree.root());
  std::vector<NodeId> entries = root.parameters;
  entries.insert(entries.end(), root.children.begin(), root.children.end());
  entries.insert(entries.end(), root.buffers.begin(), root.buffers.end());
  return entries;
}

std::vector<NodeId> SplitEntries(const ModuleTree& tree, NodeId module) {
  const Node& node = tree.node(module);
  std::vector<NodeId> entries = node.parameters;
  entries.insert(entries.end(), node.children.begin(), node.children.end());
  return entries;
}

bool CanSplit(const ModuleTree& tree, NodeId id, const std::vector<NamePattern>& no_split) {
  const Node& node = tree.node(id);
  return !node.is_tensor && !node.children.empty() && !MatchesAny(no_split, node.name);
}

LayerSize GetMaxLayerSize(const ModuleTree& tree, const std::vector<NodeId>& entries,
                          const ModuleSizes& sizes, const std::vector<NamePattern>& no_split) {
  LayerSize largest;
  std::vector<NodeId> to_treat = entries;
  while (!to_treat.empty()) {
    NodeId id = to_treat.front();
    to_treat.erase(to_treat.begin());
    if (CanSplit(tree, id, no_split)) {
      // Not a layer: walk its child modules next (its own tensors are not layers here).
      const std::vector<NodeId>& children = tree.node(id).children;
      to_treat.insert(to_treat.begin(), children.begin(), children.end());
      continue;
    }
    double bytes = sizes.Get(id);
    if (bytes > largest.bytes) {
      largest.bytes = bytes;
      largest.names = {tree.node(id).name};
    } else if (bytes == largest.bytes) {
      largest.names.push_back(tree.node(id).name);
    }
  }
  return largest;
}

MaximumSizes CalculateMaximumSizes(const ModuleTree& tree, const std::vector<NamePattern>& no_split,
                                   const SizeOptions& options) {
  ModuleSizes sizes = ComputeModuleSizes(tree, options);
  return MaximumSizes{sizes.total(), GetMaxLayerSize(tree, RootEntries(tree), sizes, no_split)};
}

llvm::Expected<MaxMemory> GetBalancedMemory(const ModuleTree& tree, MaxMemory max_memory,
                                            const std::vector<NamePattern>& no_split,
                                            const SizeOptions& options, bool low_zero) {
  auto limit_of = [&](const std::string& device) -> DeviceLimit* {
    for (DeviceLimit& limit : max_memory) {
      if (limit.device == device) return &limit;
    }
    return nullptr;
  };
  // Step 2: the GPUs with memory; none → the budget as given.
  std::vector<std::string> gpus;
  for (const DeviceLimit& limit : max_memory) {
    if (IsGpu(limit.device) && limit.bytes > 0) gpus.push_back(limit.device);
  }
  size_t num_devices = gpus.size();
  if (num_devices == 0) return max_memory;
  // Step 3: one GPU cannot keep GPU 0 low. (The 10% head-room applies only to measured memory.)
  if (num_devices == 1) low_zero = false;

  // Step 4.
  ModuleSizes sizes = ComputeModuleSizes(tree, options);
  double per_gpu = std::floor(sizes.total() / static_cast<double>(low_zero ? num_devices - 1 : num_devices));

  // Step 5: head-room of the larger of the first module of each no-split pattern and the mean
  // size of the final modules, times 1.25.
  double buffer = 0;
  if (!no_split.empty()) {
    std::vector<bool> seen(no_split.size(), false);
    for (NodeId id : sizes.order()) {
      const Node& node = tree.node(id);
      if (id == tree.root() || node.is_tensor) continue;
      for (size_t p = 0; p < no_split.size(); ++p) {
        if (seen[p] || !no_split[p].Matches(node.name)) continue;
        seen[p] = true;
        buffer = std::max(buffer, sizes.Get(id));
      }
      if (std::all_of(seen.begin(), seen.end(), [](bool s) { return s; })) break;
    }
  }
  // `get_module_leaves` twice: first the tensors drop out, then the leaves are the final modules.
  // A top-level name never counts as a child of the root.
  auto leaves_of = [&](const std::vector<bool>& in) {
    std::vector<int> child_count(tree.size(), 0);
    for (NodeId id = 0; id < tree.size(); ++id) {
      std::optional<NodeId> parent = tree.node(id).parent;
      if (in[id] && parent && *parent != tree.root()) ++child_count[*parent];
    }
    std::vector<bool> leaves(tree.size(), false);
    for (NodeId id = 1; id < tree.size(); ++id) leaves[id] = in[id] && child_count[id] == 0;
    return leaves;
  };
  std::vector<bool> in(tree.size(), false);
  for (NodeId id : sizes.order()) in[id] = true;
  std::vector<bool> tensors = leaves_of(in);
  for (NodeId id = 0; id < tree.size(); ++id) in[id] = in[id] && !tensors[id];
  std::vector<bool> finals = leaves_of(in);
  double leaf_sum = 0;
  size_t leaf_count = 0;
  for (NodeId id : sizes.order()) {
    if (!finals[id]) continue;
    leaf_sum += sizes.Get(id);
    ++leaf_count;
  }
  double mean_leaves = std::trunc(leaf_sum / static_cast<double>(std::max<size_t>(leaf_count, 1)));
  per_gpu += std::trunc(1.25 * std::max(buffer, mean_leaves));

  // Step 6: every GPU but the last gets at most per_gpu; the last keeps its budget as overflow.
  for (size_t i = 0; i + 1 < gpus.size(); ++i) {
    DeviceLimit* limit = limit_of(gpus[i]);
    if (low_zero && gpus[i] == "0") continue;  // GPU 0 keeps its own value in this step
    limit->bytes = std::min(per_gpu, limit->bytes);
  }
  // Step 7: GPU 0 takes only what GPUs 1..n-1 cannot hold.
  if (low_zero) {
    double others = 0;
    for (size_t i = 1; i < num_devices; ++i) {
      DeviceLimit* limit = limit_of(std::to_string(i));
      if (limit == nullptr) {
        return Fail(
            fmt::format("low_zero needs GPUs numbered 0 to {}; GPU {} has no budget", num_devices - 1, i));
      }
      others += limit->bytes;
    }
    DeviceLimit* zero = limit_of("0");
    if (zero == nullptr) return Fail("low_zero needs a budget for GPU 0");
    zero->bytes = std::min(std::max(0.0, sizes.total() - others), zero->bytes);
  }
  return max_memory;
}

DeviceMap InferAutoDeviceMap(const ModuleTree& tree, const MaxMemory& max_memory,
                             const DeviceMapOptions& options) {
  const std::vector<NamePattern>& no_split = options.no_split;
  // Step 1: devices in budget order plus `disk`; the main devices keep room to reload the
  // largest offloaded layer.
  std::vector<std::string> devices;
  for (const DeviceLimit& limit : max_memory) devices.push_back(limit.device);
  if (std::find(devices.begin(), devices.end(), "disk") == devices.end()) devices.push_back("disk");
  std::vector<std::string> gpus;
  for (const std::string& d : devices) {
    if (d != "cpu" && d != "disk") gpus.push_back(d);
  }
  std::vector<std::string> main_devices;
  if (std::find(gpus.begin(), gpus.end(), "mps") != gpus.end()) {
    main_devices = {"mps"};
  } else if (!gpus.empty()) {
    main_devices = {gpus[0], "cpu"};
  } else {
    main_devices = {"cpu"};
  }
  auto budget = [&](const std::string& device) {
    for (const DeviceLimit& limit : max_memory) {
      if (limit.device == device) return limit.bytes;
    }
    return 0.0;
  };

  // Step 2: sizes (tied groups come with the tree).
  ModuleSizes sizes = ComputeModuleSizes(tree, options.sizes);

  // Step 3: the queue, the device cursor, and the largest layer.
  std::vector<NodeId> queue = RootEntries(tree);
  DeviceMap result;
  size_t current_device = 0;
  std::vector<double> used(devices.size(), 0.0);
  std::vector<double> buffer_bytes(devices.size(), 0.0);
  std::vector<std::optional<double>> minimum_needed(devices.size());
  std::vector<std::vector<NodeId>> fallback_offered(devices.size());
  LayerSize max_layer = GetMaxLayerSize(tree, queue, sizes, no_split);

  while (!queue.empty()) {
    // Step 4: pop the head.
    NodeId id = queue.front();
    queue.erase(queue.begin());
    const Node& node = tree.node(id);
    const std::string& name = node.name;

    // Step 4a: the largest layer may have been the module just taken.
    std::erase_if(max_layer.names,
                  [&](const std::string& n) { return n == name || StartsWith(n, name + "."); });
    if (max_layer.names.empty()) max_layer = GetMaxLayerSize(tree, ModulesOnly(tree, queue), sizes, no_split);
    double module_bytes = sizes.Get(id);

    // Step 4b: tied parameters outside this module and the size they bring along.
    std::vector<std::string> tied_params = OutsideTiedParams(tree, name);

    // Step 4c: capacity; a main device reserves the largest layer.
    const std::string& device = devices[current_device];
    bool unbounded = device == "disk";
    double capacity = budget(device);
    double reserved = 0;
    if (std::find(main_devices.begin(), main_devices.end(), device) != main_devices.end()) {
      capacity -= max_layer.bytes;
      reserved = max_layer.bytes;
    }
    SizeWithTies with_ties = GetModuleSizeWithTies(tree, tied_params, module_bytes, sizes, queue);

    // Step 4d: it fits with its tied modules: place them all.
    if (unbounded || used[current_device] + with_ties.bytes <= capacity) {
      used[current_device] += with_ties.bytes;
      Assign(result.entries, name, device);
      for (NodeId tied : with_ties.modules) {
        if (ptrdiff_t index = IndexOf(queue, tied); index >= 0) queue.erase(queue.begin() + index);
        Assign(result.entries, tree.node(tied).name, device);
      }
      // Only module entries count their buffers (a bare buffer entry does not, as in Accelerate).
      if (!options.offload_buffers && !node.is_tensor) {
        buffer_bytes[current_device] += SubtreeBufferBytes(tree, id, options.sizes);
      }
      continue;
    }

    // Step 4e: the module alone fits: split the first splittable tied module instead.
    if (!tied_params.empty() && used[current_device] + module_bytes <= capacity) {
      bool split_happened = false;
      for (NodeId tied : with_ties.modules) {
        if (!CanSplit(tree, tied, no_split)) continue;
        std::vector<NodeId> children = SplitEntries(tree, tied);
        ptrdiff_t index = IndexOf(queue, tied);
        queue.erase(queue.begin() + index);
        queue.insert(queue.begin() + index, children.begin(), children.end());
        queue.insert(queue.begin(), id);
        max_layer = GetMaxLayerSize(tree, ModulesOnly(tree, queue), sizes, no_split);
        split_happened = true;
        break;
      }
      if (split_happened) continue;
    }

    // Step 4f: the module alone does not fit (note `>=`, against `<=` in 4d): split it if it can be.
    if (used[current_device] + module_bytes >= capacity && CanSplit(tree, id, no_split)) {
      std::vector<NodeId> children = SplitEntries(tree, id);
      queue.insert(queue.begin(), children.begin(), children.end());
      max_layer = GetMaxLayerSize(tree, ModulesOnly(tree, queue), sizes, no_split);
      continue;
    }

    // Step 4g: nothing placed here yet: look for any module that fits instead.
    if (used[current_device] == 0 && options.fallback_allocation) {
      double limit = budget(device) - std::max(max_layer.bytes, with_ties.bytes);
      std::vector<NodeId> remaining = queue;
      std::optional<NodeId> fallback = FallbackAllocate(tree, remaining, sizes, limit, no_split);
      // A module offered once and still not placed (its ties in the real queue can be larger
      // than in the search) is not offered again: Accelerate would loop forever here.
      std::vector<NodeId>& offered = fallback_offered[current_device];
      if (fallback && std::find(offered.begin(), offered.end(), *fallback) == offered.end()) {
        offered.push_back(*fallback);
        queue = std::move(remaining);
        queue.insert(queue.begin(), {*fallback, id});
        continue;
      }
    }

    // Step 4h: move to the next device; the module goes back to the head of the queue.
    if (used[current_device] == 0) minimum_needed[current_device] = with_ties.bytes + reserved;
    used[current_device] += reserved;
    ++current_device;
    queue.insert(queue.begin(), id);
  }

  // Step 5: devices that got nothing drop out; merge entries.
  for (size_t i = 0; i < devices.size(); ++i) {
    if (used[i] > 0) result.used.push_back({devices[i], used[i]});
    if (minimum_needed[i]) result.minimum_needed.push_back({devices[i], *minimum_needed[i]});
  }
  if (options.clean_result) CleanDeviceMap(result.entries);

  // Step 6: buffers of modules on cpu or disk stay on a GPU at run time; warn when none has room.
  for (size_t i = 0; i < devices.size(); ++i) {
    if (devices[i] == "cpu" || devices[i] == "disk") result.offloaded_buffer_bytes += buffer_bytes[i];
  }
  if (result.offloaded_buffer_bytes > 0 && !options.offload_buffers && !gpus.empty()) {
    bool fits_a_gpu = false;
    for (const DeviceLimit& limit : max_memory) {
      if (limit.device == "cpu" || limit.device == "disk") continue;
      double gpu_used = 0;
      for (const DeviceLimit& u : result.used) {
        if (u.device == limit.device) gpu_used = u.bytes;
      }
      if (limit.bytes >= result.offloaded_buffer_bytes + gpu_used) fits_a_gpu = true;
    }
    if (!fits_a_gpu) {
      result.warnings.push_back(fmt::format(
          "the model needs {} bytes of buffers for offloaded layers, which fit no GPU's remaining memory; "
          "consider offload_buffers",
          result.offloaded_buffer_bytes));
    }
  }
  return result;
}

void CleanDeviceMap(DeviceMapEntries& entries) { CleanFrom(entries, ""); }

std::vector<std::string> UncoveredTensors(const ModuleTree& tree, const DeviceMapEntries& entries) {
  std::vector<std::string> uncovered;
  for (NodeId id : tree.TensorsInModelOrder()) {
    const std::string& name = tree.node(id).name;
    bool covered = std::any_of(entries.begin(), entries.end(), [&](const auto& entry) {
      const std::string& key = entry.first;
      return key.empty() || key == name || (StartsWith(name, key) && name[key.size()] == '.');
    });
    if (!covered) uncovered.push_back(name);
  }
  return uncovered;
}

}  // namespace accel::rt::memory
