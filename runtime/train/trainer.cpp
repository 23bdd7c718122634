// The one runtime TU that includes <torch/torch.h>: torch::nn, torch::jit and torch::optim
// live here.
#include "runtime/train/trainer.h"

#include <ATen/autocast_mode.h>
#include <torch/script.h>
#include <torch/torch.h>

#include <map>
#include <stdexcept>

namespace accel::rt::train {
namespace {

// LibTorch keys optimizer state by the parameter's TensorImpl address.
std::string StateKey(const torch::Tensor& parameter) {
  return c10::guts::to_string(parameter.unsafeGetTensorImpl());
}

// `source` as state of a parameter shaped like `like`: itself when `owned` (see
// OptimizerState::tensors_owned) and contiguous, else a contiguous copy; throws when the shape
// or dtype differs.
torch::Tensor AdoptLike(const at::Tensor& source, bool owned, const torch::Tensor& like,
                        const std::string& what) {
  if (source.sizes() != like.sizes() || source.scalar_type() != like.scalar_type()) {
    throw std::invalid_argument("optimizer state `" + what +
                                "` has another shape or dtype than its parameter");
  }
  if (owned && source.is_contiguous()) return source.detach();
  return source.detach().clone(at::MemoryFormat::Contiguous);
}

double Number(const llvm::json::Object& object, llvm::StringRef key, double fallback) {
  if (llvm::Optional<double> value = object.getNumber(key)) return *value;
  return fallback;
}

// `torch.autocast("cpu", dtype=torch.bfloat16, **AutocastKwargs)` for one forward pass:
// restores the previous settings and, leaving the outermost region, drops the cast cache.
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

class CpuAutocast {
 public:
  CpuAutocast(bool enabled, bool cache_enabled)
      : was_enabled_(at::autocast::is_cpu_enabled()),
        was_dtype_(at::autocast::get_autocast_cpu_dtype()),
        was_cache_enabled_(at::autocast::is_autocast_cache_enabled()) {
    at::autocast::set_cpu_enabled(enabled);
    at::autocast::set_autocast_cpu_dtype(at::kBFloat16);
    at::autocast::set_autocast_cache_enabled(cache_enabled);
    at::autocast::increment_nesting();
  }
  ~CpuAutocast() {
    if (at::autocast::decrement_nesting() == 0) at::autocast::clear_cache();
    at::autocast::set_cpu_enabled(was_enabled_);
    at::autocast::set_autocast_cpu_dtype(was_dtype_);
    at::autocast::set_autocast_cache_enabled(was_cache_enabled_);
  }
  CpuAutocast(const CpuAutocast&) = delete;
  CpuAutocast& operator=(const CpuAutocast&) = delete;

 private:
  bool was_enabled_;
  at::ScalarType was_dtype_;
  bool was_cache_enabled_;
};

// The model behind one forward(): a built-in torch::nn module or a TorchScript module.
class Model {
 public:
  virtual ~Model() = default;
  virtual torch::Tensor Forward(const torch::Tensor& features) = 0;
  virtual std::vector<std::pair<std::string, torch::Tensor>> Parameters() const = 0;
  virtual std::vector<std::pair<std::string, torch::Tensor>> Buffers() const = 0;
  // Training mode (batch norm uses batch statistics) or evaluation mode (running statistics).
  virtual void SetTraining(bool training) = 0;
};

std::vector<std::pair<std::string, torch::Tensor>> Named(
    const torch::OrderedDict<std::string, torch::Tensor>& dict) {
  std::vector<std::pair<std::string, torch::Tensor>> named;
  for (const auto& item : dict) named.emplace_back(item.key(), item.value());
  return named;
}

// A model built from torch::nn modules (named as Python names them).
template <typename Net>
class NnModel : public Model {
 public:
  void SetTraining(bool training) override { net_->train(training); }
  std::vector<std::pair<std::string, torch::Tensor>> Parameters() const override {
    return Named(net_->named_parameters());
  }
  std::vector<std::pair<std::string, torch::Tensor>> Buffers() const override {
    return Named(net_->named_buffers());
  }

