#ifndef ACCEL_RUNTIME_TRAIN_TRAINER_H_
#define ACCEL_RUNTIME_TRAIN_TRAINER_H_

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <ATen/core/Tensor.h>

#include "compiler/plan/plan.h"

namespace accel::rt::train {

// The optimizer's state keyed by parameter name (PyTorch keys it by position, LibTorch by
// tensor address: neither survives a change of model code), for checkpoints.
struct OptimizerState {
  // `sgd` or `adamw`.
  std::string type;
  // The hyper-parameters of the one parameter group, named as PyTorch's `state_dict()` names
  // them: lr, momentum, dampening, weight_decay, nesterov (SGD); lr, betas, eps, weight_decay,
  // amsgrad (AdamW).
  llvm::json::Object hyperparameters;
  struct Parameter {
    std::string name;
    // State tensors by key (`momentum_buffer`; `exp_avg`, `exp_avg_sq`, `max_exp_avg_sq`).
    std::vector<std::pair<std::string, at::Tensor>> tensors;
    // Per-parameter counters (`step`).
    std::vector<std::pair<std::string, int64_t>> counters;
  };
  // Every parameter of the group, in order; a parameter the optimizer has not stepped yet has
  // neither tensors nor counters.
  std::vector<Parameter> parameters;
};

// The model and its optimizer. Hides torch::nn and torch::optim (and their heavy headers)
// behind a small interface the worker drives.
class Trainer {
 public:
  virtual ~Trainer() = default;
  // Zeroes the gradients, runs the forward pass and the MSE loss, and backpropagates.
  // Returns this rank's loss.
  virtual float ForwardBackward(const at::Tensor& features, const at::Tensor& targets) = 0;
  // Applies the optimizer to the current gradients.
  virtual void OptimizerStep() = 0;
  // Parameters in registration order, named as PyTorch's state_dict names them (`0.weight`).
  virtual std::vector<std::pair<std::string, at::Tensor>> NamedParameters() const = 0;
  // The optimizer's state. The tensors are the live state, not copies: they change with the
  // next OptimizerStep().
  virtual OptimizerState ExportOptimizerState() const = 0;
  // Replaces the optimizer's state and hyper-parameters by copies of `state` (as PyTorch's
  // `load_state_dict` does). Throws std::invalid_argument, changing nothing, when the type, the
  // parameter names, a tensor's shape or a key does not match this optimizer.
  virtual void ImportOptimizerState(const OptimizerState& state) = 0;
};

// Builds the model described by `model` (initialized from the global torch generator, so the
// caller seeds first) and the optimizer of `loop`. Throws std::invalid_argument for a model
// kind or optimizer this runtime does not know.
std::unique_ptr<Trainer> MakeTrainer(const plan::BuildModel& model, const plan::TrainLoop& loop);

}  // namespace accel::rt::train

#endif  // ACCEL_RUNTIME_TRAIN_TRAINER_H_
