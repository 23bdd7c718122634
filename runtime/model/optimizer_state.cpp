// The optimizer's state by parameter name, for checkpoints: shared by the built-in trainer and
// the Accelerator's wrapper of a user's optimizer.
#include "runtime/model/optimizer_state.h"

#include <torch/torch.h>

#include <map>
#include <stdexcept>
#include <utility>

#include "runtime/checkpoint/optimizer_format.h"
#include "runtime/model/torch_optimizers.h"

namespace accel::rt::train {
namespace {

using checkpoint::ForEachOptimizer;
using checkpoint::OptimizerName;

// Calls f(checkpoint::TypeTag<O>{}) for the plan's optimizer O that checkpoints name `type`.
template <typename F>
void WithOptimizerNamed(const std::string& type, F&& f) {
  bool found = ForEachOptimizer([&](auto tag) {
    if (OptimizerName<typename decltype(tag)::type>() != type) return false;
    f(tag);
    return true;
  });
  if (!found) {
    throw std::invalid_argument("checkpoints support the optimizers " + checkpoint::OptimizerNames() + ", not `" +
                                type + "`");
  }
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

// One parameter's state as the checkpoint holds it, taken key by key by TorchOptimizer's
// ImportState; a key nobody took is an error.
class SavedState {
 public:
  SavedState(const OptimizerState::Parameter& saved, bool owned, const torch::Tensor& parameter)
      : name_(saved.name),
        owned_(owned),
        parameter_(parameter),
        tensors_(saved.tensors.begin(), saved.tensors.end()),
        counters_(saved.counters.begin(), saved.counters.end()) {}

  bool Empty() const { return tensors_.empty() && counters_.empty(); }
  bool Has(const std::string& key) const { return tensors_.count(key) > 0; }

  torch::Tensor Take(const std::string& key) {
    auto found = tensors_.find(key);
    if (found == tensors_.end()) throw Missing(key);
    torch::Tensor copy = AdoptLike(found->second, owned_, parameter_, name_ + "." + key);
    tensors_.erase(found);
    return copy;
  }

  int64_t Counter(const std::string& key) const {
    auto found = counters_.find(key);
    if (found == counters_.end()) throw Missing(key);
    return found->second;
  }

  // Throws when a tensor was left untaken: a key this optimizer does not know.
  void CheckAllTaken() const {
    if (!tensors_.empty()) {
      throw std::invalid_argument("the checkpoint's optimizer state for `" + name_ + "` has an unknown key `" +
                                  tensors_.begin()->first + "`");
    }
  }

 private:
  std::invalid_argument Missing(const std::string& key) const {
    return std::invalid_argument("the checkpoint's optimizer state for `" + name_ + "` has no `" + key + "`");
  }

  const std::string& name_;
  bool owned_;
  const torch::Tensor& parameter_;
  std::map<std::string, at::Tensor> tensors_;
  std::map<std::string, int64_t> counters_;
};

}  // namespace

std::string OptimizerType(const torch::optim::Optimizer& optimizer) {
  std::string type;
  ForEachOptimizer([&](auto tag) {
    using O = typename decltype(tag)::type;
    if (dynamic_cast<const typename TorchOptimizer<O>::Optimizer*>(&optimizer) == nullptr) return false;
    type = OptimizerName<O>();
    return true;
  });
  if (type.empty()) {
    throw std::invalid_argument("checkpoints support the torch::optim optimizers " + checkpoint::OptimizerNames() +
                                ", not this optimizer");
  }
  return type;
}

OptimizerState ExportOptimizerState(const torch::optim::Optimizer& optimizer, const std::string& type,
                                    const std::vector<std::pair<std::string, torch::Tensor>>& named) {
  OptimizerState out;
  out.type = type;
  WithOptimizerNamed(type, [&](auto tag) {
    using Torch = TorchOptimizer<typename decltype(tag)::type>;
    out.hyperparameters = Torch::Hyperparameters(
        static_cast<const typename Torch::Options&>(optimizer.param_groups().at(0).options()));
    for (const auto& [name, tensor] : named) {
      OptimizerState::Parameter parameter{name, {}, {}};
      auto found = optimizer.state().find(StateKey(tensor));
      if (found != optimizer.state().end())
        Torch::ExportState(static_cast<const typename Torch::State&>(*found->second), parameter);
      out.parameters.push_back(std::move(parameter));
    }
  });
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
  WithOptimizerNamed(type, [&](auto tag) {
    using Torch = TorchOptimizer<typename decltype(tag)::type>;
    // Build every new state first, so that a mismatch changes nothing.
    std::vector<std::pair<void*, std::unique_ptr<torch::optim::OptimizerParamState>>> states;
    for (size_t i = 0; i < named.size(); ++i) {
      const OptimizerState::Parameter& p = in.parameters[i];
      const torch::Tensor& parameter = named[i].second;
      if (p.name != named[i].first) {
        throw std::invalid_argument("the checkpoint's optimizer state #" + std::to_string(i) + " is for `" +
                                    p.name + "`, the model's parameter is `" + named[i].first + "`");
      }
      SavedState saved(p, in.tensors_owned, parameter);
      if (saved.Empty()) continue;  // not stepped yet
      states.emplace_back(StateKey(parameter), Torch::ImportState(saved));
      saved.CheckAllTaken();
    }
    // Hyper-parameters: the checkpoint wins, as with PyTorch's load_state_dict.
    Torch::SetHyperparameters(in.hyperparameters,
                              static_cast<typename Torch::Options&>(optimizer.param_groups().at(0).options()));
    optimizer.state().clear();
    for (auto& [key, state] : states) optimizer.state()[key] = std::move(state);
  });
}

}  // namespace accel::rt::train
