// runtime/memory against hand-computed expectations. The models are Accelerate's own test models
// (tests/test_modeling_utils.py) described by their tensors, so the device maps can be checked
// against the maps Accelerate's tests expect; each comment shows the arithmetic.
#include <gtest/gtest.h>

#include "tests/unit/scratch_dir.h"

#include <fcntl.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>

#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "runtime/checkpoint/safetensors.h"
#include "runtime/memory/checkpoint_headers.h"
#include "runtime/memory/estimate.h"
#include "runtime/memory/modeling.h"
#include "runtime/memory/module_tree.h"

namespace accel::rt::memory {
namespace {

namespace fs = std::filesystem;

using accel::testing::ScratchDir;

NamePattern Pattern(const std::string& text) {
  llvm::Expected<NamePattern> pattern = NamePattern::Parse(text);
  EXPECT_TRUE(static_cast<bool>(pattern)) << llvm::toString(pattern.takeError());
  return std::move(*pattern);
}

std::vector<NamePattern> Patterns(std::initializer_list<const char*> texts) {
  std::vector<NamePattern> patterns;
  for (const char* text : texts) patterns.push_back(Pattern(text));
  return patterns;
}

TensorEntry F32(const std::string& name, std::vector<int64_t> shape) {
  return {name, "F32", std::move(shape), "m"};
}

// Accelerate's ModelForTest: Linear(3, 4), BatchNorm1d(4), Linear(4, 5), in registration order.
// Sizes (fp32): linear1 48 + 16 = 64; batchnorm 16 + 16 + (16 + 16 + 8 buffers) = 72;
// linear2 80 + 20 = 100; total 236.
std::vector<TensorEntry> ModelForTest(const std::string& prefix = "") {
  return {F32(prefix + "linear1.weight", {4, 3}),
          F32(prefix + "linear1.bias", {4}),
          F32(prefix + "batchnorm.weight", {4}),
          F32(prefix + "batchnorm.bias", {4}),
          F32(prefix + "batchnorm.running_mean", {4}),
          F32(prefix + "batchnorm.running_var", {4}),
          {prefix + "batchnorm.num_batches_tracked", "I64", {}, "m"},
          F32(prefix + "linear2.weight", {5, 4}),
          F32(prefix + "linear2.bias", {5})};
}

std::vector<TensorEntry> Concat(std::vector<std::vector<TensorEntry>> parts) {
  std::vector<TensorEntry> all;
  for (auto& part : parts) all.insert(all.end(), part.begin(), part.end());
  return all;
}

// Registration order and BatchNorm's buffers, as a live module would report them.
TreeOptions Live(std::vector<std::vector<std::string>> tied = {}) {
  TreeOptions options;
  options.buffers =
      Patterns({"**.running_mean", "**.running_var", "**.num_batches_tracked", "**.test_buffer*"});
  options.tied = std::move(tied);
  options.order_as_given = true;
  return options;
}

ModuleTree Tree(const std::vector<TensorEntry>& tensors, const TreeOptions& options = {}) {
  llvm::Expected<ModuleTree> tree = ModuleTree::Build(tensors, options);
  EXPECT_TRUE(static_cast<bool>(tree)) << llvm::toString(tree.takeError());
  return std::move(*tree);
}

std::string BuildError(const std::vector<TensorEntry>& tensors, const TreeOptions& options = {}) {
  llvm::Expected<ModuleTree> tree = ModuleTree::Build(tensors, options);
  return tree ? "" : llvm::toString(tree.takeError());
}

MaxMemory Budget(std::vector<std::pair<std::string, double>> limits) {
  MaxMemory budget;
  for (auto& [device, bytes] : limits) budget.push_back({device, bytes});
  return budget;
}

using Map = std::map<std::string, std::string>;

// Accelerate compares device maps as dicts: order does not matter.
Map Infer(const ModuleTree& tree, const MaxMemory& budget, DeviceMapOptions options = {}) {
  DeviceMap map = InferAutoDeviceMap(tree, budget, options);
  return Map(map.entries.begin(), map.entries.end());
}

double SizeOf(const ModuleTree& tree, const ModuleSizes& sizes, const std::string& name) {
  std::optional<NodeId> id = tree.Find(name);
  EXPECT_TRUE(id.has_value()) << name;
  return id ? sizes.Get(*id) : -1;
}

// --- Names and the tree ---------------------------------------------------------------------

TEST(NamePattern, MatchesSegmentBySegment) {
  EXPECT_TRUE(Pattern("model.layers.*").Matches("model.layers.7"));
  EXPECT_FALSE(Pattern("model.layers.*").Matches("model.layers.7.mlp"));
  EXPECT_FALSE(Pattern("model.layers.*").Matches("model.layers"));
  EXPECT_TRUE(Pattern("**.running_mean").Matches("running_mean"));
  EXPECT_TRUE(Pattern("**.running_mean").Matches("a.b.bn.running_mean"));
  EXPECT_FALSE(Pattern("**.running_mean").Matches("a.running_mean_x"));
  EXPECT_TRUE(Pattern("layer?.**").Matches("layer1.linear2.weight"));
  EXPECT_TRUE(Pattern("*.h.*").Matches("transformer.h.11"));
  EXPECT_TRUE(Pattern("enc*der").Matches("encoder"));
}

TEST(NamePattern, RejectsEmptyPatternsAndSegments) {
  EXPECT_FALSE(static_cast<bool>(NamePattern::Parse("")));
  llvm::Expected<NamePattern> bad = NamePattern::Parse("a..b");
  ASSERT_FALSE(static_cast<bool>(bad));
  EXPECT_EQ(llvm::toString(bad.takeError()), "name pattern `a..b` has an empty segment");
}

TEST(ModuleTree, BuildsEveryModulePrefixOfTheTensorNames) {
  ModuleTree tree = Tree({F32("encoder.layers.0.attn.q.weight", {2, 2})});
  for (const char* module : {"encoder", "encoder.layers", "encoder.layers.0", "encoder.layers.0.attn",
                             "encoder.layers.0.attn.q"}) {
    std::optional<NodeId> id = tree.Find(module);
    ASSERT_TRUE(id.has_value()) << module;
    EXPECT_FALSE(tree.node(*id).is_tensor) << module;
  }
  const Node& weight = tree.node(*tree.Find("encoder.layers.0.attn.q.weight"));
  EXPECT_TRUE(weight.is_tensor);
  EXPECT_EQ(weight.elements, 4u);
  EXPECT_EQ(tree.node(*weight.parent).name, "encoder.layers.0.attn.q");
  EXPECT_EQ(tree.node(*weight.parent).parameters, std::vector<NodeId>{*tree.Find(weight.name)});
}

TEST(ModuleTree, OrdersSiblingsByNameWithNumbersAsNumbers) {
  ModuleTree tree =
      Tree({F32("layers.10.w", {1}), F32("layers.2.w", {1}), F32("embed.w", {1}), F32("layers.1.w", {1})});
  std::vector<std::string> names;
  for (NodeId id : tree.node(*tree.Find("layers")).children) names.push_back(tree.node(id).name);
  EXPECT_EQ(names, (std::vector<std::string>{"layers.1", "layers.2", "layers.10"}));
  // The registration order is kept when asked.
  TreeOptions given;
  given.order_as_given = true;
  ModuleTree as_given = Tree({F32("layers.10.w", {1}), F32("layers.2.w", {1})}, given);
  EXPECT_EQ(as_given.node(as_given.node(*as_given.Find("layers")).children[0]).name, "layers.10");
}

TEST(ModuleTree, RejectsNamesThatCannotComeFromAModule) {
  EXPECT_EQ(BuildError({F32("a.w", {1}), F32("a.w.x", {1})}),
            "`a.w` is both a tensor and a module: a tensor cannot have children");
  EXPECT_EQ(BuildError({F32("a.w.x", {1}), F32("a.w", {1})}),
            "`a.w` is both a tensor and a module: a tensor cannot have children");
  EXPECT_EQ(BuildError({F32("a.w", {1}), F32("a.w", {1})}), "duplicate tensor `a.w`");
  EXPECT_EQ(BuildError({F32("a..w", {1})}), "tensor name `a..w` has an empty segment");
  EXPECT_EQ(BuildError({F32("", {1})}), "tensor name `` has an empty segment");
  std::string deep = "a";
  for (int i = 0; i < 300; ++i) deep += ".a";
  EXPECT_NE(BuildError({F32(deep, {1})}).find("has more than 256 segments"), std::string::npos);
  EXPECT_EQ(BuildError({F32("a.w", {1 << 30, 1 << 30})}), "tensor `a.w` has more than 2^50 elements");
  EXPECT_EQ(BuildError({F32("a", {1 << 25, 1 << 24}), F32("b", {1 << 25, 1 << 24}), F32("c", {1})}),
            "the checkpoint describes more than 2^50 elements; sizes would lose precision");
}

TEST(ModuleTree, MarksBuffersByPattern) {
  ModuleTree tree = Tree(ModelForTest(), Live());
  const Node& batchnorm = tree.node(*tree.Find("batchnorm"));
  EXPECT_EQ(batchnorm.parameters.size(), 2u);
  EXPECT_EQ(batchnorm.buffers.size(), 3u);
  EXPECT_TRUE(tree.node(*tree.Find("batchnorm.num_batches_tracked")).is_buffer);
  // named_parameters() then named_buffers(), each module by module.
  std::vector<std::string> order;
  for (NodeId id : tree.TensorsInModelOrder()) order.push_back(tree.node(id).name);
  EXPECT_EQ(order,
            (std::vector<std::string>{"linear1.weight", "linear1.bias", "batchnorm.weight", "batchnorm.bias",
                                      "linear2.weight", "linear2.bias", "batchnorm.running_mean",
                                      "batchnorm.running_var", "batchnorm.num_batches_tracked"}));
}

TEST(ModuleTree, AddsTiedNamesMissingFromTheCheckpoint) {
  // A checkpoint stores a tied embedding once; `lm_head.weight` comes back with its shape.
  TreeOptions options;
  options.tied = {{"model.embed.weight", "lm_head.weight"}};
  ModuleTree tree = Tree({F32("model.embed.weight", {8, 4}), F32("model.norm.weight", {4})}, options);
  std::optional<NodeId> head = tree.Find("lm_head.weight");
  ASSERT_TRUE(head.has_value());
  EXPECT_TRUE(tree.node(*head).file.empty());
  EXPECT_EQ(tree.node(*head).shape, (std::vector<int64_t>{8, 4}));
  EXPECT_EQ(tree.tied_groups(),
            (std::vector<std::vector<std::string>>{{"lm_head.weight", "model.embed.weight"}}));
  // Counted once, under the first name in model order (`lm_head` sorts before `model`):
  // 128 + 16 bytes, nothing for the embedding.
  EXPECT_FALSE(tree.node(*head).is_alias);
  EXPECT_TRUE(tree.node(*tree.Find("model.embed.weight")).is_alias);
  ModuleSizes sizes = ComputeModuleSizes(tree, {});
  EXPECT_EQ(sizes.total(), 144);
  EXPECT_EQ(SizeOf(tree, sizes, "lm_head"), 128);
  EXPECT_EQ(SizeOf(tree, sizes, "model.embed"), 0);
  EXPECT_FALSE(sizes.Has(*tree.Find("model.embed")));
}

TEST(ModuleTree, CountsATiedTensorStoredTwiceUnderItsFirstName) {
  TreeOptions options;
  options.tied = {{"b.w", "a.w"}};
  ModuleTree tree = Tree({F32("a.w", {4}), F32("b.w", {4})}, options);
  EXPECT_FALSE(tree.node(*tree.Find("a.w")).is_alias);
  EXPECT_TRUE(tree.node(*tree.Find("b.w")).is_alias);
  EXPECT_EQ(ComputeModuleSizes(tree, {}).total(), 16);
}

TEST(ModuleTree, RejectsTiedGroupsThatCannotBeTrue) {
  TreeOptions options;
  options.tied = {{"a.w", "b.w"}};
  EXPECT_EQ(BuildError({F32("a.w", {4}), F32("b.w", {5})}, options),
            "tied tensors `a.w` and `b.w` differ in dtype or shape");
  EXPECT_EQ(BuildError({F32("c.w", {4})}, options),
            "no tensor of the tied group `a.w=b.w` is in the checkpoint");
  options.tied = {{"a.w", "b.w"}, {"b.w", "c.w"}};
  EXPECT_EQ(BuildError({F32("a.w", {4})}, options),
            "`b.w` appears in more than one tied group or twice in one");
  options.tied = {{"a"}};
  EXPECT_EQ(BuildError({F32("a.w", {4})}, options), "tied group `a` needs at least two names");
  options.tied = {{"a", "b.w"}};
  EXPECT_EQ(BuildError({F32("a.w", {4})}, options), "tied name `a` is a module, not a tensor");
}

TEST(ModuleTree, ListsModulesBottomUp) {
  ModuleTree tree = Tree({F32("a.b.w", {1}), F32("a.c.w", {1}), F32("d.w", {1})});
  std::vector<std::string> names;
  for (NodeId id : GetModuleChildrenBottomUp(tree)) names.push_back(tree.node(id).name);
  EXPECT_EQ(names, (std::vector<std::string>{"a.b", "a.c", "a", "d", ""}));
}

// --- Sizes and units ------------------------------------------------------------------------

TEST(Dtype, SizesElementsAsAccelerateDoes) {
  EXPECT_EQ(DtypeOfSafetensors("BOOL")->bytes, 0.125);
  EXPECT_TRUE(DtypeOfSafetensors("BOOL")->integral);
  EXPECT_EQ(DtypeOfSafetensors("F8_E5M2")->bytes, 1);
  EXPECT_EQ(DtypeOfSafetensors("C64")->bytes, 8);
  EXPECT_FALSE(DtypeOfSafetensors("C64")->integral);
  EXPECT_FALSE(DtypeOfSafetensors("Q4").has_value());
  EXPECT_EQ(ParseDtype("bf16")->name, "bfloat16");
  EXPECT_EQ(ParseDtype("torch.float16")->bytes, 2);
  EXPECT_EQ(ParseDtype("BF16")->name, "bfloat16");
  EXPECT_EQ(ParseDtype("fp8")->bytes, 1);
  EXPECT_EQ(ParseDtype("int4")->bytes, 0.5);
  EXPECT_EQ(ParseDtype("int2")->bytes, 0.25);
  llvm::Expected<Dtype> bad = ParseDtype("bf17");
  ASSERT_FALSE(static_cast<bool>(bad));
  EXPECT_NE(llvm::toString(bad.takeError()).find("unknown dtype `bf17`"), std::string::npos);
}

uint64_t Size(const char* text) {
  llvm::Expected<uint64_t> size = ParseSize(text);
  EXPECT_TRUE(static_cast<bool>(size)) << text << ": " << llvm::toString(size.takeError());
  return size ? *size : 0;
}

TEST(ParseSize, ReadsAccelerateUnits) {
  // Accelerate's test_convert_file_size, plus the bit suffix.
  EXPECT_EQ(Size("0MB"), 0u);
  EXPECT_EQ(Size("100MB"), 100'000'000u);
  EXPECT_EQ(Size("2GiB"), 2ull << 30);
  EXPECT_EQ(Size("512KiB"), 512u << 10);
  EXPECT_EQ(Size("1.5GB"), 1'500'000'000u);
  EXPECT_EQ(Size("100KB"), 100'000u);
  EXPECT_EQ(Size("500"), 500u);
  EXPECT_EQ(Size("8gib"), 8ull << 30);
  EXPECT_EQ(Size("5Gb"), 625'000'000u);  // gigabits
  EXPECT_EQ(Size("8gb"), 1'000'000'000u);
  for (const char* bad : {"5MBB", "5k0MB", "-1GB", "GB", "5TB", "nanGB", "infMB", "5 GB", "", "1e30GB"}) {
    EXPECT_FALSE(static_cast<bool>(ParseSize(bad))) << bad;
  }
}

TEST(ParseMaxMemory, OrdersGpusThenMpsCpuDisk) {
  llvm::Expected<MaxMemory> budget = ParseMaxMemory("disk=1GB,cpu=8GB,10=1KiB,02=2KB,mps=3");
  ASSERT_TRUE(static_cast<bool>(budget)) << llvm::toString(budget.takeError());
  std::vector<std::string> devices;
  for (const DeviceLimit& limit : *budget) devices.push_back(limit.device);
  EXPECT_EQ(devices, (std::vector<std::string>{"2", "10", "mps", "cpu", "disk"}));
  EXPECT_EQ((*budget)[0].bytes, 2000);
  EXPECT_EQ((*budget)[1].bytes, 1024);
  auto error = [](const char* text) {
    llvm::Expected<MaxMemory> b = ParseMaxMemory(text);
    return b ? std::string() : llvm::toString(b.takeError());
  };
  EXPECT_EQ(error("cuda:0=1GB"),
            "unknown device `cuda:0`; expected a GPU index (0, 1, ...), `mps`, `cpu` or `disk`");
  EXPECT_EQ(error("cpu=1GB,cpu=2GB"), "device `cpu` is given twice");
  EXPECT_EQ(error("cpu"), "`cpu` is not `DEVICE=SIZE` (for example `cpu=8GB,0=20GB`)");
  EXPECT_NE(error("0=lots").find("size `lots` is not valid"), std::string::npos);
}

TEST(ComputeModuleSizes, MatchesAccelerateOnModelForTest) {
  ModuleTree tree = Tree(ModelForTest(), Live());
  ModuleSizes sizes = ComputeModuleSizes(tree, {});
  std::map<std::string, double> expected = {{"", 236},
                                            {"linear1", 64},
                                            {"linear1.weight", 48},
                                            {"linear1.bias", 16},
                                            {"linear2", 100},
                                            {"linear2.weight", 80},
                                            {"linear2.bias", 20},
                                            {"batchnorm", 72},
                                            {"batchnorm.weight", 16},
                                            {"batchnorm.bias", 16},
                                            {"batchnorm.running_mean", 16},
                                            {"batchnorm.running_var", 16},
                                            {"batchnorm.num_batches_tracked", 8}};
  for (const auto& [name, bytes] : expected) EXPECT_EQ(SizeOf(tree, sizes, name), bytes) << name;
  EXPECT_EQ(sizes.order().size(), expected.size());
  // In fp16 every floating tensor halves; num_batches_tracked (int64) keeps its 8 bytes.
  SizeOptions half;
  half.dtype = *ParseDtype("fp16");
  ModuleSizes halved = ComputeModuleSizes(tree, half);
  EXPECT_EQ(halved.total(), 122);  // 236 / 2 + 4
  EXPECT_EQ(SizeOf(tree, halved, "batchnorm"), 40);
  EXPECT_EQ(SizeOf(tree, halved, "batchnorm.num_batches_tracked"), 8);
  // Buffers only: 16 + 16 + 8.
  EXPECT_EQ(ComputeModuleSizes(tree, {}, /*buffers_only=*/true).total(), 40);
}

TEST(ComputeModuleSizes, CastingOnlyShrinksAndSubByteSizesAreFractional) {
  ModuleTree tree = Tree({{"a.w", "F16", {6}, "m"},
                          {"a.mask", "BOOL", {12}, "m"},
                          {"a.step", "I64", {1}, "m"},
                          {"b.w", "F32", {3}, "m"}});
  // As stored: 12 + 12/8 + 8 + 12.
  EXPECT_EQ(ComputeModuleSizes(tree, {}).total(), 33.5);
  SizeOptions fp32;
  fp32.dtype = *ParseDtype("fp32");
  EXPECT_EQ(ComputeModuleSizes(tree, fp32).total(), 33.5);  // F16 never grows
  SizeOptions int4;
  int4.dtype = *ParseDtype("int4");
  ModuleSizes four = ComputeModuleSizes(tree, int4);
  EXPECT_EQ(SizeOf(tree, four, "a"), 3 + 1.5 + 8);  // bool and int64 keep their size
  EXPECT_EQ(SizeOf(tree, four, "b"), 1.5);
  SizeOptions special;
  special.special_dtypes.emplace("b.w", *ParseDtype("int2"));
  EXPECT_EQ(SizeOf(tree, ComputeModuleSizes(tree, special), "b.w"), 0.75);
}

TEST(GetMaxLayerSize, ReturnsEveryLayerOfTheLargestSize) {
  ModuleTree tree = Tree(Concat({ModelForTest("0."), ModelForTest("1."), ModelForTest("2.")}), Live());
  MaximumSizes plain = CalculateMaximumSizes(tree, {});
  EXPECT_EQ(plain.total_bytes, 708);
  EXPECT_EQ(plain.largest_layer.bytes, 100);
  EXPECT_EQ(plain.largest_layer.names, (std::vector<std::string>{"0.linear2", "1.linear2", "2.linear2"}));
  // A no-split pattern makes each ModelForTest one layer.
  MaximumSizes whole = CalculateMaximumSizes(tree, Patterns({"*"}));
  EXPECT_EQ(whole.largest_layer.bytes, 236);
  EXPECT_EQ(whole.largest_layer.names, (std::vector<std::string>{"0", "1", "2"}));
}

// --- The device map: Accelerate's test_infer_auto_device_map and friends ----------------------

TEST(InferAutoDeviceMap, KeepsRoomForTheLargestLayerOnTheMainDevice) {
  ModuleTree tree = Tree(ModelForTest(), Live());
  // Device 0 keeps 100 (linear2) free: 200 - 100 holds linear1 (64) but not batchnorm too (136).
  EXPECT_EQ(Infer(tree, Budget({{"0", 200}, {"1", 200}})),
            (Map{{"linear1", "0"}, {"batchnorm", "1"}, {"linear2", "1"}}));
  // Device 1 is no main device: batchnorm + linear2 = 172 fill it exactly.
  EXPECT_EQ(Infer(tree, Budget({{"0", 200}, {"1", 172}, {"2", 200}})),
            (Map{{"linear1", "0"}, {"batchnorm", "1"}, {"linear2", "1"}}));
  DeviceMap map = InferAutoDeviceMap(tree, Budget({{"0", 200}, {"1", 200}}), {});
  // Device 0 counts the 100 it reserved once the walk moved on.
  ASSERT_EQ(map.used.size(), 2u);
  EXPECT_EQ(map.used[0].bytes, 164);
  EXPECT_EQ(map.used[1].bytes, 172);
}

TEST(InferAutoDeviceMap, TiedWeightsLetTheWholeModelFit) {
  // linear1.weight = linear2.weight (5x4): linear1 80 + 16, linear2 only its bias (20).
  std::vector<TensorEntry> tensors = ModelForTest();
  tensors[0].shape = {5, 4};
  tensors.erase(tensors.begin() + 7);  // the checkpoint stores the shared weight once
  ModuleTree tree = Tree(tensors, Live({{"linear1.weight", "linear2.weight"}}));
  EXPECT_EQ(ComputeModuleSizes(tree, {}).total(), 188);
  // linear1 with its tie: 96 + 20 <= 200 - 72 (batchnorm, the largest layer left).
  EXPECT_EQ(Infer(tree, Budget({{"0", 200}, {"1", 200}})), (Map{{"", "0"}}));
}

TEST(InferAutoDeviceMap, SplitsAtTheLayerLevel) {
  ModuleTree tree = Tree(Concat({ModelForTest("0."), ModelForTest("1."), ModelForTest("2.")}), Live());
  EXPECT_EQ(Infer(tree, Budget({{"0", 500}, {"1", 500}})),
            (Map{{"0", "0"}, {"1.linear1", "0"}, {"1.batchnorm", "0"}, {"1.linear2", "1"}, {"2", "1"}}));
  DeviceMapOptions whole;
  whole.no_split = Patterns({"*"});  // no_split_module_classes=["ModelForTest"]
  EXPECT_EQ(Infer(tree, Budget({{"0", 500}, {"1", 500}}), whole), (Map{{"0", "0"}, {"1", "1"}, {"2", "1"}}));
}

TEST(InferAutoDeviceMap, PlacesTiedParametersOnOneDevice) {
  std::vector<TensorEntry> tensors =
      Concat({ModelForTest("layer1."), ModelForTest("layer2."), ModelForTest("layer3.")});
  auto without = [&](std::initializer_list<const char*> names) {
    std::vector<TensorEntry> kept;
    for (const TensorEntry& t : tensors) {
      if (std::find(names.begin(), names.end(), t.name) == names.end()) kept.push_back(t);
    }
    return kept;
  };
  // layer3.linear2.weight = layer1.linear2.weight: layer1 takes layer3.linear2 with it.
  ModuleTree one =
      Tree(without({"layer3.linear2.weight"}), Live({{"layer1.linear2.weight", "layer3.linear2.weight"}}));
  EXPECT_EQ(Infer(one, Budget({{"0", 400}, {"1", 500}})), (Map{{"layer1", "0"},
                                                               {"layer3.linear2", "0"},
                                                               {"layer2", "1"},
                                                               {"layer3.linear1", "1"},
                                                               {"layer3.batchnorm", "1"}}));
  // Three weights tied together.
  ModuleTree three =
      Tree(without({"layer2.linear2.weight", "layer3.linear2.weight"}),
           Live({{"layer1.linear2.weight", "layer2.linear2.weight", "layer3.linear2.weight"}}));
  EXPECT_EQ(Infer(three, Budget({{"0", 400}, {"1", 500}})), (Map{{"layer1", "0"},
                                                                 {"layer2.linear2", "0"},
                                                                 {"layer3.linear2", "0"},
                                                                 {"layer2.linear1", "1"},
                                                                 {"layer2.batchnorm", "1"},
                                                                 {"layer3.linear1", "1"},
                                                                 {"layer3.batchnorm", "1"}}));
  // Two groups.
  ModuleTree two = Tree(without({"layer2.linear2.weight", "layer3.linear2.weight", "layer2.linear1.weight"}),
                        Live({{"layer1.linear2.weight", "layer2.linear2.weight", "layer3.linear2.weight"},
                              {"layer1.linear1.weight", "layer2.linear1.weight"}}));
  EXPECT_EQ(Infer(two, Budget({{"0", 400}, {"1", 500}})), (Map{{"layer1", "0"},
                                                               {"layer2.linear1", "0"},
                                                               {"layer2.linear2", "0"},
                                                               {"layer3.linear2", "0"},
                                                               {"layer2.batchnorm", "1"},
                                                               {"layer3.linear1", "1"},
                                                               {"layer3.batchnorm", "1"}}));
}

TEST(InferAutoDeviceMap, TiesInsideOneContainer) {
  // Linear(4,4), Linear(6,6), Linear(4,4), Linear(6,6) with linear3's weight and bias those of linear1.
  ModuleTree tree =
      Tree({F32("linear1.weight", {4, 4}), F32("linear1.bias", {4}), F32("linear2.weight", {6, 6}),
            F32("linear2.bias", {6}), F32("linear4.weight", {6, 6}), F32("linear4.bias", {6})},
           Live({{"linear1.weight", "linear3.weight"}, {"linear1.bias", "linear3.bias"}}));
  EXPECT_EQ(Infer(tree, Budget({{"0", 250}, {"1", 400}})),
            (Map{{"linear1", "0"}, {"linear2", "1"}, {"linear3", "0"}, {"linear4", "1"}}));
}

// ModelForTest plus a buffer in each module: linear1 64 + 80, batchnorm 72 + 120, linear2 100 + 120.
std::vector<TensorEntry> ModelWithBuffers() {
  std::vector<TensorEntry> tensors = ModelForTest();
  tensors.push_back(F32("linear1.test_buffer1", {10, 2}));
  tensors.push_back(F32("batchnorm.test_buffer2", {10, 3}));
  tensors.push_back(F32("linear2.test_buffer3", {10, 3}));
  return tensors;
}

TEST(InferAutoDeviceMap, WarnsWhenOffloadedBuffersFitNoGpu) {
  ModuleTree tree = Tree(ModelWithBuffers(), Live());
  MaxMemory budget = Budget({{"0", 400}, {"cpu", 1e9}});
  DeviceMap map = InferAutoDeviceMap(tree, budget, {});
  EXPECT_EQ(Map(map.entries.begin(), map.entries.end()),
            (Map{{"linear1", "0"}, {"batchnorm", "cpu"}, {"linear2", "cpu"}}));
  // Buffers on cpu: batchnorm 40 + 120, linear2 120 = 280; GPU 0 has 400 - (144 + 220 reserved).
  EXPECT_EQ(map.offloaded_buffer_bytes, 280);
  ASSERT_EQ(map.warnings.size(), 1u);
  EXPECT_NE(map.warnings[0].find("280 bytes of buffers"), std::string::npos);
  DeviceMapOptions offload;
  offload.offload_buffers = true;
  DeviceMap offloaded = InferAutoDeviceMap(tree, budget, offload);
  EXPECT_TRUE(offloaded.warnings.empty());
  EXPECT_EQ(offloaded.entries, map.entries);
}

TEST(InferAutoDeviceMap, BufferWarningLooksAtEveryGpu) {
  std::vector<TensorEntry> tensors = ModelWithBuffers();
  tensors.push_back(F32("linear3.weight", {5, 4}));
  tensors.push_back(F32("linear3.bias", {5}));
  tensors.push_back(F32("linear3.test_buffer4", {10, 2}));
  ModuleTree tree = Tree(tensors, Live());
  Map expected{{"linear1", "0"}, {"batchnorm", "1"}, {"linear2", "cpu"}, {"linear3", "cpu"}};
  // 200 bytes of buffers on cpu fit GPU 1: 400 >= 200 + 192.
  DeviceMap roomy = InferAutoDeviceMap(tree, Budget({{"0", 400}, {"1", 400}, {"cpu", 1e9}}), {});
  EXPECT_EQ(Map(roomy.entries.begin(), roomy.entries.end()), expected);
  EXPECT_TRUE(roomy.warnings.empty());
  DeviceMap tight = InferAutoDeviceMap(tree, Budget({{"0", 400}, {"1", 200}, {"cpu", 1e9}}), {});
  EXPECT_EQ(Map(tight.entries.begin(), tight.entries.end()), expected);
  EXPECT_EQ(tight.warnings.size(), 1u);
}

// Sequential(module=Sequential(linear1=Linear(10,4), linear2=Linear(4,4), linear3=Linear(4,8))):
// 176, 80 and 160 bytes.
ModuleTree FallbackModel() {
  return Tree({F32("module.linear1.weight", {4, 10}), F32("module.linear1.bias", {4}),
               F32("module.linear2.weight", {4, 4}), F32("module.linear2.bias", {4}),
               F32("module.linear3.weight", {8, 4}), F32("module.linear3.bias", {8})},
              Live());
}

TEST(InferAutoDeviceMap, FallbackAllocationFillsADeviceThatFitsNothingInOrder) {
  ModuleTree tree = FallbackModel();
  // Without it, linear1 (176) does not fit 256 - 160 and device 0 stays empty: all to disk.
  DeviceMap plain = InferAutoDeviceMap(tree, Budget({{"0", 256}}), {});
  EXPECT_EQ(plain.entries, (DeviceMapEntries{{"", "disk"}}));
  ASSERT_EQ(plain.minimum_needed.size(), 1u);
  EXPECT_EQ(plain.minimum_needed[0].device, "0");
  EXPECT_EQ(plain.minimum_needed[0].bytes, 336);  // 176 + the 160 it had to keep free
  // With it, linear2 (80 <= 256 - 176) moves ahead of linear1 onto device 0.
  DeviceMapOptions fallback;
  fallback.fallback_allocation = true;
  EXPECT_EQ(Infer(tree, Budget({{"0", 256}}), fallback),
            (Map{{"module.linear1", "disk"}, {"module.linear2", "0"}, {"module.linear3", "disk"}}));
}

TEST(InferAutoDeviceMap, FallbackAllocationKeepsTiesAndWarnsAboutBuffers) {
  // linear2.weight = linear1.weight (Linear(10, 10) twice): 440 + 40 with ties fits 600 - 40.
  DeviceMapOptions fallback;
  fallback.fallback_allocation = true;
  ModuleTree tied =
      Tree({F32("linear1.weight", {10, 10}), F32("linear1.bias", {10}), F32("linear2.bias", {10})},
           Live({{"linear1.weight", "linear2.weight"}}));
  EXPECT_EQ(Infer(tied, Budget({{"0", 600}}), fallback), (Map{{"", "0"}}));
  // Linear(10,10) + buffer1, BatchNorm1d(10) + buffer2, Linear(10,10) + buffer3: 460, 188, 460.
  ModuleTree buffers = Tree({F32("linear1.weight", {10, 10}),
                             F32("linear1.bias", {10}),
                             F32("batchnorm.weight", {10}),
                             F32("batchnorm.bias", {10}),
                             F32("batchnorm.running_mean", {10}),
                             F32("batchnorm.running_var", {10}),
                             {"batchnorm.num_batches_tracked", "I64", {}, "m"},
                             F32("linear2.weight", {10, 10}),
                             F32("linear2.bias", {10}),
                             F32("linear1.test_buffer1", {5}),
                             F32("batchnorm.test_buffer2", {5}),
                             F32("linear2.test_buffer3", {5})},
                            Live());
  DeviceMap map = InferAutoDeviceMap(buffers, Budget({{"0", 678}}), fallback);
  EXPECT_EQ(Map(map.entries.begin(), map.entries.end()),
            (Map{{"batchnorm", "0"}, {"linear1", "disk"}, {"linear2", "disk"}}));
  // 40 bytes of buffers on disk; GPU 0 has 678 - (188 + 460) left.
  EXPECT_EQ(map.offloaded_buffer_bytes, 40);
  EXPECT_EQ(map.warnings.size(), 1u);
}

TEST(InferAutoDeviceMap, OffloadsToDiskWhenNothingFits) {
  ModuleTree tree = Tree(ModelForTest(), Live());
  DeviceMap map = InferAutoDeviceMap(tree, Budget({{"0", 10}, {"cpu", 50}}), {});
  EXPECT_EQ(map.entries, (DeviceMapEntries{{"", "disk"}}));
  // Both main devices reserved the largest layer (100) and received nothing.
  ASSERT_EQ(map.minimum_needed.size(), 2u);
  EXPECT_EQ(map.minimum_needed[0].bytes, 164);
  EXPECT_EQ(map.minimum_needed[1].device, "cpu");
  ASSERT_EQ(map.used.size(), 3u);
  EXPECT_EQ(map.used[2].device, "disk");
  EXPECT_EQ(map.used[2].bytes, 236);
}

TEST(InferAutoDeviceMap, CleanResultFalseKeepsEveryEntry) {
  ModuleTree tree = Tree(ModelForTest(), Live());
  DeviceMapOptions raw;
  raw.clean_result = false;
  DeviceMap map = InferAutoDeviceMap(tree, Budget({{"0", 1000}}), raw);
  EXPECT_EQ(map.entries, (DeviceMapEntries{{"linear1", "0"}, {"batchnorm", "0"}, {"linear2", "0"}}));
}

TEST(InferAutoDeviceMap, DtypeOverrideChangesTheFit) {
  ModuleTree tree = Tree(ModelForTest(), Live());
  // In fp16: linear1 32, batchnorm 40, linear2 50; 32 + 40 <= 200 - 50 on device 0, then 122 <= 200.
  DeviceMapOptions half;
  half.sizes.dtype = *ParseDtype("fp16");
  EXPECT_EQ(Infer(tree, Budget({{"0", 200}, {"1", 200}}), half), (Map{{"", "0"}}));
}

TEST(InferAutoDeviceMap, ASplitModuleLosesItsOwnBuffersAsInAccelerate) {
  // head 20; m = l1 40 + l2 80 + l3 40 + its own buffer 20. m is split into l1, l2, l3 only.
  TreeOptions options;
  options.buffers = Patterns({"m.buf"});
  ModuleTree tree = Tree({F32("head.weight", {5}), F32("m.l1.weight", {10}), F32("m.l2.weight", {20}),
                          F32("m.l3.weight", {10}), F32("m.buf", {5})},
                         options);
  DeviceMap map = InferAutoDeviceMap(tree, Budget({{"0", 150}, {"1", 1000}}), {});
  // head 20 <= 150 - 80; l1: 60 <= 150 - 80; l2: 140 > 150 - 40, so device 1.
  EXPECT_EQ(map.entries, (DeviceMapEntries{{"head", "0"}, {"m.l1", "0"}, {"m.l2", "1"}, {"m.l3", "1"}}));
  EXPECT_EQ(UncoveredTensors(tree, map.entries), std::vector<std::string>{"m.buf"});
}

TEST(CleanDeviceMap, CollapsesPrefixesServedByOneDevice) {
  DeviceMapEntries entries = {{"a.x", "0"},   {"a.y", "0"},   {"b.x", "1"},   {"b.y", "cpu"},
                              {"c.d.e", "1"}, {"c.d.f", "1"}, {"c.g", "disk"}};
  CleanDeviceMap(entries);
  EXPECT_EQ(entries,
            (DeviceMapEntries{{"a", "0"}, {"b.x", "1"}, {"b.y", "cpu"}, {"c.d", "1"}, {"c.g", "disk"}}));
  DeviceMapEntries one = {{"a", "0"}, {"b.c", "0"}};
  CleanDeviceMap(one);
  EXPECT_EQ(one, (DeviceMapEntries{{"", "0"}}));
  // `layers.1` is no prefix of `layers.10`.
  DeviceMapEntries numbered = {{"layers.1.a", "0"}, {"layers.10", "1"}, {"layers.1.b", "0"}};
  CleanDeviceMap(numbered);
  EXPECT_EQ(numbered, (DeviceMapEntries{{"layers.1", "0"}, {"layers.10", "1"}}));
}

// --- Balanced memory (Accelerate's test_get_balanced_memory) ----------------------------------

MaxMemory Balanced(const ModuleTree& tree, MaxMemory budget, std::vector<NamePattern> no_split = {},
                   bool low_zero = false) {
  llvm::Expected<MaxMemory> balanced = GetBalancedMemory(tree, std::move(budget), no_split, {}, low_zero);
  EXPECT_TRUE(static_cast<bool>(balanced)) << llvm::toString(balanced.takeError());
  return balanced ? *balanced : MaxMemory{};
}

std::vector<double> Bytes(const MaxMemory& budget) {
  std::vector<double> bytes;
  for (const DeviceLimit& limit : budget) bytes.push_back(limit.bytes);
  return bytes;
}

TEST(GetBalancedMemory, MatchesAccelerateOnModelForTest) {
  ModuleTree tree = Tree(ModelForTest(), Live());
  // per GPU 236 / 2 = 118, plus 1.25 x the mean final module (236 / 3 = 78) = 97: 215.
  EXPECT_EQ(Bytes(Balanced(tree, Budget({{"0", 200}, {"1", 200}}))), (std::vector<double>{200, 200}));
  EXPECT_EQ(Bytes(Balanced(tree, Budget({{"0", 200}, {"2", 200}}))), (std::vector<double>{200, 200}));
  EXPECT_EQ(Bytes(Balanced(tree, Budget({{"0", 300}, {"1", 300}}))), (std::vector<double>{215, 300}));
  EXPECT_EQ(Bytes(Balanced(tree, Budget({{"0", 300}, {"1", 500}}))), (std::vector<double>{215, 500}));
  EXPECT_EQ(Bytes(Balanced(tree, Budget({{"0", 300}, {"cpu", 1000}}))), (std::vector<double>{300, 1000}));
  EXPECT_EQ(Bytes(Balanced(tree, Budget({{"0", 0}, {"1", 300}, {"2", 300}}))),
            (std::vector<double>{0, 215, 300}));
  EXPECT_EQ(Bytes(Balanced(tree, Budget({{"0", 0}, {"cpu", 100}}))), (std::vector<double>{0, 100}));
}

TEST(GetBalancedMemory, SpreadsOverFourGpusWithNoSplitHeadroom) {
  ModuleTree tree = Tree(Concat({ModelForTest("0."), ModelForTest("1."), ModelForTest("2.")}), Live());
  // 708 / 4 = 177, plus 1.25 x max(first no-split module 236, mean final module 78) = 295: 472.
  MaxMemory budget =
      Balanced(tree, Budget({{"0", 1000}, {"1", 1000}, {"2", 1000}, {"3", 1000}}), Patterns({"*"}));
  EXPECT_EQ(Bytes(budget), (std::vector<double>{472, 472, 472, 1000}));
  // Three GPUs: 708 / 3 = 236 + 295 = 531.
  EXPECT_EQ(Bytes(Balanced(tree, Budget({{"0", 1000}, {"1", 1000}, {"2", 1000}}), Patterns({"*"}))),
            (std::vector<double>{531, 531, 1000}));
  // The balanced budget then places one block per device: 236 <= 472 - 236 on GPU 0, and so on.
  DeviceMapOptions whole;
  whole.no_split = Patterns({"*"});
  EXPECT_EQ(Infer(tree, budget, whole), (Map{{"0", "0"}, {"1", "1"}, {"2", "1"}}));
}

TEST(GetBalancedMemory, LowZeroLeavesGpuZeroWhatTheOthersCannotHold) {
  ModuleTree tree = Tree(ModelForTest(), Live());
  // per GPU 236 / (3 - 1) = 118 + 97 = 215; GPU 0 gets max(0, 236 - (215 + 300)) = 0.
  EXPECT_EQ(Bytes(Balanced(tree, Budget({{"0", 300}, {"1", 300}, {"2", 300}}), {}, true)),
            (std::vector<double>{0, 215, 300}));
  // GPU 0 gets 236 - (100 + 100) = 36.
  EXPECT_EQ(Bytes(Balanced(tree, Budget({{"0", 300}, {"1", 100}, {"2", 100}}), {}, true)),
            (std::vector<double>{36, 100, 100}));
  llvm::Expected<MaxMemory> gap = GetBalancedMemory(tree, Budget({{"0", 300}, {"2", 300}}), {}, {}, true);
  ASSERT_FALSE(static_cast<bool>(gap));
  EXPECT_EQ(llvm::toString(gap.takeError()), "low_zero needs GPUs numbered 0 to 1; GPU 1 has no budget");
}

// --- Headers on disk ------------------------------------------------------------------------

// Writes ModelForTest's tensors as a checkpoint with the checkpoint writer, one shard per
// top-level module, and an index naming them.
fs::path WriteShardedModel(const std::string& name) {
  fs::path dir = ScratchDir() / name;
  fs::create_directories(dir);
  std::vector<TensorEntry> tensors = ModelForTest();
  std::vector<std::string> storage;
  storage.reserve(tensors.size());
  std::map<std::string, std::vector<checkpoint::TensorRef>> shards;
  llvm::json::Object weight_map;
  for (const TensorEntry& t : tensors) {
    size_t elements = 1;
    for (int64_t d : t.shape) elements *= static_cast<size_t>(d);
    storage.emplace_back(elements * checkpoint::DtypeSize(t.dtype), '\0');
    std::string module = t.name.substr(0, t.name.find('.'));
    std::string shard = module == "linear1"     ? "model-00001-of-00003.safetensors"
                        : module == "batchnorm" ? "model-00002-of-00003.safetensors"
                                                : "model-00003-of-00003.safetensors";
    shards[shard].push_back({t.name, t.dtype, t.shape, storage.back()});
    weight_map[t.name] = shard;
  }
  for (const auto& [shard, refs] : shards) {
    llvm::Error error = checkpoint::WriteSafetensors((dir / shard).string(), refs);
    EXPECT_FALSE(static_cast<bool>(error)) << llvm::toString(std::move(error));
  }
  llvm::json::Object index{{"metadata", llvm::json::Object{{"total_size", 236}}},
                           {"weight_map", std::move(weight_map)}};
  std::ofstream((dir / "model.safetensors.index.json").string())
      << llvm::formatv("{0:2}", llvm::json::Value(std::move(index))).str() << "\n";
  return dir;
}

void WriteBytes(const fs::path& path, const std::string& bytes) {
  std::ofstream out(path.string(), std::ios::binary);
  out << bytes;
}

std::string Image(const std::string& header, const std::string& data) {
  std::string out(8, '\0');
  uint64_t n = header.size();
  std::memcpy(out.data(), &n, 8);
  return out + header + data;
}

std::string HeaderError(const fs::path& path) {
  llvm::Expected<CheckpointHeaders> headers = ReadCheckpointHeaders(path.string());
  return headers ? "" : llvm::toString(headers.takeError());
}

TEST(CheckpointHeaders, ReadsAShardedCheckpointByIndexOrDirectory) {
  fs::path dir = WriteShardedModel("sharded");
  for (fs::path path : {dir / "model.safetensors.index.json", dir}) {
    llvm::Expected<CheckpointHeaders> headers = ReadCheckpointHeaders(path.string());
    ASSERT_TRUE(static_cast<bool>(headers)) << llvm::toString(headers.takeError());
    EXPECT_EQ(headers->files.size(), 3u);
    EXPECT_EQ(headers->tensors.size(), 9u);
    EXPECT_EQ(headers->data_bytes, 236u);
    EXPECT_TRUE(headers->warnings.empty());
  }
  // Sizes from the headers; siblings in name order: batchnorm, linear1, linear2.
  llvm::Expected<CheckpointHeaders> headers = ReadCheckpointHeaders(dir.string());
  ASSERT_TRUE(static_cast<bool>(headers));
  TreeOptions options;
  options.buffers = Patterns({"**.running_*", "**.num_batches_tracked"});
  ModuleTree tree = Tree(headers->tensors, options);
  EXPECT_EQ(ComputeModuleSizes(tree, {}).total(), 236);
  // batchnorm 72 <= 200 - 100; linear1 would make 136: device 1 takes linear1 and linear2 (164).
  EXPECT_EQ(Infer(tree, Budget({{"0", 200}, {"1", 200}, {"cpu", 1000}})),
            (Map{{"batchnorm", "0"}, {"linear1", "1"}, {"linear2", "1"}}));
}

TEST(CheckpointHeaders, ChecksTheIndexAgainstTheShards) {
  fs::path dir = WriteShardedModel("bad_index");
  fs::path index = dir / "model.safetensors.index.json";
  WriteBytes(index, R"({"weight_map":{"linear1.weight":"model-00002-of-00003.safetensors"}})");
  std::string error = HeaderError(index);
  EXPECT_NE(
      error.find("`weight_map.linear1.weight` names shard `model-00002-of-00003.safetensors`, whose header "
                 "has no such tensor"),
      std::string::npos)
      << error;
  // The legacy layout (the whole object is the map); shards' other tensors are counted.
  WriteBytes(index, R"({"linear1.weight":"model-00001-of-00003.safetensors"})");
  llvm::Expected<CheckpointHeaders> legacy = ReadCheckpointHeaders(index.string());
  ASSERT_TRUE(static_cast<bool>(legacy)) << llvm::toString(legacy.takeError());
  EXPECT_EQ(legacy->tensors.size(), 2u);
  ASSERT_EQ(legacy->warnings.size(), 1u);
  EXPECT_NE(legacy->warnings[0].find("1 tensor in the shards is not listed"), std::string::npos);
  // The same tensor in two shards.
  fs::copy_file(dir / "model-00001-of-00003.safetensors", dir / "copy.safetensors");
  WriteBytes(index, R"({"weight_map":{"linear1.weight":"model-00001-of-00003.safetensors",)"
                    R"("linear1.bias":"copy.safetensors"}})");
  EXPECT_NE(HeaderError(index).find("is in two shards"), std::string::npos);
  WriteBytes(index, R"({"weight_map":{"a":"pytorch_model-00001-of-00002.bin"}})");
  EXPECT_NE(HeaderError(index).find("is not a safetensors file"), std::string::npos);
  WriteBytes(index, "{not json");
  EXPECT_NE(HeaderError(index).find("invalid JSON"), std::string::npos);
  WriteBytes(index, R"({"weight_map":{"a":3}})");
  EXPECT_NE(HeaderError(index).find("`weight_map.a` is not a shard file name"), std::string::npos);
}

TEST(CheckpointHeaders, FindsTheCheckpointInADirectory) {
  fs::path empty = ScratchDir() / "empty";
  fs::create_directories(empty);
  EXPECT_NE(HeaderError(empty).find("no `model.safetensors` and no `*.index.json`"), std::string::npos);
  WriteBytes(empty / "pytorch_model.bin", "pickle");
  EXPECT_NE(HeaderError(empty).find("torch pickle"), std::string::npos);
  WriteBytes(empty / "a.index.json", "{}");
  WriteBytes(empty / "b.index.json", "{}");
  EXPECT_NE(HeaderError(empty).find("2 index files (a.index.json, b.index.json)"), std::string::npos);
  // model.safetensors wins over index files.
  WriteBytes(empty / "model.safetensors", Image("{}", ""));
  EXPECT_EQ(HeaderError(empty), "");
  EXPECT_NE(HeaderError(ScratchDir() / "missing").find("no such file or directory"), std::string::npos);
}

TEST(CheckpointHeaders, EnforcesTheSafetensorsRulesWithoutReadingData) {
  fs::path path = ScratchDir() / "rules.safetensors";
  auto error_for = [&](const std::string& bytes) {
    WriteBytes(path, bytes);
    llvm::Expected<std::vector<TensorEntry>> tensors = ReadSafetensorsHeader(path.string());
    return tensors ? std::string() : llvm::toString(tensors.takeError());
  };
  EXPECT_NE(error_for("abc").find("ST-001"), std::string::npos);
  std::string huge(8, '\0');
  huge[7] = 0x10;
  EXPECT_NE(error_for(huge).find("ST-002"), std::string::npos);
  EXPECT_NE(error_for(Image("{}", "").substr(0, 9)).find("ST-003"), std::string::npos);
  EXPECT_NE(error_for(Image("[1]", "")).find("ST-005"), std::string::npos);
  EXPECT_NE(error_for(Image(R"({"a":{"dtype":"Q8","shape":[1],"data_offsets":[0,1]}})", "x")).find("ST-005"),
            std::string::npos);
  EXPECT_NE(error_for(Image(R"({"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},)"
                            R"("b":{"dtype":"U8","shape":[1],"data_offsets":[2,3]}})",
                            "xyz"))
                .find("ST-006"),
            std::string::npos);
  EXPECT_NE(error_for(Image(R"({"a":{"dtype":"F4","shape":[3],"data_offsets":[0,1]}})", "x")).find("ST-008"),
            std::string::npos);
  EXPECT_NE(
      error_for(Image(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,4]}})", "abcd")).find("ST-009"),
      std::string::npos);
  EXPECT_NE(error_for(Image(R"({"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}})", "xy")).find("ST-010"),
            std::string::npos);
  EXPECT_EQ(error_for(Image(R"(  {"s":{"dtype":"F32","shape":[],"data_offsets":[0,4]}})", "abcd")), "");
}

