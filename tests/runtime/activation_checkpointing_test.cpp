// Which forward blocks activation checkpointing recomputes (runtime/model/activation_checkpointing.h):
// those whose every parameter lies inside a module the wrap policy checkpoints.
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <vector>

#include "runtime/model/activation_checkpointing.h"

namespace accel::rt::train {
namespace {

// The built-in transformer's shape: an embedding of a Linear (0, 1) and a position table the
// model holds itself (2), two encoder layers (3, 4 and 5, 6: a layer's own parameter and its
// inner Linear), and a head (7). Forward runs 4 blocks: the embedding, each layer, the head.
ModuleNode Tree() {
  ModuleNode root{"", "Model", {2}, {}};
  root.children.push_back({"value", "Linear", {0, 1}, {}});
  ModuleNode layers{"layers", "ModuleList", {}, {}};
  for (size_t i = 0; i < 2; ++i) {
    ModuleNode layer{"layers." + std::to_string(i), "TransformerEncoderLayer", {3 + 2 * i}, {}};
    layer.children.push_back({layer.path + ".linear1", "Linear", {4 + 2 * i}, {}});
    layers.children.push_back(layer);
  }
  root.children.push_back(layers);
  root.children.push_back({"head", "Linear", {7}, {}});
  return root;
}
const std::vector<std::string> kNames{"value.weight",
                                      "value.bias",
                                      "position",
                                      "layers.0.norm",
                                      "layers.0.linear1.weight",
                                      "layers.1.norm",
                                      "layers.1.linear1.weight",
                                      "head.weight"};
const std::vector<int64_t> kNumels{8, 8, 32, 16, 512, 16, 512, 8};
const std::vector<std::vector<size_t>> kBlocks{{0, 1, 2}, {3, 4}, {5, 6}, {7}};

plan::Sharding Policy(plan::WrapPolicy policy) {
  plan::Sharding sharding;
  sharding.wrap_policy = policy;
  sharding.activation_checkpointing = true;
  return sharding;
}

TEST(ActivationCheckpointing, TransformerBasedWrapRecomputesTheWrappedLayersOnly) {
  Recomputation plan =
      PlanRecomputation(Tree(), kBlocks, kNames, kNumels, Policy(plan::WrapPolicy::transformer_based));
  EXPECT_EQ(plan.blocks, (std::vector<bool>{false, true, true, false}));
  EXPECT_EQ(plan.summary,
            "activation checkpointing: 2 of 4 forward blocks recomputed in backward (layers.0, layers.1); "
            "value+position, head keep their activations (parameters outside the checkpointed modules)");
}

// torch checkpoints every submodule when the policy is NO_WRAP: all blocks but the one
// reading the model's own position table.
TEST(ActivationCheckpointing, NoWrapRecomputesEveryBlockInsideASubmodule) {
  Recomputation plan = PlanRecomputation(Tree(), kBlocks, kNames, kNumels, Policy(plan::WrapPolicy::no_wrap));
  EXPECT_EQ(plan.blocks, (std::vector<bool>{false, true, true, true}));
  EXPECT_NE(plan.summary.find("3 of 4"), std::string::npos) << plan.summary;
  EXPECT_NE(plan.summary.find("value+position keeps its activations"), std::string::npos) << plan.summary;
}

// Size-based: the inner Linears (512) are wrapped, each layer's norm is left to the root, so
// no layer lies wholly inside a checkpointed module.
TEST(ActivationCheckpointing, SizeBasedWrapRecomputesOnlyBlocksWhollyInsideWrappedModules) {
  plan::Sharding sharding = Policy(plan::WrapPolicy::size_based);
  sharding.min_num_params = 500;
  Recomputation plan = PlanRecomputation(Tree(), kBlocks, kNames, kNumels, sharding);
  EXPECT_EQ(plan.blocks, (std::vector<bool>{false, false, false, false}));
  EXPECT_NE(plan.summary.find("has no effect"), std::string::npos) << plan.summary;
  // Low enough that each whole layer (16 + 512) is wrapped, after its Linear.
  sharding.min_num_params = 10;
  EXPECT_EQ(PlanRecomputation(Tree(), kBlocks, kNames, kNumels, sharding).blocks,
            (std::vector<bool>{false, true, true, false}));
}

TEST(ActivationCheckpointing, AModelRunAsOneBlockIsNotRecomputed) {
  Recomputation plan = PlanRecomputation(Tree(), {{0, 1, 2, 3, 4, 5, 6, 7}}, kNames, kNumels,
                                         Policy(plan::WrapPolicy::no_wrap));
  EXPECT_EQ(plan.blocks, (std::vector<bool>{false}));
  EXPECT_NE(plan.summary.find("one block"), std::string::npos) << plan.summary;
}

TEST(ActivationCheckpointing, ClassesTheModelLacksAreAnError) {
  plan::Sharding sharding = Policy(plan::WrapPolicy::transformer_based);
  sharding.transformer_layer_cls_to_wrap = {"BertLayer"};
  EXPECT_THROW(PlanRecomputation(Tree(), kBlocks, kNames, kNumels, sharding), std::invalid_argument);
}

}  // namespace
}  // namespace accel::rt::train
