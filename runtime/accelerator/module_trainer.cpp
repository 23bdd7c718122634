#include "runtime/accelerator/module_trainer.h"

#include <torch/nn/utils/clip_grad.h>

#include <stdexcept>

#include "runtime/model/loss_scaler.h"
#include "runtime/model/optimizer_state.h"

namespace accel::rt::accelerator {
namespace {

class ModuleTrainer final : public train::Trainer {
 public:
  ModuleTrainer(torch::nn::Module& model, torch::optim::Optimizer& optimizer)
      : model_(model), optimizer_(optimizer), type_(train::OptimizerType(optimizer)) {}

  float ForwardBackward(const at::Tensor&, const at::Tensor&, double) override {
    throw std::logic_error("the Accelerator's user loop runs the forward pass itself");
  }
  train::Evaluation Evaluate(const at::Tensor&, const at::Tensor&) override {
    throw std::logic_error("the Accelerator's user loop runs the forward pass itself");
  }
  float ForwardBackward(const data::Columns&, double) override {
    throw std::logic_error("the Accelerator's user loop runs the forward pass itself");
  }
  train::ModelOutputs Evaluate(const data::Columns&) override {
    throw std::logic_error("the Accelerator's user loop runs the forward pass itself");
  }
  void CheckColumns(const data::Columns&) override {
    throw std::logic_error("the Accelerator's user loop binds its batches itself");
  }
  // The sharded engine's hooks: the Accelerator refuses sharded plans (RefuseWhatTheLoopOwns).
  train::ModuleNode Modules() const override {
    throw std::logic_error("the Accelerator runs data parallelism without sharding");
  }
  std::vector<std::vector<size_t>> ForwardBlocks() const override {
    throw std::logic_error("the Accelerator runs data parallelism without sharding");
  }
  void SetForwardGate(train::ForwardGate*) override {
    throw std::logic_error("the Accelerator runs data parallelism without sharding");
  }
  double ClipGradNorm(double max_norm) override {
    std::vector<torch::Tensor> parameters;
    for (const auto& [name, tensor] : NamedParameters()) parameters.push_back(tensor);
    return torch::nn::utils::clip_grad_norm_(parameters, max_norm);
  }
  bool UnscaleGradients(double inv_scale) override {
    std::vector<at::Tensor> gradients;
    for (const auto& [name, tensor] : NamedParameters())
      if (tensor.grad().defined()) gradients.push_back(tensor.grad());
    return train::UnscaleAndFindNonFinite(gradients, inv_scale);
  }
  void SetLearningRate(double lr) override {
    for (torch::optim::OptimizerParamGroup& group : optimizer_.param_groups()) group.options().set_lr(lr);
  }
  double learning_rate() const override { return optimizer_.param_groups().at(0).options().get_lr(); }
  void OptimizerStep(bool skip) override {
    if (!skip) optimizer_.step();
    optimizer_.zero_grad();  // freed (set to None), PyTorch's default
  }
  // Trainable parameters only: frozen ones are saved and broadcast with the buffers.
  std::vector<std::pair<std::string, at::Tensor>> NamedParameters() const override {
    std::vector<std::pair<std::string, at::Tensor>> named;
    for (const auto& item : model_.named_parameters())
      if (item.value().requires_grad()) named.emplace_back(item.key(), item.value());
    return named;
  }
  std::vector<std::pair<std::string, at::Tensor>> NamedBuffers() const override {
    std::vector<std::pair<std::string, at::Tensor>> named;
    for (const auto& item : model_.named_buffers()) named.emplace_back(item.key(), item.value());
    for (const auto& item : model_.named_parameters())
      if (!item.value().requires_grad()) named.emplace_back(item.key(), item.value());
    return named;
  }
  train::OptimizerState ExportOptimizerState() const override {
    return train::ExportOptimizerState(optimizer_, type_, NamedParameters());
  }
  void ImportOptimizerState(const train::OptimizerState& state) override {
    train::ImportOptimizerState(state, type_, NamedParameters(), optimizer_);
  }

 private:
  torch::nn::Module& model_;
  torch::optim::Optimizer& optimizer_;
  std::string type_;
};

}  // namespace

std::unique_ptr<train::Trainer> WrapModule(torch::nn::Module& model, torch::optim::Optimizer& optimizer) {
  return std::make_unique<ModuleTrainer>(model, optimizer);
}

}  // namespace accel::rt::accelerator