 protected:
  explicit NnModel(Net net) : net_(std::move(net)) {}
  Net net_;
};

class MlpModel final : public NnModel<torch::nn::Sequential> {
 public:
  explicit MlpModel(const plan::MLP& spec) : NnModel(torch::nn::Sequential()) {
    int64_t width = spec.inputs;
    for (int64_t hidden : spec.hidden) {
      net_->push_back(torch::nn::Linear(width, hidden));
      net_->push_back(torch::nn::ReLU());
      width = hidden;
    }
    net_->push_back(torch::nn::Linear(width, spec.outputs));
  }
  torch::Tensor Forward(const torch::Tensor& features) override { return net_->forward(features); }
};

// Each feature value is a token: value × a learned vector plus a learned position, then
// post-norm encoder layers (no dropout, so data-parallel runs stay comparable), the mean over
// tokens, and a Linear head.
class TransformerModelImpl : public torch::nn::Module {
 public:
  explicit TransformerModelImpl(const plan::Transformer& spec)
      : value_(register_module("value", torch::nn::Linear(1, spec.d_model))),
        position_(register_parameter("position", torch::randn({spec.inputs, 1, spec.d_model}) * 0.02)),
        encoder_(
            register_module("encoder", torch::nn::TransformerEncoder(torch::nn::TransformerEncoderOptions(
                                           torch::nn::TransformerEncoderLayerOptions(spec.d_model, spec.heads)
                                               .dim_feedforward(spec.feedforward)
                                               .dropout(0.0),
                                           spec.layers)))),
        head_(register_module("head", torch::nn::Linear(spec.d_model, spec.outputs))) {}

  torch::Tensor forward(const torch::Tensor& features) {
    // [batch, tokens] -> [tokens, batch, 1] -> [tokens, batch, d_model] (sequence first).
    torch::Tensor tokens = value_(features.t().unsqueeze(-1)) + position_;
    return head_(encoder_(tokens).mean(0));
  }

 private:
  torch::nn::Linear value_;
  torch::Tensor position_;
  torch::nn::TransformerEncoder encoder_;
  torch::nn::Linear head_;
};
TORCH_MODULE(TransformerModel);

class BuiltInTransformer final : public NnModel<TransformerModel> {
 public:
  explicit BuiltInTransformer(const plan::Transformer& spec)
      : NnModel(TransformerModel(spec)), tokens_(spec.inputs) {}
  torch::Tensor Forward(const torch::Tensor& features) override {
    if (features.dim() != 2 || features.size(1) != tokens_) {
      throw std::invalid_argument("the transformer reads " + std::to_string(tokens_) +
                                  " features per sample, the batch has shape " + c10::str(features.sizes()));
    }
    return net_->forward(features);
  }

 private:
  int64_t tokens_;
};

// A module saved with `torch.jit.save(torch.jit.script(model))`: its parameter names are the
// Python model's state_dict keys.
class ScriptedModel final : public Model {
 public:
  explicit ScriptedModel(const std::string& path) {
    try {
      module_ = torch::jit::load(path);
    } catch (const c10::Error& error) {
      std::string text = error.what_without_backtrace();
      throw std::invalid_argument("cannot load the TorchScript model " + path + ": " +
                                  text.substr(0, text.find('\n')) +
                                  "; save it with torch.jit.save(torch.jit.script(model), path)");
    }
    module_.train();
    if (Parameters().empty()) {
      throw std::invalid_argument("the TorchScript model " + path + " has no trainable parameters");
    }
  }
  torch::Tensor Forward(const torch::Tensor& features) override {
    torch::jit::IValue output = module_.forward({features});
    if (!output.isTensor()) {
      throw std::invalid_argument("the TorchScript model's forward returned " + output.tagKind() +
                                  ", not one tensor of predictions");
    }
    return output.toTensor();
  }
  void SetTraining(bool training) override { module_.train(training); }
  std::vector<std::pair<std::string, torch::Tensor>> Parameters() const override {
    std::vector<std::pair<std::string, torch::Tensor>> named;
    for (const auto& item : module_.named_parameters(/*recurse=*/true)) {
      if (item.value.requires_grad()) named.emplace_back(item.name, item.value);
    }
    return named;
  }
  std::vector<std::pair<std::string, torch::Tensor>> Buffers() const override {
    std::vector<std::pair<std::string, torch::Tensor>> named;
    for (const auto& item : module_.named_buffers(/*recurse=*/true))
      named.emplace_back(item.name, item.value);
    // Frozen parameters are state the optimizer never touches: saved and broadcast with the
    // buffers, so model.safetensors holds the whole state_dict.
    for (const auto& item : module_.named_parameters(/*recurse=*/true)) {
      if (!item.value.requires_grad()) named.emplace_back(item.name, item.value);
    }
    return named;
  }