TEST(CheckpointHeaders, ReadsAGigabyteTensorFromASparseFile) {
  // 1 GiB of F32 described by a header; the data section is a hole in a sparse file.
  fs::path path = ScratchDir() / "sparse.safetensors";
  std::string header = R"({"w":{"dtype":"F32","shape":[268435456],"data_offsets":[0,1073741824]}})";
  header.append((8 - header.size() % 8) % 8, ' ');
  WriteBytes(path, Image(header, ""));
  fs::resize_file(path, 8 + header.size() + (uint64_t{1} << 30));
  llvm::Expected<std::vector<TensorEntry>> tensors = ReadSafetensorsHeader(path.string());
  ASSERT_TRUE(static_cast<bool>(tensors)) << llvm::toString(tensors.takeError());
  ASSERT_EQ(tensors->size(), 1u);
  EXPECT_EQ((*tensors)[0].shape, std::vector<int64_t>{268435456});
  fs::remove(path);
}

// --- The command ----------------------------------------------------------------------------

EstimateEnvironment FakeRam(std::optional<uint64_t> bytes) {
  return EstimateEnvironment{[bytes] { return bytes; }};
}

TEST(EstimateMemoryCommand, PrintsSizesTheLargestLayerAndTheDeviceMap) {
  fs::path dir = WriteShardedModel("command");
  CommandResult result = RunEstimateMemoryCommand({dir.string(), "--max-memory", "0=200,1=200,cpu=1000",
                                                   "--buffers", "**.running_*,**.num_batches_tracked"},
                                                  FakeRam(std::nullopt));
  EXPECT_EQ(result.exit_code, 0) << result.err;
  EXPECT_EQ(result.err, "");
  EXPECT_NE(result.out.find("largest layer: linear2\n"), std::string::npos) << result.out;
  // One row per top-level module, then one per device-map entry.
  auto line = [&](const std::string& start, size_t from = 0) {
    size_t at = result.out.find("\n" + start, from);
    return at == std::string::npos ? std::string()
                                   : result.out.substr(at + 1, result.out.find('\n', at + 1) - at - 1);
  };
  EXPECT_EQ(line("linear1 "), "linear1            64 B                64        2");
  size_t map = result.out.find("device map (max memory 0=200 B, 1=200 B, cpu=1000 B):");
  ASSERT_NE(map, std::string::npos) << result.out;
  EXPECT_EQ(line("batchnorm ", map), "batchnorm       0          72 B");
  EXPECT_EQ(line("linear2 ", map), "linear2         1         100 B");
}

