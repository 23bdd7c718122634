// The torch side of each optimizer (runtime/model/torch_optimizers.h) against the format
// checkpoints give it (runtime/checkpoint/optimizer_format.h): the two tables must name the same
// hyper-parameters and the same state, or an Accelerate import or export disagrees with what a
// resume reads.
#include <gtest/gtest.h>

#include <torch/torch.h>

#include <set>
#include <string>

#include "runtime/checkpoint/optimizer_format.h"
#include "runtime/model/optimizer_factory.h"
#include "runtime/model/optimizer_state.h"

namespace accel::rt::train {
namespace {

// One step of the optimizer `o` over a parameter, and its state as checkpoints write it.
OptimizerState StateAfterOneStep(const plan::Optimizer& o) {
  plan::TrainLoop loop;
  loop.optimizer = o;
  torch::Tensor weight = torch::ones({3}, torch::requires_grad());
  std::unique_ptr<torch::optim::Optimizer> optimizer = MakeOptimizer(loop, {weight});
  weight.sum().backward();
  optimizer->step();
  return ExportOptimizerState(*optimizer, OptimizerTypeOf(loop), {{"weight", weight}});
}

TEST(OptimizerFormat, TheTorchSideWritesTheHyperparametersAndStateTheFormatNames) {
  checkpoint::ForEachOptimizer([](auto tag) -> bool {
    using O = typename decltype(tag)::type;
    using Format = checkpoint::OptimizerFormat<O>;
    O with_state{};
    if constexpr (std::is_same_v<O, plan::SGD>) with_state.momentum = 0.9;  // SGD keeps a buffer only so
    OptimizerState state = StateAfterOneStep(with_state);

    std::set<std::string> written, named;
    for (const auto& entry : state.hyperparameters) written.insert(entry.first.str());
    for (const checkpoint::Hyperparameter& h : Format::kHyperparameters) named.insert(std::string(h.name));
    EXPECT_EQ(written, named) << O::kTag;

    EXPECT_EQ(state.type, checkpoint::OptimizerName<O>());
    EXPECT_EQ(state.parameters.size(), 1u);
    if (state.parameters.size() != 1u) return false;
    EXPECT_EQ(static_cast<int64_t>(state.parameters[0].tensors.size()), Format::StateTensors(with_state)) << O::kTag;
    return false;
  });
}

TEST(OptimizerFormat, ATorchOptimizerIsNamedAsItsPlanTwinAndAnotherIsRefused) {
  checkpoint::ForEachOptimizer([](auto tag) -> bool {
    using O = typename decltype(tag)::type;
    plan::TrainLoop loop;
    loop.optimizer = O{};
    torch::Tensor weight = torch::ones({2}, torch::requires_grad());
    EXPECT_EQ(OptimizerType(*MakeOptimizer(loop, {weight})), checkpoint::OptimizerName<O>());
    return false;
  });
  torch::Tensor weight = torch::ones({2}, torch::requires_grad());
  torch::optim::RMSprop rmsprop({weight});
  EXPECT_THROW(OptimizerType(rmsprop), std::invalid_argument);
}

TEST(OptimizerFormat, NamesFindTheirOptimizerWithItsDefaults) {
  ASSERT_TRUE(checkpoint::OptimizerNamed("adamw").has_value());
  EXPECT_TRUE(std::holds_alternative<plan::AdamW>(*checkpoint::OptimizerNamed("adamw")));
  EXPECT_FALSE(checkpoint::OptimizerNamed("AdamW").has_value());
  EXPECT_FALSE(checkpoint::OptimizerNamed("lion").has_value());
  EXPECT_EQ(checkpoint::OptimizerNames(), "sgd, adam, adamw");
  EXPECT_EQ(checkpoint::StateTensorsPerParameter(plan::SGD{}), 0);
  EXPECT_EQ(checkpoint::StateTensorsPerParameter(plan::SGD{.momentum = 0.5}), 1);
  EXPECT_EQ(checkpoint::StateTensorsPerParameter(plan::Adam{}), 2);
}

}  // namespace
}  // namespace accel::rt::train
