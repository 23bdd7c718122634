#ifndef ACCEL_RUNTIME_TRAIN_TRAINER_H_
#define ACCEL_RUNTIME_TRAIN_TRAINER_H_

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <ATen/core/Tensor.h>

#include "compiler/plan/plan.h"

namespace accel::rt::train {

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
};

// Builds the model described by `model` (initialized from the global torch generator, so the
// caller seeds first) and the optimizer of `loop`. Throws std::invalid_argument for a model
// kind or optimizer this runtime does not know.
std::unique_ptr<Trainer> MakeTrainer(const plan::BuildModel& model, const plan::TrainLoop& loop);

}  // namespace accel::rt::train

#endif  // ACCEL_RUNTIME_TRAIN_TRAINER_H_
