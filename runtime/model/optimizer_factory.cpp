#include "runtime/model/optimizer_factory.h"

#include <torch/optim/adam.h>
#include <torch/optim/adamw.h>
#include <torch/optim/sgd.h>

#include "llvm/ADT/StringRef.h"

namespace accel::rt::train {

std::string OptimizerTypeOf(const plan::TrainLoop& loop) {
  // Checkpoints name the optimizer in lower case (`adamw`), as torch's module names do.
  std::string_view tag = plan::TagOf(loop.optimizer);
  return llvm::StringRef(tag.data(), tag.size()).lower();
}

std::unique_ptr<torch::optim::Optimizer> MakeOptimizer(const plan::TrainLoop& loop,
                                                       std::vector<torch::Tensor> parameters) {
  return std::visit(
      plan::Overloaded{
          [&](const plan::SGD& o) -> std::unique_ptr<torch::optim::Optimizer> {
            return std::make_unique<torch::optim::SGD>(
                parameters, torch::optim::SGDOptions(o.lr).momentum(o.momentum).weight_decay(o.weight_decay));
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

}  // namespace accel::rt::train
