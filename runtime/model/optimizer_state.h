#ifndef ACCEL_RUNTIME_MODEL_OPTIMIZER_STATE_H_
#define ACCEL_RUNTIME_MODEL_OPTIMIZER_STATE_H_

#include <string>
#include <utility>
#include <vector>

#include <torch/optim/optimizer.h>

#include "runtime/model/trainer.h"

// A torch::optim optimizer's state keyed by parameter name (OptimizerState), out and back in:
// what checkpoints store for the built-in trainer and for an Accelerator user's optimizer alike.
namespace accel::rt::train {

// `sgd`, `adam` or `adamw`; throws std::invalid_argument for another optimizer.
std::string OptimizerType(const torch::optim::Optimizer& optimizer);

// The state of `optimizer` (of `type`, see OptimizerType) over `named`, its one parameter
// group's parameters in order. The tensors are the live state, not copies.
OptimizerState ExportOptimizerState(const torch::optim::Optimizer& optimizer, const std::string& type,
                                    const std::vector<std::pair<std::string, torch::Tensor>>& named);

// Replaces the optimizer's state and hyper-parameters by copies of `state` (as PyTorch's
// `load_state_dict` does). Throws std::invalid_argument, changing nothing, when the type, the
// parameter names, a tensor's shape or a key does not match.
void ImportOptimizerState(const OptimizerState& state, const std::string& type,
                          const std::vector<std::pair<std::string, torch::Tensor>>& named,
                          torch::optim::Optimizer& optimizer);

}  // namespace accel::rt::train

#endif  // ACCEL_RUNTIME_MODEL_OPTIMIZER_STATE_H_
