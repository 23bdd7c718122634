// The optimizer's state by parameter name, for checkpoints: shared by the built-in trainer and
// the Accelerator's wrapper of a user's optimizer.
#include "runtime/model/optimizer_state.h"

#include <torch/torch.h>

#include <map>
#include <stdexcept>
#include <utility>

namespace accel::rt::train {
namespace {

// The optimizers checkpoints support, each with its name in optimizer.json. Every dispatch below
// is a switch over Kind with no default, so a new optimizer is a compile error at each of them.
enum class Kind { kSgd, kAdam, kAdamW };
constexpr std::pair<Kind, const char*> kKindNames[] = {
    {Kind::kSgd, "sgd"}, {Kind::kAdam, "adam"}, {Kind::kAdamW, "adamw"}};

Kind KindOf(const std::string& type) {
  for (const auto& [kind, name] : kKindNames) {
    if (type == name) return kind;
  }
  throw std::invalid_argument("checkpoints support the optimizers sgd, adam and adamw, not `" + type + "`");
}

const char* NameOf(Kind kind) {
  for (const auto& [member, name] : kKindNames) {
    if (member == kind) return name;
  }
  return "?";
}

// LibTorch keys optimizer state by the parameter's TensorImpl address.
void* StateKey(const torch::Tensor& parameter) { return parameter.unsafeGetTensorImpl(); }

// `source` as state of a parameter shaped like `like`: itself when `owned` (see
// OptimizerState::tensors_owned), contiguous and on the parameter's device, else a contiguous
// copy there (a checkpoint's state is read into host memory; a GPU's parameter needs it on the
// GPU); throws when the shape or dtype differs.
torch::Tensor AdoptLike(const at::Tensor& source, bool owned, const torch::Tensor& like,
                        const std::string& what) {
  if (source.sizes() != like.sizes() || source.scalar_type() != like.scalar_type()) {
    throw std::invalid_argument("optimizer state `" + what +
                                "` has another shape or dtype than its parameter");
  }
  if (source.device() != like.device()) return source.detach().to(like.device()).contiguous();
  if (owned && source.is_contiguous()) return source.detach();
  return source.detach().clone(at::MemoryFormat::Contiguous);
}

double Number(const llvm::json::Object& object, llvm::StringRef key, double fallback) {
  if (llvm::Optional<double> value = object.getNumber(key)) return *value;
  return fallback;
}

// Adam and AdamW share their options' and state's shape but not a base class.
template <typename Options>
llvm::json::Object AdamHyperparameters(const Options& o) {
  return llvm::json::Object{{"lr", o.lr()},
                            {"betas", llvm::json::Array{std::get<0>(o.betas()), std::get<1>(o.betas())}},
                            {"eps", o.eps()},
                            {"weight_decay", o.weight_decay()},
                            {"amsgrad", o.amsgrad()}};
}

template <typename Options>
void SetAdamHyperparameters(const llvm::json::Object& h, Options& o) {
  o.lr(Number(h, "lr", o.lr()));
  if (const llvm::json::Array* betas = h.getArray("betas"); betas && betas->size() == 2) {
    o.betas(std::make_tuple((*betas)[0].getAsNumber().getValueOr(std::get<0>(o.betas())),
                            (*betas)[1].getAsNumber().getValueOr(std::get<1>(o.betas()))));
  }
  o.eps(Number(h, "eps", o.eps()));
  o.weight_decay(Number(h, "weight_decay", o.weight_decay()));
  o.amsgrad(h.getBoolean("amsgrad").getValueOr(o.amsgrad()));
}

template <typename State>
void ExportAdamState(const State& state, OptimizerState::Parameter& parameter) {
  parameter.counters.emplace_back("step", state.step());
  parameter.tensors.emplace_back("exp_avg", state.exp_avg());
  parameter.tensors.emplace_back("exp_avg_sq", state.exp_avg_sq());
  if (state.max_exp_avg_sq().defined())
    parameter.tensors.emplace_back("max_exp_avg_sq", state.max_exp_avg_sq());
}

template <typename State, typename Take>
std::unique_ptr<State> ImportAdamState(const std::string& name, std::map<std::string, at::Tensor>& tensors,
                                       const std::map<std::string, int64_t>& counters, Take& take) {
  auto state = std::make_unique<State>();
  auto step = counters.find("step");
  if (step == counters.end()) {
    throw std::invalid_argument("the checkpoint's optimizer state for `" + name + "` has no `step`");
  }
  state->step(step->second);
  state->exp_avg(take("exp_avg"));
  state->exp_avg_sq(take("exp_avg_sq"));
  if (tensors.count("max_exp_avg_sq")) state->max_exp_avg_sq(take("max_exp_avg_sq"));
  return state;
}

}  // namespace

std::string OptimizerType(const torch::optim::Optimizer& optimizer) {
  if (dynamic_cast<const torch::optim::SGD*>(&optimizer)) return NameOf(Kind::kSgd);
  if (dynamic_cast<const torch::optim::AdamW*>(&optimizer)) return NameOf(Kind::kAdamW);
  if (dynamic_cast<const torch::optim::Adam*>(&optimizer)) return NameOf(Kind::kAdam);
  throw std::invalid_argument("checkpoints support torch::optim::SGD, Adam and AdamW, not this optimizer");
}

OptimizerState ExportOptimizerState(const torch::optim::Optimizer& optimizer, const std::string& type,
                                    const std::vector<std::pair<std::string, torch::Tensor>>& named) {
  OptimizerState out;
  out.type = type;
  const Kind kind = KindOf(type);
  const torch::optim::OptimizerOptions& options = optimizer.param_groups().at(0).options();
  switch (kind) {
    case Kind::kSgd: {
      const auto& o = static_cast<const torch::optim::SGDOptions&>(options);
      out.hyperparameters = llvm::json::Object{{"lr", o.lr()},
                                               {"momentum", o.momentum()},
                                               {"dampening", o.dampening()},
                                               {"weight_decay", o.weight_decay()},
                                               {"nesterov", o.nesterov()}};
      break;
    }
    case Kind::kAdam:
      out.hyperparameters = AdamHyperparameters(static_cast<const torch::optim::AdamOptions&>(options));
      break;
    case Kind::kAdamW:
      out.hyperparameters = AdamHyperparameters(static_cast<const torch::optim::AdamWOptions&>(options));
      break;
  }
  for (const auto& [name, tensor] : named) {
    OptimizerState::Parameter parameter{name, {}, {}};
    auto found = optimizer.state().find(StateKey(tensor));
    if (found != optimizer.state().end()) {
      switch (kind) {
        case Kind::kSgd: {
          const auto& state = static_cast<const torch::optim::SGDParamState&>(*found->second);
          if (state.momentum_buffer().defined())
            parameter.tensors.emplace_back("momentum_buffer", state.momentum_buffer());
          break;
        }
        case Kind::kAdam:
          ExportAdamState(static_cast<const torch::optim::AdamParamState&>(*found->second), parameter);
          break;
        case Kind::kAdamW:
          ExportAdamState(static_cast<const torch::optim::AdamWParamState&>(*found->second), parameter);
          break;
      }
    }
    out.parameters.push_back(std::move(parameter));
  }
  return out;
}

void ImportOptimizerState(const OptimizerState& in, const std::string& type,
                          const std::vector<std::pair<std::string, torch::Tensor>>& named,
                          torch::optim::Optimizer& optimizer) {
  if (in.type != type) {
    throw std::invalid_argument("the checkpoint's optimizer is `" + in.type + "`, this run's is `" + type +
                                "`");
  }
  if (in.parameters.size() != named.size()) {
    throw std::invalid_argument("the checkpoint's optimizer has state for " +
                                std::to_string(in.parameters.size()) + " parameters, the model has " +
                                std::to_string(named.size()));
  }
  const Kind kind = KindOf(type);
  // Build every new state first, so that a mismatch changes nothing.
  std::vector<std::pair<void*, std::unique_ptr<torch::optim::OptimizerParamState>>> states;
  for (size_t i = 0; i < named.size(); ++i) {
    const OptimizerState::Parameter& p = in.parameters[i];
    const torch::Tensor& parameter = named[i].second;
    if (p.name != named[i].first) {
      throw std::invalid_argument("the checkpoint's optimizer state #" + std::to_string(i) + " is for `" +
                                  p.name + "`, the model's parameter is `" + named[i].first + "`");
    }
    std::map<std::string, at::Tensor> tensors(p.tensors.begin(), p.tensors.end());
    std::map<std::string, int64_t> counters(p.counters.begin(), p.counters.end());
    if (tensors.empty() && counters.empty()) continue;  // not stepped yet
    auto take = [&](const std::string& key) -> torch::Tensor {
      auto found = tensors.find(key);
      if (found == tensors.end()) {
        throw std::invalid_argument("the checkpoint's optimizer state for `" + p.name + "` has no `" + key +
                                    "`");
      }
      torch::Tensor copy = AdoptLike(found->second, in.tensors_owned, parameter, p.name + "." + key);
      tensors.erase(found);
      return copy;
    };
    switch (kind) {
      case Kind::kSgd: {
        auto state = std::make_unique<torch::optim::SGDParamState>();
        state->momentum_buffer(take("momentum_buffer"));
        states.emplace_back(StateKey(parameter), std::move(state));
        break;
      }
      case Kind::kAdam:
        states.emplace_back(StateKey(parameter),
                            ImportAdamState<torch::optim::AdamParamState>(p.name, tensors, counters, take));
        break;
      case Kind::kAdamW:
        states.emplace_back(StateKey(parameter),
                            ImportAdamState<torch::optim::AdamWParamState>(p.name, tensors, counters, take));
        break;
    }
    if (!tensors.empty()) {
      throw std::invalid_argument("the checkpoint's optimizer state for `" + p.name +
                                  "` has an unknown key `" + tensors.begin()->first + "`");
    }
  }
  // Hyper-parameters: the checkpoint wins, as with PyTorch's load_state_dict.
  const llvm::json::Object& h = in.hyperparameters;
  torch::optim::OptimizerOptions& options = optimizer.param_groups().at(0).options();
  switch (kind) {
    case Kind::kSgd: {
      auto& o = static_cast<torch::optim::SGDOptions&>(options);
      o.lr(Number(h, "lr", o.lr()));
      o.momentum(Number(h, "momentum", o.momentum()));
      o.dampening(Number(h, "dampening", o.dampening()));
      o.weight_decay(Number(h, "weight_decay", o.weight_decay()));
      o.nesterov(h.getBoolean("nesterov").getValueOr(o.nesterov()));
      break;
    }
    case Kind::kAdam:
      SetAdamHyperparameters(h, static_cast<torch::optim::AdamOptions&>(options));
      break;
    case Kind::kAdamW:
      SetAdamHyperparameters(h, static_cast<torch::optim::AdamWOptions&>(options));
      break;
  }
  optimizer.state().clear();
  for (auto& [key, state] : states) optimizer.state()[key] = std::move(state);
}

}  // namespace accel::rt::train
