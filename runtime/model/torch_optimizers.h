#ifndef ACCEL_RUNTIME_MODEL_TORCH_OPTIMIZERS_H_
#define ACCEL_RUNTIME_MODEL_TORCH_OPTIMIZERS_H_

#include <memory>
#include <tuple>

#include <torch/optim/adam.h>
#include <torch/optim/adamw.h>
#include <torch/optim/sgd.h>

#include "compiler/plan/plan.h"
#include "llvm/Support/JSON.h"
#include "runtime/model/trainer.h"

// Each optimizer of the plan as torch::optim builds and steps it, inside `model/` only: its
// options from the plan's record, and its hyper-parameters and per-parameter state out to and
// back from a checkpoint, under the names runtime/checkpoint/optimizer_format.h gives them.
// TorchOptimizer has one specialization per alternative of plan::Optimizer; MakeOptimizer and
// the optimizer state's dispatch instantiate every one, so a new optimizer without its
// specialization fails to compile there.
namespace accel::rt::train {

template <typename Optimizer>
struct TorchOptimizer;

namespace torch_optimizers_detail {

inline double Number(const llvm::json::Object& object, llvm::StringRef key, double fallback) {
  if (llvm::Optional<double> value = object.getNumber(key)) return *value;
  return fallback;
}

// Adam and AdamW share their options' and state's shape but not a base class.
template <typename TorchOptimizerType, typename OptionsType, typename StateType>
struct AdamLike {
  using Optimizer = TorchOptimizerType;
  using Options = OptionsType;
  using State = StateType;

  template <typename PlanRecord>
  static Options Make(const PlanRecord& o) {
    return Options(o.lr).betas({o.beta1, o.beta2}).eps(o.eps).weight_decay(o.weight_decay);
  }

  static llvm::json::Object Hyperparameters(const Options& o) {
    return llvm::json::Object{{"lr", o.lr()},
                              {"betas", llvm::json::Array{std::get<0>(o.betas()), std::get<1>(o.betas())}},
                              {"eps", o.eps()},
                              {"weight_decay", o.weight_decay()},
                              {"amsgrad", o.amsgrad()}};
  }

  static void SetHyperparameters(const llvm::json::Object& h, Options& o) {
    o.lr(Number(h, "lr", o.lr()));
    if (const llvm::json::Array* betas = h.getArray("betas"); betas && betas->size() == 2) {
      o.betas(std::make_tuple((*betas)[0].getAsNumber().getValueOr(std::get<0>(o.betas())),
                              (*betas)[1].getAsNumber().getValueOr(std::get<1>(o.betas()))));
    }
    o.eps(Number(h, "eps", o.eps()));
    o.weight_decay(Number(h, "weight_decay", o.weight_decay()));
    o.amsgrad(h.getBoolean("amsgrad").getValueOr(o.amsgrad()));
  }

  static void ExportState(const State& state, OptimizerState::Parameter& parameter) {
    parameter.counters.emplace_back("step", state.step());
    parameter.tensors.emplace_back("exp_avg", state.exp_avg());
    parameter.tensors.emplace_back("exp_avg_sq", state.exp_avg_sq());
    if (state.max_exp_avg_sq().defined()) parameter.tensors.emplace_back("max_exp_avg_sq", state.max_exp_avg_sq());
  }

  // `saved` is one parameter's checkpointed state: Take(key) (throws when absent), Has(key),
  // Counter(key) (throws when absent).
  template <typename Saved>
  static std::unique_ptr<State> ImportState(Saved& saved) {
    auto state = std::make_unique<State>();
    state->step(saved.Counter("step"));
    state->exp_avg(saved.Take("exp_avg"));
    state->exp_avg_sq(saved.Take("exp_avg_sq"));
    if (saved.Has("max_exp_avg_sq")) state->max_exp_avg_sq(saved.Take("max_exp_avg_sq"));
    return state;
  }
};

}  // namespace torch_optimizers_detail

template <>
struct TorchOptimizer<plan::SGD> {
  using Optimizer = torch::optim::SGD;
  using Options = torch::optim::SGDOptions;
  using State = torch::optim::SGDParamState;

  static Options Make(const plan::SGD& o) {
    return Options(o.lr).momentum(o.momentum).weight_decay(o.weight_decay);
  }

  static llvm::json::Object Hyperparameters(const Options& o) {
    return llvm::json::Object{{"lr", o.lr()},
                              {"momentum", o.momentum()},
                              {"dampening", o.dampening()},
                              {"weight_decay", o.weight_decay()},
                              {"nesterov", o.nesterov()}};
  }

  static void SetHyperparameters(const llvm::json::Object& h, Options& o) {
    using torch_optimizers_detail::Number;
    o.lr(Number(h, "lr", o.lr()));
    o.momentum(Number(h, "momentum", o.momentum()));
    o.dampening(Number(h, "dampening", o.dampening()));
    o.weight_decay(Number(h, "weight_decay", o.weight_decay()));
    o.nesterov(h.getBoolean("nesterov").getValueOr(o.nesterov()));
  }

  static void ExportState(const State& state, OptimizerState::Parameter& parameter) {
    if (state.momentum_buffer().defined()) parameter.tensors.emplace_back("momentum_buffer", state.momentum_buffer());
  }

  template <typename Saved>
  static std::unique_ptr<State> ImportState(Saved& saved) {
    auto state = std::make_unique<State>();
    state->momentum_buffer(saved.Take("momentum_buffer"));
    return state;
  }
};

template <>
struct TorchOptimizer<plan::Adam>
    : torch_optimizers_detail::AdamLike<torch::optim::Adam, torch::optim::AdamOptions, torch::optim::AdamParamState> {
};

template <>
struct TorchOptimizer<plan::AdamW>
    : torch_optimizers_detail::AdamLike<torch::optim::AdamW, torch::optim::AdamWOptions,
                                        torch::optim::AdamWParamState> {};

}  // namespace accel::rt::train

#endif  // ACCEL_RUNTIME_MODEL_TORCH_OPTIMIZERS_H_
