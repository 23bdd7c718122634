#ifndef ACCEL_RUNTIME_CHECKPOINT_OPTIMIZER_FORMAT_H_
#define ACCEL_RUNTIME_CHECKPOINT_OPTIMIZER_FORMAT_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

#include "compiler/plan/plan.h"
#include "llvm/ADT/StringRef.h"

// How checkpoints store each optimizer of the plan, without LibTorch: its name, the
// hyper-parameters of its one parameter group (named as optimizer.json and PyTorch's
// `state_dict()` both name them), and the state it keeps per parameter. The memory estimate, the
// Accelerate state import and export, and the torch side (runtime/model/torch_optimizers.h)
// read it. OptimizerFormat has one specialization per alternative of plan::Optimizer, and
// ForEachOptimizer instantiates every one: a new optimizer without its specialization fails to
// compile there.
namespace accel::rt::checkpoint {

struct Hyperparameter {
  enum class Kind { kNumber, kFlag, kNumberPair };
  std::string_view name;
  Kind kind;
};

// An entry torch.optim writes into a parameter group besides the hyper-parameters, with the
// value Accel's optimizers have (none of them is foreach, fused, maximizing, ...).
struct TorchGroupEntry {
  enum class Value { kFalse, kNone };
  std::string_view name;
  Value value;
};

template <typename Optimizer>
struct OptimizerFormat;

namespace optimizer_format_detail {
using K = Hyperparameter::Kind;
using V = TorchGroupEntry::Value;

// Adam and AdamW are stored alike; only `decoupled_weight_decay` tells them apart in a torch
// state_dict (PyTorch 2.x writes it; 1.x's Adam has none).
struct AdamLike {
  static constexpr Hyperparameter kHyperparameters[] = {
      {"lr", K::kNumber}, {"betas", K::kNumberPair}, {"eps", K::kNumber}, {"weight_decay", K::kNumber},
      {"amsgrad", K::kFlag}};
  static constexpr TorchGroupEntry kTorchGroupEntries[] = {{"maximize", V::kFalse},
                                                           {"foreach", V::kNone},
                                                           {"capturable", V::kFalse},
                                                           {"differentiable", V::kFalse},
                                                           {"fused", V::kNone}};
  // The running means of the gradient and of its square; amsgrad adds `max_exp_avg_sq`, which
  // no plan turns on.
  static constexpr int64_t kStateTensors = 2;
};
}  // namespace optimizer_format_detail

template <>
struct OptimizerFormat<plan::SGD> {
  using K = optimizer_format_detail::K;
  using V = optimizer_format_detail::V;
  static constexpr Hyperparameter kHyperparameters[] = {{"lr", K::kNumber},
                                                        {"momentum", K::kNumber},
                                                        {"dampening", K::kNumber},
                                                        {"weight_decay", K::kNumber},
                                                        {"nesterov", K::kFlag}};
  static constexpr TorchGroupEntry kTorchGroupEntries[] = {
      {"maximize", V::kFalse}, {"foreach", V::kNone}, {"differentiable", V::kFalse}, {"fused", V::kNone}};
  static constexpr std::optional<bool> kDecoupledWeightDecay = std::nullopt;
  // A momentum buffer, kept only with momentum.
  static int64_t StateTensors(const plan::SGD& sgd) { return sgd.momentum > 0 ? 1 : 0; }
};

template <>
struct OptimizerFormat<plan::Adam> : optimizer_format_detail::AdamLike {
  static constexpr std::optional<bool> kDecoupledWeightDecay = false;
  static int64_t StateTensors(const plan::Adam&) { return kStateTensors; }
};

template <>
struct OptimizerFormat<plan::AdamW> : optimizer_format_detail::AdamLike {
  static constexpr std::optional<bool> kDecoupledWeightDecay = true;
  static int64_t StateTensors(const plan::AdamW&) { return kStateTensors; }
};

// The name checkpoints give an optimizer (`sgd`, `adamw`): its plan tag in lower case, as
// torch's module names are.
template <typename Optimizer>
std::string OptimizerName() {
  return llvm::StringRef(Optimizer::kTag.data(), Optimizer::kTag.size()).lower();
}
inline std::string OptimizerName(const plan::Optimizer& optimizer) {
  return std::visit([](const auto& o) { return OptimizerName<std::decay_t<decltype(o)>>(); }, optimizer);
}

// A type as a value, for generic lambdas: `typename decltype(tag)::type`.
template <typename T>
struct TypeTag {
  using type = T;
};

// Calls f(TypeTag<O>{}) for every alternative O of plan::Optimizer, in the table's order, until
// f returns true; returns whether one did.
template <typename F, size_t... I>
bool ForEachOptimizerIn(F& f, std::index_sequence<I...>) {
  return (f(TypeTag<std::variant_alternative_t<I, plan::Optimizer>>{}) || ...);
}
template <typename F>
bool ForEachOptimizer(F&& f) {
  return ForEachOptimizerIn(f, std::make_index_sequence<std::variant_size_v<plan::Optimizer>>());
}

// The plan's optimizer of checkpoint name `name` (`adamw`), with the plan's defaults, or unset.
inline std::optional<plan::Optimizer> OptimizerNamed(std::string_view name) {
  std::optional<plan::Optimizer> found;
  ForEachOptimizer([&](auto type) {
    using O = typename decltype(type)::type;
    if (OptimizerName<O>() != name) return false;
    found = O{};
    return true;
  });
  return found;
}

// The names of every optimizer checkpoints store: `sgd, adam, adamw`.
inline std::string OptimizerNames() {
  std::string names;
  ForEachOptimizer([&](auto type) {
    names += (names.empty() ? "" : ", ") + OptimizerName<typename decltype(type)::type>();
    return false;
  });
  return names;
}

// Optimizer state tensors per parameter (for the memory estimate).
inline int64_t StateTensorsPerParameter(const plan::Optimizer& optimizer) {
  return std::visit(
      [](const auto& o) { return OptimizerFormat<std::decay_t<decltype(o)>>::StateTensors(o); }, optimizer);
}

}  // namespace accel::rt::checkpoint

#endif  // ACCEL_RUNTIME_CHECKPOINT_OPTIMIZER_FORMAT_H_
