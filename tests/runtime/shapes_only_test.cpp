// Models built as shapes only (InitialWeights::kShapesOnly), as ranks other than 0 build them
// under cpu_ram_efficient_loading: every parameter and buffer keeps its name, shape and dtype
// but holds no bytes; a built-in model still draws what rank 0 draws from the generator; a
// TorchScript model, loaded onto the meta device, runs its forward on whatever bytes it is
// given later. (What the engine then sends them: sharded_engine_test.cpp.)
#include <gtest/gtest.h>

#include <ATen/ATen.h>
#include <torch/script.h>

#include <string>
#include <utility>
#include <vector>

#include "runtime/model/trainer.h"
#include "runtime/model/weight_storage.h"
#include "tests/support/plan_builders.h"
#include "tests/unit/scratch_dir.h"

namespace accel::rt::train {
namespace {

plan::TrainLoop Loop() {
  plan::TrainLoop loop;
  loop.optimizer = testing::OptimizerNamed("adam", 0.01);
  return loop;
}

struct Layout {
  std::vector<std::string> names;
  std::vector<std::vector<int64_t>> shapes;
  std::vector<at::ScalarType> dtypes;
  bool operator==(const Layout& other) const {
    return names == other.names && shapes == other.shapes && dtypes == other.dtypes;
  }
};

Layout LayoutOf(const std::vector<std::pair<std::string, at::Tensor>>& named) {
  Layout layout;
  for (const auto& [name, tensor] : named) {
    layout.names.push_back(name);
    layout.shapes.push_back(tensor.sizes().vec());
    layout.dtypes.push_back(tensor.scalar_type());
  }
  return layout;
}

void ExpectNoBytes(const std::vector<std::pair<std::string, at::Tensor>>& named) {
  for (const auto& [name, tensor] : named) EXPECT_EQ(tensor.storage().nbytes(), 0u) << name;
}

// Builds `model` after seeding 7; returns the trainer and the generator's next draw.
std::pair<std::unique_ptr<Trainer>, at::Tensor> BuildSeeded(const plan::BuildModel& model,
                                                            InitialWeights weights) {
  at::manual_seed(7);
  std::unique_ptr<Trainer> trainer = MakeTrainer(model, Loop(), {}, weights);
  return {std::move(trainer), at::rand({4})};
}

TEST(ShapesOnly, BuiltInModelsKeepTheirLayoutAndDrawWhatRankZeroDraws) {
  plan::BuildModel transformer;
  transformer.model =
      plan::Transformer{/*inputs=*/6,       /*d_model=*/8, /*heads=*/2, /*layers=*/2,
                        /*feedforward=*/16, /*outputs=*/3};
  for (const plan::BuildModel& model : {testing::Mlp(4, {16, 8}, 2), transformer}) {
    auto [values, after_values] = BuildSeeded(model, InitialWeights::kValues);
    auto [shapes, after_shapes] = BuildSeeded(model, InitialWeights::kShapesOnly);
    EXPECT_TRUE(LayoutOf(shapes->NamedParameters()) == LayoutOf(values->NamedParameters()));
    ExpectNoBytes(shapes->NamedParameters());
    ExpectNoBytes(shapes->NamedBuffers());
    // The generator moved on as far as rank 0's, so later draws (dropout, data) agree.
    EXPECT_TRUE(at::equal(after_shapes, after_values));
  }
}

std::string ClassifierPath() { return std::string(ACCEL_SOURCE_DIR) + "/specs/models/classifier.pt"; }

// Gives each tensor of `shapes` bytes and `values`' values, as rank 0's broadcast would.
void Fill(const std::vector<std::pair<std::string, at::Tensor>>& shapes,
          const std::vector<std::pair<std::string, at::Tensor>>& values) {
  at::NoGradGuard no_grad;
  for (size_t i = 0; i < shapes.size(); ++i) {
    AllocateBytes(shapes[i].second);
    shapes[i].second.copy_(values[i].second);
  }
}

TEST(ShapesOnly, ATorchScriptModelLoadsItsShapesAndRunsOnTheBytesItIsGiven) {
  plan::BuildModel model{plan::TorchScript{ClassifierPath()}};
  plan::TrainLoop loop = Loop();
  loop.loss = plan::Loss::cross_entropy;
  std::unique_ptr<Trainer> values = MakeTrainer(model, loop);
  std::unique_ptr<Trainer> shapes = MakeTrainer(model, loop, {}, InitialWeights::kShapesOnly);
  EXPECT_TRUE(LayoutOf(shapes->NamedParameters()) == LayoutOf(values->NamedParameters()));
  EXPECT_TRUE(LayoutOf(shapes->NamedBuffers()) == LayoutOf(values->NamedBuffers()));
  ExpectNoBytes(shapes->NamedParameters());
  ExpectNoBytes(shapes->NamedBuffers());
  for (const auto& [name, tensor] : shapes->NamedParameters()) {
    EXPECT_TRUE(tensor.requires_grad()) << name;
    EXPECT_EQ(tensor.device(), at::Device(at::kCPU)) << name;
  }

  // Forward reads the tensors now registered in the module: once they hold rank 0's values, a
  // step gives rank 0's loss and weights.
  Fill(shapes->NamedParameters(), values->NamedParameters());
  Fill(shapes->NamedBuffers(), values->NamedBuffers());
  at::manual_seed(3);
  at::Tensor features = at::randn({8, 4});
  at::Tensor labels = at::tensor({0, 1, 2, 0, 1, 2, 0, 1}, at::kLong);
  EXPECT_EQ(shapes->ForwardBackward(features, labels), values->ForwardBackward(features, labels));
  shapes->OptimizerStep();
  values->OptimizerStep();
  for (size_t i = 0; i < values->NamedParameters().size(); ++i) {
    EXPECT_TRUE(at::equal(shapes->NamedParameters()[i].second, values->NamedParameters()[i].second))
        << values->NamedParameters()[i].first;
  }
}

// A tensor attribute that is neither a parameter nor a buffer has no way to receive rank 0's
// values: such a module loads its own, as without cpu_ram_efficient_loading.
TEST(ShapesOnly, ATorchScriptModelWithAPlainTensorAttributeLoadsItsValues) {
  torch::jit::Module module("Offset");
  module.register_parameter("w", torch::full({3, 1}, 0.5).set_requires_grad(true), /*is_buffer=*/false);
  module.register_attribute("shift", c10::TensorType::get(), torch::full({1}, 2.0));
  module.define("def forward(self, x: Tensor) -> Tensor:\n    return torch.matmul(x, self.w) + self.shift\n");
  const std::string path = (testing::ScratchDir("shapes_only") / "offset.pt").string();
  module.save(path);
  std::unique_ptr<Trainer> trainer =
      MakeTrainer(plan::BuildModel{plan::TorchScript{path}}, Loop(), {}, InitialWeights::kShapesOnly);
  ASSERT_EQ(trainer->NamedParameters().size(), 1u);
  ASSERT_EQ(trainer->NamedParameters()[0].second.storage().nbytes(), 3 * sizeof(float));
  EXPECT_TRUE(at::equal(trainer->NamedParameters()[0].second, torch::full({3, 1}, 0.5)));
}

// Tied weights (one tensor under two names) stay tied: separate shapes would untie them, so
// such a module loads its values too.
TEST(ShapesOnly, ATorchScriptModelWithTiedWeightsLoadsItsValues) {
  torch::jit::Module module("Tied");
  torch::Tensor shared = torch::full({3, 3}, 0.25).set_requires_grad(true);
  module.register_parameter("a", shared, /*is_buffer=*/false);
  module.register_parameter("b", shared, /*is_buffer=*/false);
  module.define(
      "def forward(self, x: Tensor) -> Tensor:\n    return torch.matmul(torch.matmul(x, self.a), self.b)\n");
  const std::string path = (testing::ScratchDir("shapes_only") / "tied.pt").string();
  module.save(path);
  std::unique_ptr<Trainer> trainer =
      MakeTrainer(plan::BuildModel{plan::TorchScript{path}}, Loop(), {}, InitialWeights::kShapesOnly);
  for (const auto& [name, tensor] : trainer->NamedParameters()) {
    ASSERT_EQ(tensor.storage().nbytes(), 9 * sizeof(float)) << name;
    EXPECT_TRUE(at::equal(tensor, torch::full({3, 3}, 0.25))) << name;
  }
}

}  // namespace
}  // namespace accel::rt::train
