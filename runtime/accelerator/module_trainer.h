#ifndef ACCEL_RUNTIME_ACCELERATOR_MODULE_TRAINER_H_
#define ACCEL_RUNTIME_ACCELERATOR_MODULE_TRAINER_H_

#include <memory>

#include <torch/nn/module.h>
#include <torch/optim/optimizer.h>

#include "runtime/model/trainer.h"

namespace accel::rt::accelerator {

// A user's model and optimizer seen through the runtime's Trainer interface, so the Accelerator
// clips, steps, checkpoints and saves them with the built-in executor's code. The user's loop
// runs the forward and backward passes itself: ForwardBackward and Evaluate throw
// std::logic_error. Throws std::invalid_argument for an optimizer checkpoints do not support.
std::unique_ptr<train::Trainer> WrapModule(torch::nn::Module& model, torch::optim::Optimizer& optimizer);

}  // namespace accel::rt::accelerator

#endif  // ACCEL_RUNTIME_ACCELERATOR_MODULE_TRAINER_H_