 private:
  mutable torch::jit::Module module_;
};

class TorchTrainer final : public Trainer {
 public:
  TorchTrainer(const plan::BuildModel& model, const plan::TrainLoop& loop) : loop_(loop) {
    model_ = std::visit(plan::Overloaded{[](const plan::MLP& m) -> std::unique_ptr<Model> {
                                           return std::make_unique<MlpModel>(m);
                                         },
                                         [](const plan::Transformer& m) -> std::unique_ptr<Model> {
                                           return std::make_unique<BuiltInTransformer>(m);
                                         },
                                         [](const plan::TorchScript& m) -> std::unique_ptr<Model> {
                                           return std::make_unique<ScriptedModel>(m.path);
                                         }},
                        model.model);
    std::vector<torch::Tensor> parameters;
    for (const auto& [name, tensor] : model_->Parameters()) parameters.push_back(tensor);

    // Checkpoints name the optimizer in lower case (`adamw`), as torch's module names do.
    type_ = llvm::StringRef(plan::TagOf(loop.optimizer).data(), plan::TagOf(loop.optimizer).size()).lower();
    optimizer_ = std::visit(
        plan::Overloaded{
            [&](const plan::SGD& o) -> std::unique_ptr<torch::optim::Optimizer> {
              return std::make_unique<torch::optim::SGD>(
                  parameters,
                  torch::optim::SGDOptions(o.lr).momentum(o.momentum).weight_decay(o.weight_decay));
            },
            [&](const plan::Adam& o) -> std::unique_ptr<torch::optim::Optimizer> {
              return std::make_unique<torch::optim::Adam>(parameters, torch::optim::AdamOptions(o.lr)
                                                                          .betas({o.beta1, o.beta2})
                                                                          .eps(o.eps)
                                                                          .weight_decay(o.weight_decay));
            },
            [&](const plan::AdamW& o) -> std::unique_ptr<torch::optim::Optimizer> {
              return std::make_unique<torch::optim::AdamW>(parameters, torch::optim::AdamWOptions(o.lr)
                                                                           .betas({o.beta1, o.beta2})
                                                                           .eps(o.eps)
                                                                           .weight_decay(o.weight_decay));
            }},
        loop.optimizer);
  }

  float ForwardBackward(const at::Tensor& features, const at::Tensor& targets, double loss_scale) override {
    torch::Tensor loss = Losses(Forward(features), targets, torch::Reduction::Mean);
    (loss_scale == 1.0 ? loss : loss * loss_scale).backward();
    return loss.item<float>();
  }

  Evaluation Evaluate(const at::Tensor& features, const at::Tensor& targets) override {
    torch::NoGradGuard no_grad;
    model_->SetTraining(false);
    torch::Tensor output;
    try {
      output = Forward(features);
    } catch (...) {
      model_->SetTraining(true);
      throw;
    }
    model_->SetTraining(true);
    Evaluation result;
    result.losses = Losses(output, targets, torch::Reduction::None);
    if (result.losses.dim() > 1) result.losses = result.losses.flatten(1).mean(1);
    if (loop_.loss == plan::Loss::cross_entropy)
      result.correct = output.argmax(1).eq(targets).to(torch::kFloat);
    return result;
  }
  // The forward pass under bf16 autocast when the loop asks for it; outputs in fp32, as
  // Accelerate's prepared model returns them (convert_outputs_to_fp32), so the loss is computed
  // outside the autocast region, as in a user's loop.
  torch::Tensor Forward(const at::Tensor& features) {
    if (loop_.mixed_precision == plan::MixedPrecision::bf16) {
      CpuAutocast autocast(loop_.autocast.enabled, loop_.autocast.cache_enabled);
      return model_->Forward(features).to(torch::kFloat);
    }
    return model_->Forward(features).to(torch::kFloat);
  }

  // The loss of `output` against `targets`, after checking that they fit each other.
  torch::Tensor Losses(const torch::Tensor& output, const at::Tensor& targets,
                       torch::Reduction::Reduction reduction) {
    if (loop_.loss == plan::Loss::cross_entropy) {
      if (targets.scalar_type() != torch::kLong || targets.dim() != 1) {
        throw std::invalid_argument("cross_entropy needs one integer class index per sample");
      }
      if (output.dim() != 2) {
        throw std::invalid_argument("cross_entropy needs the model to return [batch, classes] logits, not " +
                                    c10::str(output.sizes()));
      }
      torch::Tensor out_of_range = (targets < 0).logical_or(targets >= output.size(1));
      if (out_of_range.any().item<bool>()) {
        throw std::invalid_argument("a class index is outside [0, " + std::to_string(output.size(1)) +
                                    "): the model has " + std::to_string(output.size(1)) + " outputs");
      }
      return at::cross_entropy_loss(output, targets, {}, reduction, /*ignore_index=*/-100,
                                    /*label_smoothing=*/0.0);
    }
    if (output.sizes() != targets.sizes()) {
      throw std::invalid_argument("the model returned predictions of shape " + c10::str(output.sizes()) +
                                  " for targets of shape " + c10::str(targets.sizes()) +
                                  "; match the model's outputs to the data's target columns");
    }
    return torch::mse_loss(output, targets, reduction);
  }

