// runtime/memory on live torch::nn modules (live_module.h) against hand-computed expectations:
// the tree a module implies (ties, buffers, tensor-less modules), device maps on it, moving and
// casting tensors in place, retying, unwrapping wrappers, the disk-offload folder and
// load_checkpoint_in_model with a device map.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>

#include "llvm/Support/JSON.h"
#include "runtime/checkpoint/safetensors.h"
#include "runtime/checkpoint/shards.h"
#include "runtime/memory/checkpoint_headers.h"
#include "runtime/memory/estimate.h"
#include "runtime/memory/live_module.h"
#include "runtime/memory/modeling.h"
#include "tests/unit/scratch_dir.h"

namespace accel::rt::memory {
namespace {

namespace fs = std::filesystem;
using accel::testing::ScratchDir;

// A head that holds the embedding's weight itself: one TensorImpl registered under two names,
// which is how a C++ model ties weights.
struct TiedHeadImpl : torch::nn::Module {
  explicit TiedHeadImpl(const at::Tensor& shared) { weight = register_parameter("weight", shared); }
  at::Tensor weight;
};

// embed Embedding(10, 4); layers 2 × Linear(4, 4); norm BatchNorm1d(4); act ReLU; head tied to
// embed. fp32 sizes: embed 160; each layer 64 + 16 = 80; norm 16 + 16 parameters and 16 + 16 +
// 8 (int64 step) buffers = 72; act and head 0. Total 160 + 160 + 72 = 392.
struct DecoderImpl : torch::nn::Module {
  DecoderImpl() {
    embed = register_module("embed", torch::nn::Embedding(10, 4));
    layers =
        register_module("layers", torch::nn::ModuleList(torch::nn::Linear(4, 4), torch::nn::Linear(4, 4)));
    norm = register_module("norm", torch::nn::BatchNorm1d(4));
    act = register_module("act", torch::nn::ReLU());
    head = register_module("head", std::make_shared<TiedHeadImpl>(embed->weight));
  }
  torch::nn::Embedding embed{nullptr};
  torch::nn::ModuleList layers{nullptr};
  torch::nn::BatchNorm1d norm{nullptr};
  torch::nn::ReLU act{nullptr};
  std::shared_ptr<TiedHeadImpl> head;
};

// A parallel wrapper (DDP-like) or a compile shell: nothing but the one child.
struct WrapperImpl : torch::nn::Module {
  WrapperImpl(const char* link, std::shared_ptr<torch::nn::Module> inner) {
    register_module(link, std::move(inner));
  }
};

std::shared_ptr<torch::nn::Module> Wrap(const char* link, std::shared_ptr<torch::nn::Module> inner) {
  return std::make_shared<WrapperImpl>(link, std::move(inner));
}

template <typename T>
T Ok(llvm::Expected<T> value) {
  EXPECT_TRUE(static_cast<bool>(value)) << llvm::toString(value.takeError());
  return std::move(*value);
}

void ExpectOk(llvm::Error error) {
  EXPECT_FALSE(static_cast<bool>(error)) << llvm::toString(std::move(error));
}

std::string ErrorText(llvm::Error error) {
  EXPECT_TRUE(static_cast<bool>(error));
  return llvm::toString(std::move(error));
}

template <typename T>
std::string ErrorText(llvm::Expected<T> value) {
  EXPECT_FALSE(static_cast<bool>(value));
  return value ? "" : llvm::toString(value.takeError());
}

at::Tensor Get(const torch::nn::Module& model, const std::string& name) {
  // The dicts come back by value: hold them while `find`'s pointer is read.
  torch::OrderedDict<std::string, at::Tensor> parameters = model.named_parameters(true);
  if (const at::Tensor* t = parameters.find(name)) return *t;
  torch::OrderedDict<std::string, at::Tensor> buffers = model.named_buffers(true);
  if (const at::Tensor* t = buffers.find(name)) return *t;
  ADD_FAILURE() << "no tensor " << name;
  return {};
}

bool SameBits(const at::Tensor& a, const at::Tensor& b) {
  at::Tensor x = a.contiguous(), y = b.contiguous();
  return x.scalar_type() == y.scalar_type() && x.sizes() == y.sizes() &&
         std::memcmp(x.data_ptr(), y.data_ptr(), x.nbytes()) == 0;
}

// Writes `tensors` as one safetensors file (or shards when `max_shard` is set) with Accel's writer.
void Save(const std::string& path, const std::vector<std::pair<std::string, at::Tensor>>& tensors,
          uint64_t max_shard = 0) {
  std::vector<at::Tensor> keep;
  std::vector<checkpoint::TensorRef> refs;
  for (const auto& [name, tensor] : tensors) {
    at::Tensor t = tensor.detach().contiguous();
    keep.push_back(t);
    refs.push_back({name, Ok(SafetensorsDtype(t.scalar_type())), t.sizes().vec(),
                    std::string_view(static_cast<const char*>(t.data_ptr()), t.nbytes())});
  }
  if (max_shard != 0) {
    ExpectOk(checkpoint::SaveShardedSafetensors(path, refs, max_shard));
  } else {
    ExpectOk(checkpoint::WriteSafetensors(path, refs));
  }
}

// The decoder's state as a checkpoint stores it: the tied head dropped, values fixed.
std::vector<std::pair<std::string, at::Tensor>> StoredState(const DecoderImpl& model) {
  std::vector<std::pair<std::string, at::Tensor>> state;
  int64_t seed = 1;
  for (const auto& item : model.named_parameters(true)) {
    if (item.key() == "head.weight") continue;
    state.emplace_back(
        item.key(), at::arange(seed, seed + item.value().numel(), at::kFloat).reshape(item.value().sizes()));
    seed += 100;
  }
  for (const auto& item : model.named_buffers(true)) {
    at::Tensor value = item.value().scalar_type() == at::kLong
                           ? at::full({}, 7, at::kLong)
                           : at::full(item.value().sizes(), 0.5 + seed, at::kFloat);
    state.emplace_back(item.key(), value);
    seed += 100;
  }
  return state;
}

// ---------------------------------------------------------------------------------------------
// The tree of a live module.

TEST(LiveTree, FindsTiesByIdentityAndSharedViews) {
  auto model = std::make_shared<DecoderImpl>();
  EXPECT_EQ(FindTiedParameters(*model),
            (std::vector<std::vector<std::string>>{{"embed.weight", "head.weight"}}));

  // Two distinct tensors viewing one storage the same way are tied too; a different view of
  // the same storage is not.
  torch::nn::Sequential pair(torch::nn::Linear(4, 4), torch::nn::Linear(4, 4));
  {
    at::NoGradGuard no_grad;
    pair[1]->as<torch::nn::Linear>()->weight.set_(pair[0]->as<torch::nn::Linear>()->weight);
    pair[1]->as<torch::nn::Linear>()->bias.set_(pair[0]->as<torch::nn::Linear>()->weight.storage(), 4, {4},
                                                {1});
  }
  EXPECT_EQ(FindTiedParameters(*pair), (std::vector<std::vector<std::string>>{{"0.weight", "1.weight"}}));
}

TEST(LiveTree, SizesCountTiesOnceBuffersAndEmptyModules) {
  auto model = std::make_shared<DecoderImpl>();
  ModuleTree tree = Ok(BuildModuleTree(*model));

  // Registration order, tensor-less `act` included.
  std::vector<std::string> children;
  for (NodeId id : tree.node(tree.root()).children) children.push_back(tree.node(id).name);
  EXPECT_EQ(children, (std::vector<std::string>{"embed", "layers", "norm", "act", "head"}));
  const Node& norm = tree.node(*tree.Find("norm"));
  EXPECT_EQ(norm.parameters.size(), 2u);
  EXPECT_EQ(norm.buffers.size(), 3u);
  EXPECT_TRUE(tree.node(*tree.Find("norm.running_mean")).is_buffer);
  EXPECT_FALSE(tree.node(*tree.Find("embed.weight")).is_alias);
  EXPECT_TRUE(tree.node(*tree.Find("head.weight")).is_alias);

  ModuleSizes sizes = ComputeModuleSizes(tree, {});
  EXPECT_EQ(sizes.total(), 392);
  EXPECT_EQ(sizes.Get(*tree.Find("embed")), 160);
  EXPECT_EQ(sizes.Get(*tree.Find("layers")), 160);
  EXPECT_EQ(sizes.Get(*tree.Find("layers.1")), 80);
  EXPECT_EQ(sizes.Get(*tree.Find("norm")), 72);
  EXPECT_EQ(sizes.Get(*tree.Find("head")), 0);
  EXPECT_FALSE(sizes.Has(*tree.Find("act")));
  // Buffers only: 16 + 16 + 8.
  EXPECT_EQ(ComputeModuleSizes(tree, {}, /*buffers_only=*/true).total(), 40);
  // fp16: floats halve, the int64 step keeps 8: 392 - 384 / 2 = 200.
  SizeOptions half;
  half.dtype = Ok(ParseDtype("fp16"));
  EXPECT_EQ(ComputeModuleSizes(tree, half).total(), 200);

  MaximumSizes maximum = CalculateMaximumSizes(tree, {});
  EXPECT_EQ(maximum.total_bytes, 392);
  EXPECT_EQ(maximum.largest_layer.bytes, 160);
  EXPECT_EQ(maximum.largest_layer.names, std::vector<std::string>{"embed"});
}

TEST(LiveTree, DeviceMapKeepsTiesTogether) {
  auto model = std::make_shared<DecoderImpl>();
  ModuleTree tree = Ok(BuildModuleTree(*model));
  // cpu 300, the main device, keeps the largest remaining layer free:
  //   embed 160 (its tie `head` weighs 0 more) <= 300 - 80 (a layer): cpu, and `head` with it;
  //   layers 160 + 160 > 300 - 72 (norm): split; layers.0 160 + 80 > 300 - 80: cpu is full;
  //   layers.0, layers.1, norm and act go to disk, the layers merge.
  DeviceMap map = InferAutoDeviceMap(tree, Ok(ParseMaxMemory("cpu=300")), {});
  std::map<std::string, std::string> got(map.entries.begin(), map.entries.end());
  EXPECT_EQ(got,
            (std::map<std::string, std::string>{
                {"embed", "cpu"}, {"head", "cpu"}, {"layers", "disk"}, {"norm", "disk"}, {"act", "disk"}}));

  // no_split_module_classes by class: every Linear and the BatchNorm become exact-name patterns.
  std::vector<NamePattern> no_split = NoSplitPatterns(*model, {"Linear", "torch::nn::BatchNorm1dImpl"});
  std::vector<std::string> names;
  for (const NamePattern& p : no_split) names.push_back(p.text());
  EXPECT_EQ(names, (std::vector<std::string>{"layers.0", "layers.1", "norm"}));
}

// The live module and the sharded checkpoint Accel's writer makes of it describe the same model:
// same sizes for every module, same largest layer, and estimate-memory reads the shards.
TEST(LiveTree, AgreesWithItsShardedCheckpoint) {
  fs::path dir = ScratchDir("live_vs_headers");
  auto model = std::make_shared<DecoderImpl>();
  Save(dir.string(), StoredState(*model), /*max_shard=*/200);
  CheckpointHeaders headers = Ok(ReadCheckpointHeaders(dir.string()));
  EXPECT_GT(headers.files.size(), 1u);

  TreeOptions options;
  options.tied = {{"embed.weight", "head.weight"}};
  for (const char* buffer : {"**.running_mean", "**.running_var", "**.num_batches_tracked"}) {
    options.buffers.push_back(Ok(NamePattern::Parse(buffer)));
  }
  ModuleTree from_headers = Ok(ModuleTree::Build(headers.tensors, options));
  ModuleTree live = Ok(BuildModuleTree(*model));
  ModuleSizes header_sizes = ComputeModuleSizes(from_headers, {});
  ModuleSizes live_sizes = ComputeModuleSizes(live, {});
  for (const char* name :
       {"", "embed", "layers", "layers.0", "layers.1", "norm", "head", "norm.num_batches_tracked"}) {
    EXPECT_EQ(header_sizes.Get(*from_headers.Find(name)), live_sizes.Get(*live.Find(name))) << name;
  }
  EXPECT_EQ(CalculateMaximumSizes(from_headers, {}).largest_layer.names,
            CalculateMaximumSizes(live, {}).largest_layer.names);

  CommandResult result = RunEstimateMemoryCommand({dir.string(), "--format", "json"}, SystemEnvironment());
  ASSERT_EQ(result.exit_code, 0) << result.err;
  llvm::json::Value json = Ok(llvm::json::parse(result.out));
  EXPECT_EQ(json.getAsObject()->getNumber("total_size").getValueOr(0), 392);
}

TEST(LiveTree, ChildrenBottomUp) {
  std::shared_ptr<torch::nn::Module> model = std::make_shared<DecoderImpl>();
  std::vector<std::string> names;
  for (const auto& [name, module] : GetModuleChildrenBottomUp(model)) names.push_back(name);
  EXPECT_EQ(names,
            (std::vector<std::string>{"embed", "layers.0", "layers.1", "layers", "norm", "act", "head", ""}));
  EXPECT_EQ(GetModuleChildrenBottomUp(model).back().second, model);
}

// ---------------------------------------------------------------------------------------------
// set_module_tensor_to_device and retie_parameters.

TEST(SetModuleTensor, CastsValueToTheModelDtypeInPlace) {
  torch::nn::Linear linear(2, 3);
  at::Tensor before = linear->weight;
  ExpectOk(SetModuleTensorToDevice(*linear, "weight", at::kCPU, at::ones({3, 2}, at::kDouble)));
  // The member and the registry see one TensorImpl, changed in place; requires_grad kept.
  EXPECT_EQ(linear->weight.unsafeGetTensorImpl(), before.unsafeGetTensorImpl());
  EXPECT_EQ(linear->weight.scalar_type(), at::kFloat);
  EXPECT_TRUE(linear->weight.requires_grad());
  EXPECT_TRUE(at::equal(linear->weight, at::ones({3, 2})));
  EXPECT_TRUE(at::equal(Get(*linear, "weight"), at::ones({3, 2})));

  // A gradient of the old values is dropped with them.
  linear->forward(at::ones({1, 2})).sum().backward();
  ASSERT_TRUE(linear->weight.grad().defined());
  ExpectOk(SetModuleTensorToDevice(*linear, "weight", at::kCPU, at::zeros({3, 2})));
  EXPECT_FALSE(linear->weight.grad().defined());

  // Same device and dtype: shared, not copied.
  at::Tensor value = at::zeros({3});
  ExpectOk(SetModuleTensorToDevice(*linear, "bias", at::kCPU, value));
  EXPECT_EQ(linear->bias.data_ptr(), value.data_ptr());
}

TEST(SetModuleTensor, DtypeCastsFloatsButNeverIntegers) {
  torch::nn::BatchNorm1d norm(4);
  ExpectOk(SetModuleTensorToDevice(*norm, "weight", at::kCPU, at::ones({4}), at::kHalf));
  EXPECT_EQ(norm->weight.scalar_type(), at::kHalf);
  ExpectOk(
      SetModuleTensorToDevice(*norm, "num_batches_tracked", at::kCPU, at::full({}, 3, at::kLong), at::kHalf));
  EXPECT_EQ(norm->num_batches_tracked.scalar_type(), at::kLong);
  EXPECT_EQ(norm->num_batches_tracked.item<int64_t>(), 3);
  // Without a value, a dtype applies only on the way to meta.
  ExpectOk(SetModuleTensorToDevice(*norm, "running_mean", at::kCPU, std::nullopt, at::kHalf));
  EXPECT_EQ(norm->running_mean.scalar_type(), at::kFloat);
}

TEST(SetModuleTensor, MetaAndBack) {
  auto model = std::make_shared<DecoderImpl>();
  ExpectOk(SetModuleTensorToDevice(*model, "layers.0.weight", at::kMeta, std::nullopt, at::kBFloat16));
  at::Tensor w = model->layers[0]->as<torch::nn::Linear>()->weight;
  EXPECT_TRUE(w.is_meta());
  EXPECT_EQ(w.scalar_type(), at::kBFloat16);
  EXPECT_TRUE(w.requires_grad());
  EXPECT_TRUE((w * 2).is_meta());
  ExpectOk(SetModuleTensorToDevice(*model, "norm.num_batches_tracked", at::kMeta, std::nullopt, at::kHalf));
  EXPECT_EQ(model->norm->num_batches_tracked.scalar_type(), at::kLong);

  EXPECT_NE(ErrorText(SetModuleTensorToDevice(*model, "layers.0.weight", at::kCPU))
                .find("`layers.0.weight` is on the meta device; a value is needed to put it on cpu"),
            std::string::npos);
  // With a value it comes back, at the meta tensor's dtype.
  ExpectOk(SetModuleTensorToDevice(*model, "layers.0.weight", at::kCPU, at::ones({4, 4})));
  EXPECT_FALSE(w.is_meta());
  EXPECT_EQ(w.scalar_type(), at::kBFloat16);
  EXPECT_TRUE(at::equal(w, at::ones({4, 4}, at::kBFloat16)));
}

TEST(SetModuleTensor, MovingATiedTensorMovesEveryName) {
  auto model = std::make_shared<DecoderImpl>();
  ExpectOk(SetModuleTensorToDevice(*model, "embed.weight", at::kCPU, at::full({10, 4}, 2.0)));
  EXPECT_TRUE(at::equal(model->head->weight, at::full({10, 4}, 2.0)));
  ExpectOk(SetModuleTensorToDevice(*model, "head.weight", at::kMeta));
  EXPECT_TRUE(model->embed->weight.is_meta());
}

TEST(SetModuleTensor, Errors) {
  auto model = std::make_shared<DecoderImpl>();
  EXPECT_EQ(ErrorText(SetModuleTensorToDevice(*model, "layers.7.weight", at::kCPU)),
            "module `layers` has no submodule `7` (looking for `layers.7.weight`)");
  EXPECT_EQ(ErrorText(SetModuleTensorToDevice(*model, "norm.scale", at::kCPU)),
            "module `norm` has no parameter or buffer named `scale`");
  EXPECT_EQ(ErrorText(SetModuleTensorToDevice(*model, "embed.weight", at::kCPU, at::ones({4, 10}))),
            "a tensor of shape [4, 10] cannot be set in `embed.weight` of shape [10, 4]");
  EXPECT_EQ(ErrorText(SetModuleTensorToDevice(*model, "layers.0.bias", at::kCPU, at::ones({4}).to_sparse())),
            "only a dense tensor can be set in place in `layers.0.bias`");
  if (!at::hasCUDA()) {
    EXPECT_NE(ErrorText(SetModuleTensorToDevice(*model, "embed.weight", Ok(ParseTorchDevice("0"))))
                  .find("setting `embed.weight`: "),
              std::string::npos);
  }
  EXPECT_EQ(ErrorText(ParseTorchDevice("99999999999")), "GPU index `99999999999` is out of range");
  EXPECT_EQ(Ok(ParseTorchDevice("meta")), c10::Device(at::kMeta));
  EXPECT_EQ(ErrorText(ParseTorchDevice("disk")),
            "`disk` is not a torch device; only a device map may name it");
  EXPECT_EQ(ErrorText(ParseTorchDevice("gpu")),
            "unknown device `gpu`; expected a GPU index, `cpu`, `meta` or `mps`");
}

TEST(RetieParameters, PointsTheGroupAtItsFirstRealMember) {
  torch::nn::Sequential pair(torch::nn::Linear(4, 4), torch::nn::Linear(4, 4));
  at::Tensor a = pair[0]->as<torch::nn::Linear>()->weight, b = pair[1]->as<torch::nn::Linear>()->weight;
  {
    at::NoGradGuard no_grad;
    b.set_(a);
  }
  std::vector<std::vector<std::string>> tied = FindTiedParameters(*pair);
  ASSERT_EQ(tied.size(), 1u);
  // Loading one member unties them (distinct tensors that shared a storage).
  ExpectOk(SetModuleTensorToDevice(*pair, "0.weight", at::kCPU, at::full({4, 4}, 3.0)));
  EXPECT_NE(a.data_ptr(), b.data_ptr());
  EXPECT_TRUE(FindTiedParameters(*pair).empty());
  ExpectOk(RetieParameters(*pair, tied));
  EXPECT_EQ(a.data_ptr(), b.data_ptr());
  EXPECT_EQ(FindTiedParameters(*pair), tied);

  // The first member on meta: the second one is the real one.
  ExpectOk(SetModuleTensorToDevice(*pair, "0.weight", at::kMeta));
  ExpectOk(SetModuleTensorToDevice(*pair, "1.weight", at::kCPU, at::full({4, 4}, 5.0)));
  ExpectOk(RetieParameters(*pair, tied));
  EXPECT_TRUE(at::equal(a, at::full({4, 4}, 5.0)));
  // All on meta: left alone.
  ExpectOk(SetModuleTensorToDevice(*pair, "0.weight", at::kMeta));
  ExpectOk(SetModuleTensorToDevice(*pair, "1.weight", at::kMeta));
  ExpectOk(RetieParameters(*pair, tied));
  EXPECT_TRUE(a.is_meta() && b.is_meta());
  EXPECT_EQ(ErrorText(RetieParameters(*pair, {{"0.weight", "2.weight"}})),
            "module `` has no submodule `2` (looking for `2.weight`)");
}

// ---------------------------------------------------------------------------------------------
// extract_model_from_parallel.

TEST(ExtractModel, PeelsWrappersAndTheCompileShell) {
  std::shared_ptr<torch::nn::Module> model = std::make_shared<DecoderImpl>();
  EXPECT_EQ(ExtractModelFromParallel(Wrap("module", Wrap("module", model))), model);
  EXPECT_EQ(ExtractModelFromParallel(model), model);

  // A compile shell around a wrapper: kept (its `_orig_mod` now the model) or dropped.
  std::shared_ptr<torch::nn::Module> shell = Wrap("_orig_mod", Wrap("module", model));
  EXPECT_EQ(ExtractModelFromParallel(shell), shell);
  EXPECT_EQ(shell->named_children()[0].value(), model);
  EXPECT_EQ(ExtractModelFromParallel(Wrap("_orig_mod", Wrap("module", model)), /*keep_torch_compile=*/false),
            model);

  // A module with its own parameter beside a child named `module` is not a wrapper.
  auto holder = std::make_shared<torch::nn::Module>();
  holder->register_module("module", model);
  holder->register_parameter("scale", at::ones({1}));
  EXPECT_FALSE(IsParallelWrapper(*holder));
  EXPECT_EQ(ExtractModelFromParallel(holder), holder);
}

TEST(ExtractModel, RecursiveUnwrapsDeepWrappers) {
  auto outer = std::make_shared<torch::nn::Module>();
  torch::nn::Linear inner(2, 2);
  outer->register_module("block", Wrap("module", inner.ptr()));
  EXPECT_EQ(ExtractModelFromParallel(outer), outer);
  EXPECT_NE(outer->named_children()["block"], inner.ptr());
  EXPECT_EQ(ExtractModelFromParallel(outer, true, /*recursive=*/true), outer);
  EXPECT_EQ(outer->named_children()["block"], inner.ptr());
  std::vector<std::string> keys;
  for (const auto& item : outer->named_parameters()) keys.push_back(item.key());
  EXPECT_EQ(keys, (std::vector<std::string>{"block.weight", "block.bias"}));
}

TEST(ExtractModel, StripsWrapperPrefixesFromStateDictKeys) {
  EXPECT_EQ(StripParallelPrefixes({"module._orig_mod.a.weight", "module._orig_mod.b"}),
            (std::vector<std::string>{"a.weight", "b"}));
  EXPECT_EQ(StripParallelPrefixes({"_orig_mod.module.module.w"}), (std::vector<std::string>{"w"}));
  // Only a prefix every key shares is a wrapper's.
  EXPECT_EQ(StripParallelPrefixes({"module.a", "b"}), (std::vector<std::string>{"module.a", "b"}));
  EXPECT_EQ(StripParallelPrefixes({"module"}), (std::vector<std::string>{"module"}));
}

// ---------------------------------------------------------------------------------------------
// The offload folder.

TEST(Offload, WritesDatFilesAndAnIndexAndReadsThemBackBitIdentical) {
  std::string folder = ScratchDir("offload").string();
  at::Tensor bf16 = at::randn({3, 5}).to(at::kBFloat16);
  at::Tensor flags = at::tensor({1, 0, 1}, at::kByte).to(at::kBool);
  at::Tensor step = at::full({}, 42, at::kLong);
  ExpectOk(OffloadStateDict(folder, {{"a.weight", bf16}, {"a.mask", flags}, {"step", step}}));

  // Raw elements, no header: 15 × 2, 3 × 1, and a scalar as one int64.
  EXPECT_EQ(fs::file_size(folder + "/a.weight.dat"), 30u);
  EXPECT_EQ(fs::file_size(folder + "/a.mask.dat"), 3u);
  EXPECT_EQ(fs::file_size(folder + "/step.dat"), 8u);
  std::ifstream in(folder + "/index.json");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(Ok(llvm::json::parse(text)),
            llvm::json::Value(llvm::json::Object{
                {"a.weight", llvm::json::Object{{"dtype", "bfloat16"}, {"shape", {3, 5}}}},
                {"a.mask", llvm::json::Object{{"dtype", "bool"}, {"shape", {3}}}},
                {"step", llvm::json::Object{{"dtype", "int64"}, {"shape", llvm::json::Array{}}}},
            }));
  EXPECT_NE(text.find("\n  \"a.mask\": {\n    \"dtype\": \"bool\""), std::string::npos) << text;

  OffloadIndex index = Ok(ReadOffloadIndex(folder));
  ASSERT_EQ(index.size(), 3u);
  EXPECT_TRUE(SameBits(Ok(LoadOffloadedWeight(folder, index[0])), flags));
  EXPECT_TRUE(SameBits(Ok(LoadOffloadedWeight(folder, index[1])), bf16));
  at::Tensor back = Ok(LoadOffloadedWeight(folder, index[2]));
  EXPECT_EQ(back.dim(), 0);
  EXPECT_EQ(back.item<int64_t>(), 42);

  // A second save merges: the old entries stay.
  ExpectOk(OffloadStateDict(folder, {{"b", at::ones({2})}}));
  EXPECT_EQ(Ok(ReadOffloadIndex(folder)).size(), 4u);
}

TEST(Offload, Errors) {
  std::string folder = ScratchDir("offload_errors").string();
  OffloadIndex index;
  EXPECT_EQ(ErrorText(OffloadWeight(at::ones({2}), "../x", folder, index)),
            "`../x` cannot be an offload file name");
  EXPECT_EQ(ErrorText(OffloadWeight(at::ones({2}, at::kComplexDouble), "c", folder, index)),
            "offloading `c`: dtype ComplexDouble has no safetensors name");
  EXPECT_EQ(
      ErrorText(OffloadWeight(at::ones({2}, at::TensorOptions().device(at::kMeta)), "m", folder, index)),
      "`m` is on the meta device: it has no data to offload");
  ExpectOk(OffloadWeight(at::ones({4}), "w", folder, index));
  std::filesystem::resize_file(folder + "/w.dat", 12);
  EXPECT_NE(ErrorText(LoadOffloadedWeight(folder, index[0]))
                .find("w.dat has 12 bytes; `w` needs 16 (float32 × [4])"),
            std::string::npos);
  std::ofstream(folder + "/index.json") << "[1]";
  EXPECT_NE(ErrorText(ReadOffloadIndex(folder)).find("the offload index is not a JSON object"),
            std::string::npos);
}

// ---------------------------------------------------------------------------------------------
// load_checkpoint_in_model.

TEST(LoadCheckpoint, DeviceMapWithDiskOffloadAndBack) {
  fs::path dir = ScratchDir("load_disk");
  auto stored_model = std::make_shared<DecoderImpl>();
  std::vector<std::pair<std::string, at::Tensor>> state = StoredState(*stored_model);
  std::vector<std::pair<std::string, at::Tensor>> file = state;
  file.emplace_back("extra.weight", at::ones({2}));
  Save((dir / "model.safetensors").string(), file);

  auto model = std::make_shared<DecoderImpl>();
  LoadCheckpointOptions options;
  options.device_map = DeviceMapEntries{{"embed", "cpu"}, {"layers.0", "cpu"}, {"layers.1", "disk"},
                                        {"norm", "disk"}, {"act", "cpu"},      {"head", "cpu"}};
  options.offload_folder = (dir / "offload").string();
  LoadCheckpointReport report = Ok(LoadCheckpointInModel(*model, dir.string(), options));
  EXPECT_EQ(report.unexpected, std::vector<std::string>{"extra.weight"});
  EXPECT_EQ(report.warnings,
            std::vector<std::string>{"1 checkpoint tensor(s) not in the model: extra.weight"});
  // Parameters on disk are offloaded; buffers are not (no offload_buffers): they load on the cpu.
  EXPECT_EQ(report.offloaded,
            (std::vector<std::string>{"layers.1.bias", "layers.1.weight", "norm.bias", "norm.weight"}));

  std::map<std::string, at::Tensor> expected(state.begin(), state.end());
  for (const char* name : {"embed.weight", "layers.0.weight", "layers.0.bias", "norm.running_mean",
                           "norm.running_var", "norm.num_batches_tracked"}) {
    EXPECT_TRUE(SameBits(Get(*model, name), expected[name])) << name;
  }
  // The tied head is the embedding itself.
  EXPECT_TRUE(SameBits(model->head->weight, expected["embed.weight"]));
  for (const char* name : {"layers.1.weight", "layers.1.bias", "norm.weight", "norm.bias"}) {
    EXPECT_TRUE(Get(*model, name).is_meta()) << name;
  }
  OffloadIndex index = Ok(ReadOffloadIndex(options.offload_folder));
  ASSERT_EQ(index.size(), 4u);
  EXPECT_EQ(index[1].name, "layers.1.weight");
  EXPECT_EQ(index[1].dtype, "float32");
  EXPECT_EQ(index[1].shape, (std::vector<int64_t>{4, 4}));

  // load_offloaded_weights: back on the cpu, bit-identical.
  ExpectOk(LoadOffloadedWeights(*model, index, options.offload_folder));
  for (const auto& [name, value] : state) EXPECT_TRUE(SameBits(Get(*model, name), value)) << name;
}

TEST(LoadCheckpoint, DtypeKeepInFp32AndOffloadBuffers) {
  fs::path dir = ScratchDir("load_dtype");
  auto stored_model = std::make_shared<DecoderImpl>();
  std::vector<std::pair<std::string, at::Tensor>> state = StoredState(*stored_model);
  Save((dir / "model.safetensors").string(), state);

  auto model = std::make_shared<DecoderImpl>();
  LoadCheckpointOptions options;
  options.device_map = DeviceMapEntries{{"", "cpu"}, {"norm", "disk"}};
  options.offload_folder = (dir / "offload").string();
  options.offload_buffers = true;
  options.dtype = at::kHalf;
  options.keep_in_fp32_modules = {"layers.1"};
  LoadCheckpointReport report =
      Ok(LoadCheckpointInModel(*model, (dir / "model.safetensors").string(), options));
  EXPECT_EQ(report.offloaded.size(), 5u);
  EXPECT_EQ(model->embed->weight.scalar_type(), at::kHalf);
  EXPECT_EQ(Get(*model, "layers.0.weight").scalar_type(), at::kHalf);
  EXPECT_EQ(Get(*model, "layers.1.weight").scalar_type(), at::kFloat);
  // Offloaded: meta at the load dtype; the integer step keeps int64; the files keep the stored
  // float32 bytes.
  EXPECT_TRUE(model->norm->running_mean.is_meta());
  EXPECT_EQ(model->norm->running_mean.scalar_type(), at::kHalf);
  EXPECT_EQ(model->norm->num_batches_tracked.scalar_type(), at::kLong);
  EXPECT_EQ(fs::file_size(dir / "offload" / "norm.running_mean.dat"), 16u);
}

TEST(LoadCheckpoint, Bf16CheckpointOnDiskComesBackBitIdentical) {
  fs::path dir = ScratchDir("load_bf16");
  at::Tensor w = at::randn({3, 2}).to(at::kBFloat16), b = at::randn({3}).to(at::kBFloat16);
  Save((dir / "model.safetensors").string(), {{"weight", w}, {"bias", b}});
  torch::nn::Linear linear(2, 3);
  LoadCheckpointOptions options;
  options.device_map = DeviceMapEntries{{"", "disk"}};
  options.offload_folder = (dir / "offload").string();
  Ok(LoadCheckpointInModel(*linear, dir.string(), options));
  // On meta at the stored dtype, as Accelerate leaves an offloaded tensor.
  EXPECT_TRUE(linear->weight.is_meta());
  EXPECT_EQ(linear->weight.scalar_type(), at::kBFloat16);
  OffloadIndex index = Ok(ReadOffloadIndex(options.offload_folder));
  ASSERT_EQ(index.size(), 2u);
  EXPECT_EQ(index[0].dtype, "bfloat16");
  ExpectOk(LoadOffloadedWeights(*linear, index, options.offload_folder));
  EXPECT_TRUE(SameBits(linear->weight, w));
  EXPECT_TRUE(SameBits(linear->bias, b));
}

TEST(LoadCheckpoint, ShardedWithoutDeviceMapAndOffloadStateDict) {
  fs::path dir = ScratchDir("load_sharded");
  auto stored_model = std::make_shared<DecoderImpl>();
  std::vector<std::pair<std::string, at::Tensor>> state = StoredState(*stored_model);
  Save((dir / "ckpt").string(), state, /*max_shard=*/200);
  ASSERT_TRUE(fs::exists(dir / "ckpt" / "model.safetensors.index.json"));

  auto model = std::make_shared<DecoderImpl>();
  LoadCheckpointReport report = Ok(LoadCheckpointInModel(*model, (dir / "ckpt").string()));
  // Without a device map, missing tensors are reported: the tied head the file leaves out.
  EXPECT_EQ(report.missing, std::vector<std::string>{"head.weight"});
  for (const auto& [name, value] : state) EXPECT_TRUE(SameBits(Get(*model, name), value)) << name;
  LoadCheckpointOptions strict;
  strict.strict = true;
  EXPECT_NE(ErrorText(LoadCheckpointInModel(*model, (dir / "ckpt").string(), strict))
                .find("1 missing (head.weight), 0 unexpected"),
            std::string::npos);

  // offload_state_dict: cpu tensors pass through a temporary folder and end up loaded.
  auto spilled = std::make_shared<DecoderImpl>();
  LoadCheckpointOptions options;
  options.device_map = DeviceMapEntries{{"", "cpu"}};
  options.offload_state_dict = true;
  Ok(LoadCheckpointInModel(*spilled, (dir / "ckpt" / "model.safetensors.index.json").string(), options));
  for (const auto& [name, value] : state) EXPECT_TRUE(SameBits(Get(*spilled, name), value)) << name;
}

TEST(LoadCheckpoint, Errors) {
  fs::path dir = ScratchDir("load_errors");
  Save((dir / "model.safetensors").string(),
       {{"weight", at::ones({3, 2})}, {"bias", at::ones({3})}, {"x", at::ones({1})}});
  torch::nn::Linear linear(2, 3);
  LoadCheckpointOptions options;
  options.device_map = DeviceMapEntries{{"", "disk"}};
  EXPECT_EQ(ErrorText(LoadCheckpointInModel(*linear, dir.string(), options)),
            "the device map offloads to `disk`; an offload folder is needed");
  options.device_map = DeviceMapEntries{{"weight", "cpu"}};
  EXPECT_EQ(ErrorText(LoadCheckpointInModel(*linear, dir.string(), options)),
            "`bias` has no device in the device map");
  options.device_map = DeviceMapEntries{{"", "cpu"}};
  options.strict = true;
  EXPECT_EQ(ErrorText(LoadCheckpointInModel(*linear, dir.string(), options)),
            "`x` is in the checkpoint but not in the model");
  torch::nn::Linear wrong(3, 3);
  EXPECT_NE(ErrorText(LoadCheckpointInModel(*wrong, dir.string(), {}))
                .find("cannot be set in `weight` of shape [3, 3]"),
            std::string::npos);
  EXPECT_NE(ErrorText(LoadCheckpointInModel(*linear, (dir / "none").string(), {})).find("none"),
            std::string::npos);
}

}  // namespace
}  // namespace accel::rt::memory
