#include "runtime/model/optimizer_factory.h"

#include "runtime/checkpoint/optimizer_format.h"
#include "runtime/model/torch_optimizers.h"

namespace accel::rt::train {

std::string OptimizerTypeOf(const plan::TrainLoop& loop) { return checkpoint::OptimizerName(loop.optimizer); }

std::unique_ptr<torch::optim::Optimizer> MakeOptimizer(const plan::TrainLoop& loop,
                                                       std::vector<torch::Tensor> parameters) {
  return std::visit(
      [&](const auto& o) -> std::unique_ptr<torch::optim::Optimizer> {
        using Torch = TorchOptimizer<std::decay_t<decltype(o)>>;
        return std::make_unique<typename Torch::Optimizer>(parameters, Torch::Make(o));
      },
      loop.optimizer);
}

}  // namespace accel::rt::train
