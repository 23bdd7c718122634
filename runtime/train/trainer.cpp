// The one runtime TU that includes <torch/torch.h>: torch::nn and torch::optim live here.
#include "runtime/train/trainer.h"

#include <torch/torch.h>

#include <map>
#include <stdexcept>

namespace accel::rt::train {
namespace {

// LibTorch keys optimizer state by the parameter's TensorImpl address.
std::string StateKey(const torch::Tensor& parameter) {
  return c10::guts::to_string(parameter.unsafeGetTensorImpl());
}

// A copy of `source` with the shape and dtype of `like`; throws when the shape differs.
torch::Tensor CopyLike(const at::Tensor& source, const torch::Tensor& like, const std::string& what) {
  if (source.sizes() != like.sizes() || source.scalar_type() != like.scalar_type()) {
    throw std::invalid_argument("optimizer state `" + what +
                                "` has another shape or dtype than its parameter");
  }
  return source.detach().clone(at::MemoryFormat::Contiguous);
}

double Number(const llvm::json::Object& object, llvm::StringRef key, double fallback) {
  if (llvm::Optional<double> value = object.getNumber(key)) return *value;
  return fallback;
}

class TorchTrainer final : public Trainer {
 public:
  TorchTrainer(const plan::BuildModel& model, const plan::TrainLoop& loop) {
    if (model.kind != "mlp") throw std::invalid_argument("unknown model kind `" + model.kind + "`");
    int64_t width = model.inputs;
    for (int64_t hidden : model.hidden) {
      net_->push_back(torch::nn::Linear(width, hidden));
      net_->push_back(torch::nn::ReLU());
      width = hidden;
    }
    net_->push_back(torch::nn::Linear(width, model.outputs));

    const plan::Optimizer& opt = loop.optimizer;
    type_ = opt.name;
    if (opt.name == "sgd") {
      optimizer_ = std::make_unique<torch::optim::SGD>(
          net_->parameters(),
          torch::optim::SGDOptions(opt.lr).momentum(opt.momentum).weight_decay(opt.weight_decay));
    } else if (opt.name == "adamw") {
      optimizer_ =
          std::make_unique<torch::optim::AdamW>(net_->parameters(), torch::optim::AdamWOptions(opt.lr)
                                                                        .betas({opt.beta1, opt.beta2})
                                                                        .eps(opt.eps)
                                                                        .weight_decay(opt.weight_decay));
    } else {
      throw std::invalid_argument("unknown optimizer `" + opt.name + "`");
    }
  }

  float ForwardBackward(const at::Tensor& features, const at::Tensor& targets) override {
    optimizer_->zero_grad();
    torch::Tensor loss = torch::mse_loss(net_->forward(features), targets);
    loss.backward();
    return loss.item<float>();
  }

  void OptimizerStep() override { optimizer_->step(); }

  std::vector<std::pair<std::string, at::Tensor>> NamedParameters() const override {
    std::vector<std::pair<std::string, at::Tensor>> named;
    for (const auto& item : net_->named_parameters()) named.emplace_back(item.key(), item.value());
    return named;
  }

  OptimizerState ExportOptimizerState() const override {
    OptimizerState out;
    out.type = type_;
    const torch::optim::OptimizerOptions& options = optimizer_->param_groups().at(0).options();
    if (type_ == "sgd") {
      const auto& o = static_cast<const torch::optim::SGDOptions&>(options);
      out.hyperparameters = llvm::json::Object{{"lr", o.lr()},
                                               {"momentum", o.momentum()},
                                               {"dampening", o.dampening()},
                                               {"weight_decay", o.weight_decay()},
                                               {"nesterov", o.nesterov()}};
    } else {
      const auto& o = static_cast<const torch::optim::AdamWOptions&>(options);
      out.hyperparameters =
          llvm::json::Object{{"lr", o.lr()},
                             {"betas", llvm::json::Array{std::get<0>(o.betas()), std::get<1>(o.betas())}},
                             {"eps", o.eps()},
                             {"weight_decay", o.weight_decay()},
                             {"amsgrad", o.amsgrad()}};
    }
    for (const auto& item : net_->named_parameters()) {
      OptimizerState::Parameter parameter{item.key(), {}, {}};
      auto found = optimizer_->state().find(StateKey(item.value()));
      if (found != optimizer_->state().end()) {
        if (type_ == "sgd") {
          const auto& state = static_cast<const torch::optim::SGDParamState&>(*found->second);
          if (state.momentum_buffer().defined())
            parameter.tensors.emplace_back("momentum_buffer", state.momentum_buffer());
        } else {
          const auto& state = static_cast<const torch::optim::AdamWParamState&>(*found->second);
          parameter.counters.emplace_back("step", state.step());
          parameter.tensors.emplace_back("exp_avg", state.exp_avg());
          parameter.tensors.emplace_back("exp_avg_sq", state.exp_avg_sq());
          if (state.max_exp_avg_sq().defined())
            parameter.tensors.emplace_back("max_exp_avg_sq", state.max_exp_avg_sq());
        }
      }
      out.parameters.push_back(std::move(parameter));
    }
    return out;
  }