  double ClipGradNorm(double max_norm) override {
    std::vector<torch::Tensor> parameters;
    for (const auto& [name, tensor] : model_->Parameters()) parameters.push_back(tensor);
    return torch::nn::utils::clip_grad_norm_(parameters, max_norm);
  }

  void SetLearningRate(double lr) override {
    for (torch::optim::OptimizerParamGroup& group : optimizer_->param_groups()) group.options().set_lr(lr);
  }
  double learning_rate() const override { return optimizer_->param_groups().at(0).options().get_lr(); }

  void OptimizerStep(bool skip) override {
    if (!skip) optimizer_->step();
    // PyTorch 1.13's default: zeroed, not set to None.
    optimizer_->zero_grad();
  }

  std::vector<std::pair<std::string, at::Tensor>> NamedParameters() const override {
    std::vector<std::pair<std::string, at::Tensor>> named;
    for (auto& [name, tensor] : model_->Parameters()) named.emplace_back(name, tensor);
    return named;
  }
  std::vector<std::pair<std::string, at::Tensor>> NamedBuffers() const override {
    std::vector<std::pair<std::string, at::Tensor>> named;
    for (auto& [name, tensor] : model_->Buffers()) named.emplace_back(name, tensor);
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
    } else if (type_ == "adam") {
      out.hyperparameters = AdamHyperparameters(static_cast<const torch::optim::AdamOptions&>(options));
    } else {
      out.hyperparameters = AdamHyperparameters(static_cast<const torch::optim::AdamWOptions&>(options));
    }
    for (const auto& [name, tensor] : model_->Parameters()) {
      OptimizerState::Parameter parameter{name, {}, {}};
      auto found = optimizer_->state().find(StateKey(tensor));
      if (found != optimizer_->state().end()) {
        if (type_ == "sgd") {
          const auto& state = static_cast<const torch::optim::SGDParamState&>(*found->second);
          if (state.momentum_buffer().defined())
            parameter.tensors.emplace_back("momentum_buffer", state.momentum_buffer());
        } else if (type_ == "adam") {
          ExportAdamState(static_cast<const torch::optim::AdamParamState&>(*found->second), parameter);
        } else {
          ExportAdamState(static_cast<const torch::optim::AdamWParamState&>(*found->second), parameter);
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
    std::vector<std::pair<std::string, torch::Tensor>> named = model_->Parameters();
    if (in.parameters.size() != named.size()) {
      throw std::invalid_argument("the checkpoint's optimizer has state for " +
                                  std::to_string(in.parameters.size()) + " parameters, the model has " +
                                  std::to_string(named.size()));
    }
    // Build every new state first, so that a mismatch changes nothing.
    std::vector<std::pair<std::string, std::unique_ptr<torch::optim::OptimizerParamState>>> states;
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
      if (type_ == "sgd") {
        auto state = std::make_unique<torch::optim::SGDParamState>();
        state->momentum_buffer(take("momentum_buffer"));
        states.emplace_back(StateKey(parameter), std::move(state));
      } else if (type_ == "adam") {
        states.emplace_back(StateKey(parameter),
                            ImportAdamState<torch::optim::AdamParamState>(p.name, tensors, counters, take));
      } else {
        states.emplace_back(StateKey(parameter),
                            ImportAdamState<torch::optim::AdamWParamState>(p.name, tensors, counters, take));
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
    } else if (type_ == "adam") {
      SetAdamHyperparameters(h, static_cast<torch::optim::AdamOptions&>(options));
    } else {
      SetAdamHyperparameters(h, static_cast<torch::optim::AdamWOptions&>(options));
    }
    optimizer_->state().clear();
    for (auto& [key, state] : states) optimizer_->state()[key] = std::move(state);
  }

 private:
  plan::TrainLoop loop_;
  std::unique_ptr<Model> model_;
  std::string type_;  // sgd, adam or adamw
  std::unique_ptr<torch::optim::Optimizer> optimizer_;
};

}  // namespace

std::unique_ptr<Trainer> MakeTrainer(const plan::BuildModel& model, const plan::TrainLoop& loop) {
  return std::make_unique<TorchTrainer>(model, loop);
}

}  // namespace accel::rt::train
