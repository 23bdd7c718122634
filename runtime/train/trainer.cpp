// The one runtime TU that includes <torch/torch.h>: torch::nn and torch::optim live here.
#include "runtime/train/trainer.h"

#include <torch/torch.h>

#include <stdexcept>

namespace accel::rt::train {
namespace {

class TorchTrainer final : public Trainer {
 public:
  TorchTrainer(const plan::BuildModel& model, const plan::TrainLoop& loop) {
    if (model.kind != "mlp") throw std::invalid_argument("unknown model kind `" + model.kind + "`");
    int64_t width = model.inputs;
    for (int64_t hidden : model.hidden) {
      net_->push_back(torch::nn::Linear(width, hidden));
      net_->push_back(torch::nn::ReLU());
      width = hidden;
    }
    net_->push_back(torch::nn::Linear(width, model.outputs));

    const plan::Optimizer& opt = loop.optimizer;
    if (opt.name == "sgd") {
      optimizer_ = std::make_unique<torch::optim::SGD>(
          net_->parameters(),
          torch::optim::SGDOptions(opt.lr).momentum(opt.momentum).weight_decay(opt.weight_decay));
    } else if (opt.name == "adamw") {
      optimizer_ =
          std::make_unique<torch::optim::AdamW>(net_->parameters(), torch::optim::AdamWOptions(opt.lr)
                                                                        .betas({opt.beta1, opt.beta2})
                                                                        .eps(opt.eps)
                                                                        .weight_decay(opt.weight_decay));
    } else {
      throw std::invalid_argument("unknown optimizer `" + opt.name + "`");
    }
  }

  float ForwardBackward(const at::Tensor& features, const at::Tensor& targets) override {
    optimizer_->zero_grad();
    torch::Tensor loss = torch::mse_loss(net_->forward(features), targets);
    loss.backward();
    return loss.item<float>();
  }

  void OptimizerStep() override { optimizer_->step(); }

  std::vector<std::pair<std::string, at::Tensor>> NamedParameters() const override {
    std::vector<std::pair<std::string, at::Tensor>> named;
    for (const auto& item : net_->named_parameters()) named.emplace_back(item.key(), item.value());
    return named;
  }

 private:
  torch::nn::Sequential net_;
  std::unique_ptr<torch::optim::Optimizer> optimizer_;
};

}  // namespace

std::unique_ptr<Trainer> MakeTrainer(const plan::BuildModel& model, const plan::TrainLoop& loop) {
  return std::make_unique<TorchTrainer>(model, loop);
}

}  // namespace accel::rt::train
