#include "runtime/model/wrap_policy.h"

#include <algorithm>
#include <set>
#include <stdexcept>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace accel::rt::train {
namespace {

// `name` (from a configuration) names the class `type`: exactly, or a TorchScript qualified
// name (`__torch__.model.Block`) by its last component, as Python's class name.
bool NamesClass(const std::string& name, const std::string& type) {
  if (name == type) return true;
  size_t dot = type.rfind('.');
  return dot != std::string::npos && type.compare(dot + 1, std::string::npos, name) == 0;
}

struct Wrapper {
  const std::vector<int64_t>& numels;
  const plan::Sharding& sharding;
  // Wrapped units in the order their modules complete (children first); fixed up by the caller.
  std::vector<std::pair<std::string, std::vector<size_t>>> wrapped;

  bool Wraps(const ModuleNode& node, int64_t unwrapped_numel) const {
    if (node.path.empty()) return false;  // the root is always the root unit
    switch (sharding.wrap_policy) {
      case plan::WrapPolicy::no_wrap:
        return false;
      case plan::WrapPolicy::transformer_based:
        return std::ranges::any_of(LayerClasses(),
                                   [&](const std::string& name) { return NamesClass(name, node.type); });
      case plan::WrapPolicy::size_based:
        return unwrapped_numel >= sharding.min_num_params;
    }
    return false;
  }

  // The classes transformer_based wraps: the named ones, else (as Accelerate falls back to a
  // model's `_no_split_modules`) the block the built-in Transformer repeats.
  std::vector<std::string> LayerClasses() const {
    if (!sharding.transformer_layer_cls_to_wrap.empty()) return sharding.transformer_layer_cls_to_wrap;
    return {"TransformerEncoderLayer"};
  }

  // The parameters of `node`'s subtree that no wrapped module took.
  std::vector<size_t> Visit(const ModuleNode& node) {
    std::vector<size_t> unwrapped = node.parameters;
    for (const ModuleNode& child : node.children) {
      std::vector<size_t> left = Visit(child);
      unwrapped.insert(unwrapped.end(), left.begin(), left.end());
    }
    int64_t numel = 0;
    for (size_t index : unwrapped) numel += numels[index];
    if (!unwrapped.empty() && Wraps(node, numel)) {
      std::sort(unwrapped.begin(), unwrapped.end());
      wrapped.emplace_back(node.path, std::move(unwrapped));
      return {};
    }
    return unwrapped;
  }
};

void CollectTypes(const ModuleNode& node, std::set<std::string>& types) {
  if (!node.path.empty()) types.insert(node.type);
  for (const ModuleNode& child : node.children) CollectTypes(child, types);
}

}  // namespace

std::vector<WrappedModule> WrapModules(const ModuleNode& root, const std::vector<int64_t>& numels,
                                       const plan::Sharding& sharding) {
  Wrapper wrapper{numels, sharding, {}};
  std::vector<size_t> rest = wrapper.Visit(root);
  // Every named class the model lacks is an error, as in Accelerate, which looks each one up
  // ("Could not find the transformer layer class ..."). With none named and no Transformer
  // block, Accelerate's list (the model's `_no_split_modules`, which a model without such blocks
  // lacks) is empty: the root alone.
  if (sharding.wrap_policy == plan::WrapPolicy::transformer_based) {
    std::set<std::string> types;
    CollectTypes(root, types);
    std::vector<std::string> missing;
    for (const std::string& name : sharding.transformer_layer_cls_to_wrap) {
      auto named = [&](const std::string& type) { return NamesClass(name, type); };
      if (std::none_of(types.begin(), types.end(), named)) missing.push_back(name);
    }
    if (!missing.empty()) {
      throw std::invalid_argument(fmt::format(
          "`transformer_layer_cls_to_wrap` names {}, but this model has no module of {}; its module classes "
          "are {}: name one of them, or use another wrap policy",
          missing, missing.size() == 1 ? "that class" : "these classes", types));
    }
  }
  // Module order: by each unit's first parameter (registration order follows the modules').
  std::sort(wrapper.wrapped.begin(), wrapper.wrapped.end(),
            [](const auto& a, const auto& b) { return a.second.front() < b.second.front(); });
  std::vector<WrappedModule> modules;
  std::sort(rest.begin(), rest.end());
  if (!rest.empty()) modules.push_back(WrappedModule{"", std::move(rest)});
  for (auto& [module, parameters] : wrapper.wrapped)
    modules.push_back(WrappedModule{module, std::move(parameters)});
  return modules;
}

}  // namespace accel::rt::train
