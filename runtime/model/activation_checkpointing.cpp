#include "runtime/model/activation_checkpointing.h"

#include <algorithm>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "runtime/model/wrap_policy.h"

namespace accel::rt::train {
namespace {

// The parameters that lie inside a module activation checkpointing wraps.
std::set<size_t> InsideCheckpointedModules(const ModuleNode& root, const std::vector<int64_t>& numels,
                                           const plan::Sharding& sharding) {
  std::set<size_t> inside;
  if (sharding.wrap_policy == plan::WrapPolicy::no_wrap) {
    // Every submodule is wrapped: all but the model's own parameters.
    for (size_t index = 0; index < numels.size(); ++index) inside.insert(index);
    for (size_t index : root.parameters) inside.erase(index);
    return inside;
  }
  // The policy's modules are the sharded engine's wrapped units (the root unit holds the rest).
  for (const WrappedModule& wrapped : WrapModules(root, numels, sharding))
    if (!wrapped.module.empty()) inside.insert(wrapped.parameters.begin(), wrapped.parameters.end());
  return inside;
}

// A block for the log: its parameters' common module path (`encoder.layers.0`), else their
// top-level names joined (`value+position`).
std::string BlockLabel(const std::vector<size_t>& block, const std::vector<std::string>& names) {
  auto module_of = [](const std::string& name) {
    size_t dot = name.rfind('.');
    return dot == std::string::npos ? std::string() : name.substr(0, dot);
  };
  std::string common = module_of(names[block.front()]);
  for (size_t index : block) {
    const std::string& name = names[index];
    while (!common.empty() && !(name.rfind(common + ".", 0) == 0)) common = module_of(common);
  }
  if (!common.empty()) return common;
  std::vector<std::string> tops;
  for (size_t index : block) {
    std::string top = names[index].substr(0, names[index].find('.'));
    if (std::find(tops.begin(), tops.end(), top) == tops.end()) tops.push_back(top);
  }
  return fmt::format("{}", fmt::join(tops, "+"));
}

}  // namespace

Recomputation PlanRecomputation(const ModuleNode& root, const std::vector<std::vector<size_t>>& blocks,
                                const std::vector<std::string>& names, const std::vector<int64_t>& numels,
                                const plan::Sharding& sharding) {
  Recomputation result;
  result.blocks.assign(blocks.size(), false);
  if (blocks.size() <= 1) {
    result.summary =
        "activation_checkpointing has no effect: the model runs forward as one block (LibTorch cannot run a "
        "TorchScript module submodule by submodule), and recomputing all of it in backward would keep the "
        "same peak";
    return result;
  }
  std::set<size_t> inside = InsideCheckpointedModules(root, numels, sharding);
  std::vector<std::string> recomputed, kept;
  for (size_t b = 0; b < blocks.size(); ++b) {
    const std::vector<size_t>& block = blocks[b];
    result.blocks[b] = !block.empty() && std::all_of(block.begin(), block.end(),
                                                     [&](size_t index) { return inside.count(index) != 0; });
    if (block.empty()) continue;
    (result.blocks[b] ? recomputed : kept).push_back(BlockLabel(block, names));
  }
  if (recomputed.empty()) {
    result.summary = fmt::format(
        "activation_checkpointing has no effect: every block of forward ({}) holds parameters outside the "
        "modules the wrap policy checkpoints",
        fmt::join(kept, ", "));
    return result;
  }
  result.summary =
      fmt::format("activation checkpointing: {} of {} forward blocks recomputed in backward ({})",
                  recomputed.size(), blocks.size(), fmt::join(recomputed, ", "));
  if (!kept.empty())
    result.summary += fmt::format("; {} keep{} activations (parameters outside the checkpointed modules)",
                                  fmt::join(kept, ", "), kept.size() == 1 ? "s its" : " their");
  return result;
}

Recomputation PlanRecomputation(const Trainer& trainer, const plan::Sharding& sharding) {
  std::vector<std::string> names;
  std::vector<int64_t> numels;
  for (const auto& [name, tensor] : trainer.NamedParameters()) {
    names.push_back(name);
    numels.push_back(tensor.numel());
  }
  return PlanRecomputation(trainer.Modules(), trainer.ForwardBlocks(), names, numels, sharding);
}

}  // namespace accel::rt::train
