#ifndef ACCEL_RUNTIME_MODEL_OPTIMIZER_FACTORY_H_
#define ACCEL_RUNTIME_MODEL_OPTIMIZER_FACTORY_H_

#include <memory>
#include <string>
#include <vector>

#include <torch/optim/optimizer.h>

#include "compiler/plan/plan.h"

// The loop's optimizer over any tensors: the model's parameters (Trainer) or the flat shards
// a sharded engine steps (ShardedEngine). Every optimizer here is elementwise, so stepping a
// shard of the parameters laid end to end equals stepping the parameters themselves.
namespace accel::rt::train {

// The name checkpoints give the loop's optimizer (`adamw`; runtime/checkpoint/optimizer_format.h).
std::string OptimizerTypeOf(const plan::TrainLoop& loop);

// The loop's optimizer (runtime/model/torch_optimizers.h) with its hyper-parameters over
// `parameters` (one group).
std::unique_ptr<torch::optim::Optimizer> MakeOptimizer(const plan::TrainLoop& loop,
                                                       std::vector<torch::Tensor> parameters);

}  // namespace accel::rt::train

#endif  // ACCEL_RUNTIME_MODEL_OPTIMIZER_FACTORY_H_
