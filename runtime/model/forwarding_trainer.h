#ifndef ACCEL_RUNTIME_MODEL_FORWARDING_TRAINER_H_
#define ACCEL_RUNTIME_MODEL_FORWARDING_TRAINER_H_

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "runtime/model/trainer.h"

namespace accel::rt::train {

// A Trainer that passes every call to the trainer it wraps: the base of the engine's wrappers
// (the sharded engine, tensor parallelism), so that each overrides only what it changes and a
// method added to Trainer reaches the model through every wrapper without being written again.
class ForwardingTrainer : public Trainer {
 public:
  float ForwardBackward(const at::Tensor& features, const at::Tensor& targets, double loss_scale) override {
    return inner_->ForwardBackward(features, targets, loss_scale);
  }
  Evaluation Evaluate(const at::Tensor& features, const at::Tensor& targets) override {
    return inner_->Evaluate(features, targets);
  }
  float ForwardBackward(const data::Columns& batch, double loss_scale) override {
    return inner_->ForwardBackward(batch, loss_scale);
  }
  ModelOutputs Evaluate(const data::Columns& batch) override { return inner_->Evaluate(batch); }
  void CheckColumns(const data::Columns& sample) override { inner_->CheckColumns(sample); }
  double ClipGradNorm(double max_norm) override { return inner_->ClipGradNorm(max_norm); }
  bool UnscaleGradients(double inv_scale) override { return inner_->UnscaleGradients(inv_scale); }
  void SetLearningRate(double lr) override { inner_->SetLearningRate(lr); }
  double learning_rate() const override { return inner_->learning_rate(); }
  void OptimizerStep(bool skip) override { inner_->OptimizerStep(skip); }
  std::vector<std::pair<std::string, at::Tensor>> NamedParameters() const override {
    return inner_->NamedParameters();
  }
  std::vector<std::pair<std::string, at::Tensor>> NamedBuffers() const override {
    return inner_->NamedBuffers();
  }
  OptimizerState ExportOptimizerState() const override { return inner_->ExportOptimizerState(); }
  void ImportOptimizerState(const OptimizerState& state) override { inner_->ImportOptimizerState(state); }
  ModuleNode Modules() const override { return inner_->Modules(); }
  std::vector<std::vector<size_t>> ForwardBlocks() const override { return inner_->ForwardBlocks(); }
  void SetForwardGate(ForwardGate* gate) override { inner_->SetForwardGate(gate); }
  std::vector<int> TensorParallelDims() const override { return inner_->TensorParallelDims(); }

 protected:
  explicit ForwardingTrainer(std::unique_ptr<Trainer> inner) : inner_(std::move(inner)) {}

  // Destroyed after the wrapper's own members, which may point into it.
  std::unique_ptr<Trainer> inner_;
};

}  // namespace accel::rt::train

#endif  // ACCEL_RUNTIME_MODEL_FORWARDING_TRAINER_H_