  void ImportOptimizerState(const OptimizerState& in) override {
    if (in.type != type_) {
      throw std::invalid_argument("the checkpoint's optimizer is `" + in.type + "`, this run's is `" + type_ +
                                  "`");
    }
    auto named = net_->named_parameters();
    if (in.parameters.size() != named.size()) {
      throw std::invalid_argument("the checkpoint's optimizer has state for " +
                                  std::to_string(in.parameters.size()) + " parameters, the model has " +
                                  std::to_string(named.size()));
    }
    // Build every new state first, so that a mismatch changes nothing.
    std::vector<std::pair<std::string, std::unique_ptr<torch::optim::OptimizerParamState>>> states;
    for (size_t i = 0; i < named.size(); ++i) {
      const OptimizerState::Parameter& p = in.parameters[i];
      const torch::Tensor& parameter = named[i].value();
      if (p.name != named[i].key()) {
        throw std::invalid_argument("the checkpoint's optimizer state #" + std::to_string(i) + " is for `" +
                                    p.name + "`, the model's parameter is `" + named[i].key() + "`");
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
        torch::Tensor copy = CopyLike(found->second, parameter, p.name + "." + key);
        tensors.erase(found);
        return copy;
      };
      if (type_ == "sgd") {
        auto state = std::make_unique<torch::optim::SGDParamState>();
        state->momentum_buffer(take("momentum_buffer"));
        states.emplace_back(StateKey(parameter), std::move(state));
      } else {
        auto state = std::make_unique<torch::optim::AdamWParamState>();
        auto step = counters.find("step");
        if (step == counters.end()) {
          throw std::invalid_argument("the checkpoint's optimizer state for `" + p.name + "` has no `step`");
        }
        state->step(step->second);
        state->exp_avg(take("exp_avg"));
        state->exp_avg_sq(take("exp_avg_sq"));
        if (tensors.count("max_exp_avg_sq")) state->max_exp_avg_sq(take("max_exp_avg_sq"));
        states.emplace_back(StateKey(parameter), std::move(state));
      }
      if (!tensors.empty()) {
        throw std::invalid_argument("the checkpoint's optimizer state for `" + p.name +
                                    "` has an unknown key `" + tensors.begin()->first + "`");
      }
    }
    // Hyper-parameters: the checkpoint wins, as with PyTorch's load_state_dict.
    const llvm::json::Object& h = in.hyperparameters;
    torch::optim::OptimizerOptions& options = optimizer_->param_groups().at(0).options();
    if (type_ == "sgd") {
      auto& o = static_cast<torch::optim::SGDOptions&>(options);
      o.lr(Number(h, "lr", o.lr()));
      o.momentum(Number(h, "momentum", o.momentum()));
      o.dampening(Number(h, "dampening", o.dampening()));
      o.weight_decay(Number(h, "weight_decay", o.weight_decay()));
      o.nesterov(h.getBoolean("nesterov").getValueOr(o.nesterov()));
    } else {
      auto& o = static_cast<torch::optim::AdamWOptions&>(options);
      o.lr(Number(h, "lr", o.lr()));
      if (const llvm::json::Array* betas = h.getArray("betas"); betas && betas->size() == 2) {
        o.betas(std::make_tuple((*betas)[0].getAsNumber().getValueOr(std::get<0>(o.betas())),
                                (*betas)[1].getAsNumber().getValueOr(std::get<1>(o.betas()))));
      }
      o.eps(Number(h, "eps", o.eps()));
      o.weight_decay(Number(h, "weight_decay", o.weight_decay()));
      o.amsgrad(h.getBoolean("amsgrad").getValueOr(o.amsgrad()));
    }
    optimizer_->state().clear();
    for (auto& [key, state] : states) optimizer_->state()[key] = std::move(state);
  }

 private:
  torch::nn::Sequential net_;
  std::string type_;  // sgd or adamw
  std::unique_ptr<torch::optim::Optimizer> optimizer_;
};

}  // namespace

std::unique_ptr<Trainer> MakeTrainer(const plan::BuildModel& model, const plan::TrainLoop& loop) {
  return std::make_unique<TorchTrainer>(model, loop);
}

}  // namespace accel::rt::train
