// The sharded engine's units (runtime/engine/flat_units.h): which parameters each wrap policy
// groups, in which order, and how each unit is padded into shards.
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <vector>

#include "runtime/engine/flat_units.h"

namespace accel::rt::train {
namespace {

// A transformer-like tree: embed (params 0, 1), layers.0 and layers.1 (a Block each, with an
// inner Linear), head (param 6), and a parameter of the model itself (7).
//   0 embed.weight 10   1 embed.bias 3
//   2 layers.0.w 40     3 layers.0.fc.weight 25
//   4 layers.1.w 40     5 layers.1.fc.weight 25
//   6 head.weight 6     7 scale 1
ModuleNode Tree() {
  ModuleNode root{"", "Model", {7}, {}};
  root.children.push_back({"embed", "Linear", {0, 1}, {}});
  ModuleNode layers{"layers", "ModuleList", {}, {}};
  for (size_t i = 0; i < 2; ++i) {
    ModuleNode block{"layers." + std::to_string(i), "__torch__.model.Block", {2 + 2 * i}, {}};
    block.children.push_back({block.path + ".fc", "Linear", {3 + 2 * i}, {}});
    layers.children.push_back(block);
  }
  root.children.push_back(layers);
  root.children.push_back({"head", "Linear", {6}, {}});
  return root;
}
const std::vector<int64_t> kNumels{10, 3, 40, 25, 40, 25, 6, 1};

std::vector<std::vector<size_t>> Groups(const std::vector<FlatUnit>& units) {
  std::vector<std::vector<size_t>> groups;
  for (const FlatUnit& unit : units) groups.push_back(unit.parameters);
  return groups;
}

plan::Sharding Policy(plan::WrapPolicy policy) {
  plan::Sharding sharding;
  sharding.wrap_policy = policy;
  return sharding;
}

TEST(FlatUnits, NoWrapIsOneRootUnitOfEveryParameter) {
  std::vector<FlatUnit> units = WrapUnits(Tree(), kNumels, Policy(plan::WrapPolicy::no_wrap));
  EXPECT_EQ(Groups(units), (std::vector<std::vector<size_t>>{{0, 1, 2, 3, 4, 5, 6, 7}}));
  EXPECT_EQ(units[0].module, "");
}

TEST(FlatUnits, TransformerBasedWrapsNamedClassesByQualifiedNameOrLastComponent) {
  plan::Sharding sharding = Policy(plan::WrapPolicy::transformer_based);
  sharding.transformer_layer_cls_to_wrap = {"Block"};
  std::vector<FlatUnit> units = WrapUnits(Tree(), kNumels, sharding);
  // The root unit first, then each Block with its inner Linear.
  EXPECT_EQ(Groups(units), (std::vector<std::vector<size_t>>{{0, 1, 6, 7}, {2, 3}, {4, 5}}));
  EXPECT_EQ(units[1].module, "layers.0");
  sharding.transformer_layer_cls_to_wrap = {"__torch__.model.Block", "Linear"};
  // Children first: the inner Linears become units of their own.
  EXPECT_EQ(Groups(WrapUnits(Tree(), kNumels, sharding)),
            (std::vector<std::vector<size_t>>{{7}, {0, 1}, {2}, {3}, {4}, {5}, {6}}));
}

// As Accelerate looks up every named class: one the model has does not excuse one it lacks.
TEST(FlatUnits, TransformerBasedNamingOneClassTheModelLacksIsRefused) {
  plan::Sharding sharding = Policy(plan::WrapPolicy::transformer_based);
  sharding.transformer_layer_cls_to_wrap = {"Block", "BertLayer"};
  try {
    WrapUnits(Tree(), kNumels, sharding);
    FAIL() << "no error";
  } catch (const std::invalid_argument& error) {
    EXPECT_NE(std::string(error.what()).find("names [\"BertLayer\"], but this model has no module of that"),
              std::string::npos)
        << error.what();
  }
}

TEST(FlatUnits, TransformerBasedNamingNoClassOfTheModelListsItsClasses) {
  plan::Sharding sharding = Policy(plan::WrapPolicy::transformer_based);
  sharding.transformer_layer_cls_to_wrap = {"BertLayer"};
  try {
    WrapUnits(Tree(), kNumels, sharding);
    FAIL() << "no error";
  } catch (const std::invalid_argument& error) {
    EXPECT_NE(std::string(error.what()).find("BertLayer"), std::string::npos) << error.what();
    EXPECT_NE(std::string(error.what()).find("__torch__.model.Block"), std::string::npos) << error.what();
  }
}

// As Accelerate falls back to a model's `_no_split_modules`: no class named wraps the block the
// built-in Transformer repeats.
TEST(FlatUnits, TransformerBasedWithoutClassesWrapsTheBuiltInTransformersLayers) {
  ModuleNode root{"", "Transformer", {}, {}};
  root.children.push_back({"embed", "Linear", {0, 1}, {}});
  root.children.push_back({"layers.0", "TransformerEncoderLayer", {2, 3}, {}});
  root.children.push_back({"layers.1", "TransformerEncoderLayer", {4, 5}, {}});
  root.children.push_back({"head", "Linear", {6, 7}, {}});
  std::vector<FlatUnit> units = WrapUnits(root, kNumels, Policy(plan::WrapPolicy::transformer_based));
  EXPECT_EQ(Groups(units), (std::vector<std::vector<size_t>>{{0, 1, 6, 7}, {2, 3}, {4, 5}}));
  // A model without that block (the tree above) has no `_no_split_modules`: as Accelerate's
  // FSDP2 policy, nothing is wrapped, and the root unit holds every parameter.
  EXPECT_EQ(Groups(WrapUnits(Tree(), kNumels, Policy(plan::WrapPolicy::transformer_based))),
            (std::vector<std::vector<size_t>>{{0, 1, 2, 3, 4, 5, 6, 7}}));
}

// Accelerate with no class named and a model without `_no_split_modules` (an MLP) wraps nothing
// but the root: one unit of every parameter, no error.
TEST(FlatUnits, TransformerBasedWithoutClassesOnAModelWithoutLayersIsTheRootAlone) {
  ModuleNode mlp{"", "MLP", {}, {}};
  mlp.children.push_back({"net.0", "Linear", {0, 1, 2, 3}, {}});
  mlp.children.push_back({"net.2", "Linear", {4, 5, 6, 7}, {}});
  std::vector<FlatUnit> units = WrapUnits(mlp, kNumels, Policy(plan::WrapPolicy::transformer_based));
  EXPECT_EQ(Groups(units), (std::vector<std::vector<size_t>>{{0, 1, 2, 3, 4, 5, 6, 7}}));
  EXPECT_EQ(units[0].module, "");
}

TEST(FlatUnits, SizeBasedCountsParametersNotYetWrapped) {
  plan::Sharding sharding = Policy(plan::WrapPolicy::size_based);
  // layers.N.fc (25) is too small alone; each Block (65) is large enough; then `layers` has
  // nothing left, and the root keeps the rest.
  sharding.min_num_params = 50;
  EXPECT_EQ(Groups(WrapUnits(Tree(), kNumels, sharding)),
            (std::vector<std::vector<size_t>>{{0, 1, 6, 7}, {2, 3}, {4, 5}}));
  // At exactly the threshold a module is wrapped: each fc (25) becomes a unit, then each
  // Block's own 40 is enough for a unit of its own; embed (13) and head (6) are not.
  sharding.min_num_params = 25;
  EXPECT_EQ(Groups(WrapUnits(Tree(), kNumels, sharding)),
            (std::vector<std::vector<size_t>>{{0, 1, 6, 7}, {2}, {3}, {4}, {5}}));
  // Nothing is large enough: the root alone.
  sharding.min_num_params = 1000;
  EXPECT_EQ(Groups(WrapUnits(Tree(), kNumels, sharding)),
            (std::vector<std::vector<size_t>>{{0, 1, 2, 3, 4, 5, 6, 7}}));
}

TEST(FlatUnits, LayOutPadsEachUnitToAMultipleOfTheShardCount) {
  plan::Sharding sharding = Policy(plan::WrapPolicy::transformer_based);
  sharding.transformer_layer_cls_to_wrap = {"Block"};
  std::vector<FlatUnit> units = WrapUnits(Tree(), kNumels, sharding);
  LayOut(units, kNumels, 4);
  // Root: 10 + 3 + 6 + 1 = 20, already a multiple of 4.
  EXPECT_EQ(units[0].offsets, (std::vector<int64_t>{0, 10, 13, 19}));
  EXPECT_EQ(units[0].numel, 20);
  EXPECT_EQ(units[0].padded, 20);
  EXPECT_EQ(units[0].shard_size, 5);
  // A Block: 40 + 25 = 65 -> 68, shards of 17.
  EXPECT_EQ(units[1].offsets, (std::vector<int64_t>{0, 40}));
  EXPECT_EQ(units[1].numel, 65);
  EXPECT_EQ(units[1].padded, 68);
  EXPECT_EQ(units[1].shard_size, 17);
  LayOut(units, kNumels, 1);
  EXPECT_EQ(units[1].padded, 65);
}

}  // namespace
}  // namespace accel::rt::train