TEST(EstimateMemoryCommand, WritesJsonAndFillsInTheCpuBudget) {
  fs::path dir = WriteShardedModel("json");
  CommandResult result =
      RunEstimateMemoryCommand({(dir / "model.safetensors.index.json").string(), "--max-memory=0=150",
                                "--dtype", "bf16", "--format", "json"},
                               FakeRam(1000));
  ASSERT_EQ(result.exit_code, 0) << result.err;
  llvm::Expected<llvm::json::Value> json = llvm::json::parse(result.out);
  ASSERT_TRUE(static_cast<bool>(json)) << llvm::toString(json.takeError());
  const llvm::json::Object& root = *json->getAsObject();
  EXPECT_EQ(root.getString("dtype").getValueOr(""), "bfloat16");
  // bf16: 118 + 4 (num_batches_tracked keeps 8 bytes).
  EXPECT_EQ(root.getInteger("total_size").getValueOr(-1), 122);
  EXPECT_EQ(root.getInteger("stored_size").getValueOr(-1), 236);
  // cpu = 80% of the 1000 bytes the fake reports.
  EXPECT_EQ(root.getObject("max_memory")->getInteger("cpu").getValueOr(-1), 800);
  // bf16 sizes 40, 32, 50: batchnorm and linear1 fit 150 - 50, then linear2 fits 150.
  EXPECT_EQ(*root.getObject("device_map")->get(""), llvm::json::Value(0));
  EXPECT_EQ(root.getArray("notes")->size(), 1u);
}

TEST(EstimateMemoryCommand, RefusesBadFlagsAndBadFilesWithExitCode2) {
  fs::path dir = WriteShardedModel("errors");
  auto run = [](std::vector<std::string> args) {
    return RunEstimateMemoryCommand(args, FakeRam(std::nullopt));
  };
  struct Case {
    std::vector<std::string> args;
    std::string message;
  };
  std::vector<Case> cases = {
      {{}, "accelrun: error: missing the checkpoint to estimate"},
      {{dir.string(), "--frobnicate"}, "accelrun: error: unknown option `--frobnicate`"},
      {{dir.string(), "--dtype", "bf17"}, "accelrun: error: `--dtype`: unknown dtype `bf17`"},
      {{dir.string(), "--max-memory", "gpu=1GB"}, "accelrun: error: `--max-memory`: unknown device `gpu`"},
      {{dir.string(), "--max-memory"}, "accelrun: error: `--max-memory` needs a value"},
      {{dir.string(), "--format", "yaml"}, "accelrun: error: `--format` is `text` or `json`, not `yaml`"},
      {{dir.string(), "--tied", "a.weight"}, "accelrun: error: `--tied a.weight`: expected tensor names"},
      {{dir.string(), "--no-split", "a..b"},
       "accelrun: error: `--no-split a..b`: name pattern `a..b` has an empty"},
      {{dir.string(), "--low-zero"}, "accelrun: error: `--low-zero` needs `--balanced`"},
      {{dir.string(), "--balanced=yes"}, "accelrun: error: `--balanced` takes no value"},
      {{dir.string(), dir.string()}, "accelrun: error: unexpected argument"},
      {{dir.string(), "--max-memory", "0=1GB"},
       "accelrun: error: `--max-memory` has no `cpu` budget and the available RAM is unknown"},
      {{dir.string(), "--tied", "x.w=y.w"}, "accelrun: error: no tensor of the tied group `x.w=y.w`"},
      {{(dir / "nope.safetensors").string()}, "nope.safetensors: no such file or directory"},
  };
  for (const Case& c : cases) {
    CommandResult result = run(c.args);
    EXPECT_EQ(result.exit_code, 2) << c.message;
    EXPECT_NE(result.err.find(c.message), std::string::npos) << result.err;
    EXPECT_EQ(result.out, "");
  }
  WriteBytes(dir / "model-00002-of-00003.safetensors", "garbage!garbage!");
  CommandResult damaged = run({dir.string()});
  EXPECT_EQ(damaged.exit_code, 2);
  EXPECT_NE(damaged.err.find("model-00002-of-00003.safetensors: header too large"), std::string::npos)
      << damaged.err;
  CommandResult help = run({"--help"});
  EXPECT_EQ(help.exit_code, 0);
  EXPECT_NE(help.out.find("usage: accelrun estimate-memory"), std::string::npos);
}

}  // namespace
}  // namespace accel::rt::memory
