// The one runtime TU that includes <torch/torch.h>: torch::nn, torch::jit and torch::optim
// live here.
#include "runtime/train/trainer.h"

#include <torch/script.h>
#include <torch/torch.h>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <stdexcept>

#include "compiler/source/named_file.h"
#include "runtime/tensor/scalar_type.h"
#include "runtime/train/activation_checkpointing.h"
#include "runtime/train/autocast_region.h"
#include "runtime/train/error_text.h"
#include "runtime/train/loss_scaler.h"
#include "runtime/train/named_inputs.h"
#include "runtime/train/optimizer_factory.h"
#include "runtime/train/optimizer_state.h"
#include "runtime/train/recompute.h"
#include "runtime/train/tensor_parallel.h"
#include "runtime/train/weight_storage.h"

namespace accel::rt::train {
namespace {

// The model behind one forward(): a built-in torch::nn module or a TorchScript module.
class Model : public BlockForward {
 public:
  virtual ~Model() = default;
  virtual torch::Tensor Forward(const torch::Tensor& features) = 0;
  virtual std::vector<std::pair<std::string, torch::Tensor>> Parameters() const = 0;
  virtual std::vector<std::pair<std::string, torch::Tensor>> Buffers() const = 0;
  // Training mode (batch norm uses batch statistics) or evaluation mode (running statistics).
  virtual void SetTraining(bool training) = 0;
  // Moves every parameter and buffer to `device` in place: each keeps its identity.
  virtual void MoveTo(c10::Device device) = 0;
  // A batch of named columns, for a model that returns its own loss; CheckColumns throws
  // std::invalid_argument when they do not bind to forward's inputs.
  virtual void CheckColumns(const data::Columns& columns) const = 0;
  virtual torch::jit::IValue ForwardColumns(const data::Columns& columns) = 0;
  // forward's signature, for errors.
  virtual std::string Signature() const = 0;
  // The module tree, given each parameter's index by name (see Trainer::Modules).
  virtual ModuleNode Modules(const std::map<std::string, size_t>& index) const = 0;
  // The state_dict prefixes each block of forward reads (see Trainer::ForwardBlocks); "" reads
  // everything.
  virtual std::vector<std::vector<std::string>> BlockPrefixes() const = 0;
  // Tensor parallelism: the dimension each parameter (by name) is split along; absent: whole.
  virtual std::map<std::string, int> SplitDims() const { return {}; }
  void SetGate(ForwardGate* gate) { gate_ = gate; }
  // Activation checkpointing: per block, the trainable parameters it reads if it is recomputed
  // in backward; empty for a block that keeps its activations.
  void SetRecomputed(std::vector<std::vector<torch::Tensor>> parameters) {
    recomputed_ = std::move(parameters);
  }

 protected:
  // Forward's block `block` on `input`: ComputeBlock between the gate's Enter and Leave,
  // recomputed in backward where SetRecomputed asked for it and a graph is being built.
  torch::Tensor RunBlock(size_t block, const torch::Tensor& input) {
    Enter(block);
    const bool recompute =
        block < recomputed_.size() && !recomputed_[block].empty() && torch::GradMode::is_enabled();
    torch::Tensor output =
        recompute ? RecomputeInBackward(*this, block, input, recomputed_[block]) : ComputeBlock(block, input);
    return Leave(block, output);
  }
  void Enter(size_t block) {
    if (gate_ != nullptr) gate_->Enter(block);
  }
  torch::Tensor Leave(size_t block, const torch::Tensor& output) {
    return gate_ == nullptr ? output : gate_->Leave(block, output);
  }

 private:
  ForwardGate* gate_ = nullptr;
  std::vector<std::vector<torch::Tensor>> recomputed_;
};

std::string JoinPath(const std::string& prefix, const std::string& name) {
  return prefix.empty() ? name : prefix + "." + name;
}

// `torch::nn::TransformerEncoderLayerImpl` -> `TransformerEncoderLayer`: the name a wrap policy
// gives a built-in module class.
std::string ClassName(const std::string& demangled) {
  std::string name =
      demangled.substr(demangled.rfind(':') == std::string::npos ? 0 : demangled.rfind(':') + 1);
  if (name.size() > 4 && name.compare(name.size() - 4, 4, "Impl") == 0) name.resize(name.size() - 4);
  return name;
}

ModuleNode NnModuleNode(const torch::nn::Module& module, const std::string& path,
                        const std::map<std::string, size_t>& index) {
  ModuleNode node{path, ClassName(module.name()), {}, {}};
  for (const auto& item : module.named_parameters(/*recurse=*/false)) {
    if (auto found = index.find(JoinPath(path, item.key())); found != index.end())
      node.parameters.push_back(found->second);
  }
  for (const auto& child : module.named_children())
    node.children.push_back(NnModuleNode(*child.value(), JoinPath(path, child.key()), index));
  return node;
}

std::vector<std::pair<std::string, torch::Tensor>> Named(
    const torch::OrderedDict<std::string, torch::Tensor>& dict) {
  std::vector<std::pair<std::string, torch::Tensor>> named;
  for (const auto& item : dict) named.emplace_back(item.key(), item.value());
  return named;
}

// InitialWeights::kShapesOnly for built-in models: `module` (or `tensor`) keeps its shapes and
// drops its bytes when `drop`, as soon as it is built.
template <typename Holder>
Holder BytesDroppedIf(bool drop, Holder module) {
  if (drop) {
    for (const torch::Tensor& tensor : module->parameters()) ReleaseBytes(tensor);
    for (const torch::Tensor& tensor : module->buffers()) ReleaseBytes(tensor);
  }
  return module;
}
torch::Tensor BytesDroppedIf(bool drop, torch::Tensor tensor) {
  if (drop) ReleaseBytes(tensor);
  return tensor;
}

// A model built from torch::nn modules (named as Python names them).
template <typename Net>
class NnModel : public Model {
 public:
  void SetTraining(bool training) override { net_->train(training); }
  void MoveTo(c10::Device device) override { net_->to(device); }
  std::vector<std::pair<std::string, torch::Tensor>> Parameters() const override {
    return Named(net_->named_parameters());
  }
  std::vector<std::pair<std::string, torch::Tensor>> Buffers() const override {
    return Named(net_->named_buffers());
  }
  // The built-in models read features only; lowering refuses them on named columns (A4030).
  void CheckColumns(const data::Columns&) const override { RefuseColumns(); }
  torch::jit::IValue ForwardColumns(const data::Columns&) override { RefuseColumns(); }
  std::string Signature() const override { return "forward(features: Tensor)"; }
  ModuleNode Modules(const std::map<std::string, size_t>& index) const override {
    ModuleNode root = NnModuleNode(*net_.ptr(), "", index);
    root.type = "Model";
    return root;
  }

 protected:
  [[noreturn]] static void RefuseColumns() {
    throw std::invalid_argument(
        "built-in models read one float tensor of features, not named columns; bring a TorchScript model");
  }

  explicit NnModel(Net net) : net_(std::move(net)) {}
  Net net_;
};

// The Sequential of Linear and ReLU modules (named `0`, `1`, ... as in Python), run one Linear
// (and the ReLU after it) per block. With tensor parallelism, built whole (so every rank draws
// the same weights from the generator), then each pair of consecutive Linears keeps this rank's
// slices, as Megatron's MLP and the "colwise"/"rowwise" tp_plan entries split them: the first's
// output features (weight rows and bias), the second's input features (weight columns; its bias
// whole, added once after the partial outputs are summed). A last Linear without a partner
// stays whole on every rank.
class MlpModel final : public NnModel<torch::nn::Sequential> {
 public:
  MlpModel(const plan::MLP& spec, const TensorParallelism& tp, bool shapes_only)
      : NnModel(torch::nn::Sequential()), tp_(tp) {
    int64_t width = spec.inputs;
    for (int64_t hidden : spec.hidden) {
      linears_.push_back(BytesDroppedIf(shapes_only, torch::nn::Linear(width, hidden)));
      net_->push_back(linears_.back());
      net_->push_back(torch::nn::ReLU());
      width = hidden;
    }
    linears_.push_back(BytesDroppedIf(shapes_only, torch::nn::Linear(width, spec.outputs)));
    net_->push_back(linears_.back());
    roles_.assign(linears_.size(), Role::kWhole);
    if (tp_.size > 1) Split();
  }
  torch::Tensor Forward(const torch::Tensor& features) override {
    torch::Tensor x = features;
    for (size_t block = 0; block < linears_.size(); ++block) x = RunBlock(block, x);
    return x;
  }
  // One Linear and the ReLU after it (none after the last).
  torch::Tensor ComputeBlock(size_t block, const torch::Tensor& input) override {
    torch::nn::Linear& linear = linears_[block];
    torch::Tensor x;
    switch (roles_[block]) {
      case Role::kWhole:
        x = linear->forward(input);
        break;
      case Role::kColumn:
        x = linear->forward(CopyToTensorParallel(input, *tp_.group));
        break;
      case Role::kRow:
        x = ReduceFromTensorParallel(torch::linear(input, linear->weight), *tp_.group) + linear->bias;
        break;
    }
    return block + 1 < linears_.size() ? torch::relu(x) : x;
  }
  std::vector<std::vector<std::string>> BlockPrefixes() const override {
    std::vector<std::vector<std::string>> blocks;
    for (size_t block = 0; block < linears_.size(); ++block) blocks.push_back({std::to_string(2 * block)});
    return blocks;
  }
  std::map<std::string, int> SplitDims() const override {
    std::map<std::string, int> dims;
    for (size_t block = 0; block < linears_.size(); ++block) {
      const std::string module = std::to_string(2 * block);
      if (roles_[block] == Role::kColumn) {
        dims[module + ".weight"] = 0;
        dims[module + ".bias"] = 0;
      } else if (roles_[block] == Role::kRow) {
        dims[module + ".weight"] = 1;
      }
    }
    return dims;
  }

 private:
  enum class Role { kWhole, kColumn, kRow };

  void Split() {
    torch::NoGradGuard no_grad;
    // The test hook: the row-parallel slice of the next rank, as an offset error would take it.
    const int row_rank =
        TestFaultFromEnvironment() == TestFault::kTpOffset ? (tp_.rank + 1) % tp_.size : tp_.rank;
    for (size_t block = 0; block + 1 < linears_.size(); block += 2) {
      torch::nn::Linear& column = linears_[block];
      torch::nn::Linear& row = linears_[block + 1];
      column->weight.set_data(TensorParallelSlice(column->weight.detach(), 0, tp_.rank, tp_.size));
      column->bias.set_data(TensorParallelSlice(column->bias.detach(), 0, tp_.rank, tp_.size));
      row->weight.set_data(TensorParallelSlice(row->weight.detach(), 1, row_rank, tp_.size));
      roles_[block] = Role::kColumn;
      roles_[block + 1] = Role::kRow;
    }
  }

  std::vector<torch::nn::Linear> linears_;
  TensorParallelism tp_;
  std::vector<Role> roles_;
};

// Each feature value is a token: value × a learned vector plus a learned position, then
// post-norm encoder layers (no dropout, so data-parallel runs stay comparable), the mean over
// tokens, and a Linear head.
class TransformerModelImpl : public torch::nn::Module {
 public:
  // `shapes_only`: each top-level module drops its bytes once built (the encoder builds all its
  // layers at once).
  TransformerModelImpl(const plan::Transformer& spec, bool shapes_only)
      : value_(register_module("value", BytesDroppedIf(shapes_only, torch::nn::Linear(1, spec.d_model)))),
        position_(register_parameter(
            "position", BytesDroppedIf(shapes_only, torch::randn({spec.inputs, 1, spec.d_model}) * 0.02))),
        encoder_(register_module(
            "encoder", BytesDroppedIf(shapes_only,
                                      torch::nn::TransformerEncoder(torch::nn::TransformerEncoderOptions(
                                          torch::nn::TransformerEncoderLayerOptions(spec.d_model, spec.heads)
                                              .dim_feedforward(spec.feedforward)
                                              .dropout(0.0),
                                          spec.layers))))),
        head_(register_module("head",
                              BytesDroppedIf(shapes_only, torch::nn::Linear(spec.d_model, spec.outputs)))) {}

  // Block 0: [batch, tokens] -> [tokens, batch, 1] -> [tokens, batch, d_model] (sequence first).
  torch::Tensor Embed(const torch::Tensor& features) {
    return value_(features.t().unsqueeze(-1)) + position_;
  }
  // Blocks 1..layers, as TransformerEncoder's forward runs them (it has no final norm here).
  size_t layers() const { return encoder_->layers->size(); }
  torch::Tensor Layer(size_t layer, const torch::Tensor& tokens) {
    return encoder_->layers->at<torch::nn::TransformerEncoderLayerImpl>(layer).forward(tokens);
  }
  // The same layer with its feed-forward block split over a tensor-parallel group: linear1
  // column-wise, linear2 row-wise (its bias added once after the sum); attention whole on every
  // rank. The steps of TransformerEncoderLayerImpl::forward (post-norm, ReLU), in its order.
  torch::Tensor SplitLayer(size_t layer, const torch::Tensor& tokens, distributed::Collectives& group) {
    auto& l = encoder_->layers->at<torch::nn::TransformerEncoderLayerImpl>(layer);
    torch::Tensor attended = std::get<0>(
        l.self_attn->forward(tokens, tokens, tokens, at::Tensor(), /*need_weights=*/true, at::Tensor()));
    torch::Tensor x = l.norm1(tokens + l.dropout1(attended));
    torch::Tensor hidden = l.dropout(torch::relu(l.linear1(CopyToTensorParallel(x, group))));
    torch::Tensor out =
        ReduceFromTensorParallel(torch::linear(hidden, l.linear2->weight), group) + l.linear2->bias;
    return l.norm2(x + l.dropout2(out));
  }
  // Keeps this rank's slices of every layer's feed-forward Linears; returns how each parameter
  // (by state_dict name) is split.
  std::map<std::string, int> Split(const TensorParallelism& tp) {
    torch::NoGradGuard no_grad;
    const int row_rank =
        TestFaultFromEnvironment() == TestFault::kTpOffset ? (tp.rank + 1) % tp.size : tp.rank;
    std::map<std::string, int> dims;
    for (size_t layer = 0; layer < layers(); ++layer) {
      auto& l = encoder_->layers->at<torch::nn::TransformerEncoderLayerImpl>(layer);
      l.linear1->weight.set_data(TensorParallelSlice(l.linear1->weight.detach(), 0, tp.rank, tp.size));
      l.linear1->bias.set_data(TensorParallelSlice(l.linear1->bias.detach(), 0, tp.rank, tp.size));
      l.linear2->weight.set_data(TensorParallelSlice(l.linear2->weight.detach(), 1, row_rank, tp.size));
      const std::string prefix = "encoder.layers." + std::to_string(layer) + ".";
      dims[prefix + "linear1.weight"] = 0;
      dims[prefix + "linear1.bias"] = 0;
      dims[prefix + "linear2.weight"] = 1;
    }
    return dims;
  }
  // The last block: mean over tokens and the head.
  torch::Tensor Head(const torch::Tensor& tokens) { return head_(tokens.mean(0)); }

 private:
  torch::nn::Linear value_;
  torch::Tensor position_;
  torch::nn::TransformerEncoder encoder_;
  torch::nn::Linear head_;
};
TORCH_MODULE(TransformerModel);

class BuiltInTransformer final : public NnModel<TransformerModel> {
 public:
  BuiltInTransformer(const plan::Transformer& spec, const TensorParallelism& tp, bool shapes_only)
      : NnModel(TransformerModel(spec, shapes_only)), tokens_(spec.inputs), tp_(tp) {
    if (tp_.size > 1) split_ = net_->Split(tp_);
  }
  std::map<std::string, int> SplitDims() const override { return split_; }
  torch::Tensor Forward(const torch::Tensor& features) override {
    if (features.dim() != 2 || features.size(1) != tokens_) {
      throw std::invalid_argument("the transformer reads " + std::to_string(tokens_) +
                                  " features per sample, the batch has shape " + c10::str(features.sizes()));
    }
    torch::Tensor x = features;
    for (size_t block = 0; block < net_->layers() + 2; ++block) x = RunBlock(block, x);
    return x;
  }
  // The embedding, each encoder layer, the head.
  torch::Tensor ComputeBlock(size_t block, const torch::Tensor& input) override {
    if (block == 0) return net_->Embed(input);
    if (block > net_->layers()) return net_->Head(input);
    const size_t layer = block - 1;
    return tp_.size > 1 ? net_->SplitLayer(layer, input, *tp_.group) : net_->Layer(layer, input);
  }
  std::vector<std::vector<std::string>> BlockPrefixes() const override {
    std::vector<std::vector<std::string>> blocks{{"value", "position"}};
    for (size_t layer = 0; layer < net_->layers(); ++layer)
      blocks.push_back({"encoder.layers." + std::to_string(layer)});
    blocks.push_back({"head"});
    return blocks;
  }

 private:
  int64_t tokens_;
  TensorParallelism tp_;
  std::map<std::string, int> split_;
};

// A module saved with `torch.jit.save(torch.jit.script(model))`: its parameter names are the
// Python model's state_dict keys.
class ScriptedModel final : public Model {
 public:
  ScriptedModel(const plan::TorchScript& spec, bool shapes_only) {
    const std::string& path = spec.path;
    // The save hint is for a file that is there but is not a TorchScript archive.
    std::error_code ec;
    if (!std::filesystem::exists(path, ec)) {
      throw std::invalid_argument(
          "cannot load the TorchScript model " + path +
          ": the file does not exist (a relative path in a plan is relative to the plan file's directory, in a "
          "spec to the spec's)");
    }
    if (std::string why = source::WhyNotReadable(path); !why.empty())
      throw std::invalid_argument("cannot load the TorchScript model " + path + ": " + why);
    try {
      // On the meta device the file's tensors are read one at a time and dropped.
      module_ = torch::jit::load(path, c10::Device(shapes_only ? c10::kMeta : c10::kCPU));
      if (shapes_only && !KeepShapesOnly()) module_ = torch::jit::load(path);
    } catch (const c10::Error& error) {
      std::string text = error.what_without_backtrace();
      throw std::invalid_argument("cannot load the TorchScript model " + path + ": " +
                                  text.substr(0, text.find('\n')) +
                                  "; save it with torch.jit.save(torch.jit.script(model), path)");
    }
    module_.train();
    if (Parameters().empty()) {
      throw std::invalid_argument("the TorchScript model " + path + " has no trainable parameters");
    }
    binder_.emplace(module_, spec.inputs);
  }
  void CheckColumns(const data::Columns& columns) const override { binder_->Check(columns); }
  // One block: LibTorch has no hooks on a TorchScript submodule's forward. The trainer
  // gates the call (Forward, or the loss of ForwardColumns).
  torch::jit::IValue ForwardColumns(const data::Columns& columns) override {
    return binder_->Call(module_, columns);
  }
  std::vector<std::vector<std::string>> BlockPrefixes() const override { return {{""}}; }
  ModuleNode Modules(const std::map<std::string, size_t>& index) const override {
    return ScriptNode(module_, "", index);
  }
  std::string Signature() const override { return binder_->signature(); }
  torch::Tensor Forward(const torch::Tensor& features) override { return RunBlock(0, features); }
  // The whole forward.
  torch::Tensor ComputeBlock(size_t /*block*/, const torch::Tensor& input) override {
    torch::jit::IValue output = module_.forward({input});
    if (!output.isTensor()) {
      throw std::invalid_argument("the TorchScript model's forward returned " + output.tagKind() +
                                  ", not one tensor of predictions");
    }
    return output.toTensor();
  }
  // ForwardColumns's gate, around the call and on the loss it returned.
  void EnterColumns() { Enter(0); }
  torch::Tensor LeaveColumns(const torch::Tensor& loss) { return Leave(0, loss); }
  void SetTraining(bool training) override { module_.train(training); }
  void MoveTo(c10::Device device) override { module_.to(device); }
  std::vector<std::pair<std::string, torch::Tensor>> Parameters() const override {
    std::vector<std::pair<std::string, torch::Tensor>> named;
    for (const auto& item : module_.named_parameters(/*recurse=*/true)) {
      if (item.value.requires_grad()) named.emplace_back(item.name, item.value);
    }
    return named;
  }
  std::vector<std::pair<std::string, torch::Tensor>> Buffers() const override {
    std::vector<std::pair<std::string, torch::Tensor>> named;
    for (const auto& item : module_.named_buffers(/*recurse=*/true))
      named.emplace_back(item.name, item.value);
    // Frozen parameters are state the optimizer never touches: saved and broadcast with the
    // buffers, so model.safetensors holds the whole state_dict.
    for (const auto& item : module_.named_parameters(/*recurse=*/true)) {
      if (!item.value.requires_grad()) named.emplace_back(item.name, item.value);
    }
    return named;
  }

 private:
  // After a load onto the meta device: every parameter and buffer becomes a CPU tensor of its
  // shape without bytes. False, changing nothing, when a tensor attribute is neither (it
  // could not be filled from rank 0), or when two of them share their storage (tied weights,
  // which separate tensors would untie).
  bool KeepShapesOnly() {
    std::map<std::string, bool> state;  // name -> is a buffer
    for (const auto& item : module_.named_parameters(/*recurse=*/true)) state[item.name] = false;
    for (const auto& item : module_.named_buffers(/*recurse=*/true)) state[item.name] = true;
    std::set<const c10::StorageImpl*> storages;
    for (const auto& item : module_.named_attributes(/*recurse=*/true)) {
      if (!item.value.isTensor()) continue;
      if (state.count(item.name) == 0) return false;
      if (!storages.insert(item.value.toTensor().storage().unsafeGetStorageImpl()).second) return false;
    }
    std::map<std::string, torch::jit::Module> owners;
    for (const auto& item : module_.named_modules()) owners.emplace(item.name, item.value);
    for (const auto& [name, is_buffer] : state) {
      const size_t dot = name.rfind('.');
      torch::jit::Module& owner = owners.at(dot == std::string::npos ? "" : name.substr(0, dot));
      const std::string leaf = dot == std::string::npos ? name : name.substr(dot + 1);
      const torch::Tensor meta = owner.attr(leaf).toTensor();
      torch::Tensor shaped = ShapeOnly(meta.sizes(), meta.scalar_type());
      if (is_buffer) {
        owner.register_buffer(leaf, shaped);
      } else {
        shaped.set_requires_grad(meta.requires_grad());
        owner.register_parameter(leaf, shaped, /*is_buffer=*/false);
      }
    }
    return true;
  }

  static ModuleNode ScriptNode(const torch::jit::Module& module, const std::string& path,
                               const std::map<std::string, size_t>& index) {
    ModuleNode node{path, module.type()->name() ? module.type()->name()->qualifiedName() : "", {}, {}};
    for (const auto& item : module.named_parameters(/*recurse=*/false)) {
      if (auto found = index.find(JoinPath(path, item.name)); found != index.end())
        node.parameters.push_back(found->second);
    }
    for (const auto& child : module.named_children())
      node.children.push_back(ScriptNode(child.value, JoinPath(path, child.name), index));
    return node;
  }

  mutable torch::jit::Module module_;
  std::optional<InputBinder> binder_;
};

class TorchTrainer final : public Trainer {
 public:
  TorchTrainer(const plan::BuildModel& model, const plan::TrainLoop& loop, const TensorParallelism& tp,
               InitialWeights weights, c10::Device device)
      : loop_(loop) {
    const bool shapes_only = weights == InitialWeights::kShapesOnly;
    if (shapes_only && tp.size > 1)
      throw std::logic_error("tensor-parallel slices are cut from the weights' values: build them whole");
    if (shapes_only && !device.is_cpu())
      throw std::logic_error("a model of shapes only is received on the CPU: build it whole for a device");
    auto refuse_tp = [&tp](const char* what) {
      if (tp.size > 1) {
        throw std::invalid_argument(
            fmt::format("tensor parallelism (tp_size {}) needs the model's tensor-parallel plan, and {}; use "
                        "tp_size 1, or the built-in MLP or Transformer",
                        tp.size, what));
      }
    };
    model_ = std::visit(
        plan::Overloaded{[&](const plan::MLP& m) -> std::unique_ptr<Model> {
                           return std::make_unique<MlpModel>(m, tp, shapes_only);
                         },
                         [&](const plan::Transformer& m) -> std::unique_ptr<Model> {
                           return std::make_unique<BuiltInTransformer>(m, tp, shapes_only);
                         },
                         [&](const plan::TorchScript& m) -> std::unique_ptr<Model> {
                           refuse_tp("a TorchScript model carries none (Accelerate requires a `tp_plan`)");
                           return std::make_unique<ScriptedModel>(m, shapes_only);
                         }},
        model.model);
    // Built on the CPU from the generator (so a GPU run starts from the CPU run's weights), then
    // moved, before the optimizer takes the parameters.
    if (!device.is_cpu()) model_->MoveTo(device);
    std::vector<torch::Tensor> parameters;
    for (const auto& [name, tensor] : model_->Parameters()) parameters.push_back(tensor);
    if (!parameters.empty() && !parameters.front().is_meta()) device_ = parameters.front().device();

    type_ = OptimizerTypeOf(loop);
    optimizer_ = MakeOptimizer(loop, parameters);
    if (loop.sharding.activation_checkpointing) Recompute(loop.sharding);
  }

  float ForwardBackward(const at::Tensor& features, const at::Tensor& targets, double loss_scale) override {
    torch::Tensor loss = Losses(Forward(features), OnDevice(targets), torch::Reduction::Mean);
    (loss_scale == 1.0 ? loss : loss * loss_scale).backward();
    return loss.item<float>();
  }

  Evaluation Evaluate(const at::Tensor& features, const at::Tensor& targets) override {
    torch::NoGradGuard no_grad;
    model_->SetTraining(false);
    torch::Tensor output;
    try {
      output = Forward(features);
    } catch (...) {
      model_->SetTraining(true);
      throw;
    }
    model_->SetTraining(true);
    Evaluation result;
    const at::Tensor on_device = OnDevice(targets);
    result.losses = Losses(output, on_device, torch::Reduction::None);
    if (result.losses.dim() > 1) result.losses = result.losses.flatten(1).mean(1);
    if (loop_.loss == plan::Loss::cross_entropy)
      result.correct = output.argmax(1).eq(on_device).to(torch::kFloat);
    return result;
  }
  float ForwardBackward(const data::Columns& batch, double loss_scale) override {
    torch::Tensor loss = ForwardColumns(batch).loss;
    (loss_scale == 1.0 ? loss : loss * loss_scale).backward();
    return loss.item<float>();
  }

  ModelOutputs Evaluate(const data::Columns& batch) override {
    torch::NoGradGuard no_grad;
    model_->SetTraining(false);
    try {
      ModelOutputs outputs = ForwardColumns(batch);
      model_->SetTraining(true);
      return outputs;
    } catch (...) {
      model_->SetTraining(true);
      throw;
    }
  }

  void CheckColumns(const data::Columns& sample) override {
    model_->CheckColumns(sample);
    try {
      Evaluate(sample);
    } catch (const std::invalid_argument&) {
      throw;
    } catch (const c10::Error& error) {
      throw std::invalid_argument(DescribeFailure(sample, error.what_without_backtrace()));
    } catch (const std::exception& error) {
      throw std::invalid_argument(DescribeFailure(sample, error.what()));
    }
  }

  // Names bind but forward fails on these tensors: a shape or dtype the model does not take.
  std::string DescribeFailure(const data::Columns& sample, const std::string& what) const {
    std::vector<std::string> fed;
    for (const data::Column& column : sample) {
      std::ostringstream shape;
      shape << tensor::TorchName(column.values.scalar_type()) << " " << column.values.sizes();
      fed.push_back("`" + column.name + "` " + shape.str());
    }
    ErrorText error = SplitErrorText(what);
    return fmt::format(
        "{} fails on the first {} samples (columns {}): {}; check each column's shape and dtype against the "
        "input it feeds{}",
        model_->Signature(), sample.front().values.size(0), fmt::join(fed, ", "), error.summary,
        error.details);
  }

  // The forward pass of named columns, under autocast as Forward's; the model computes the loss
  // inside the region, as its own forward does under Accelerate's autocast.
  ModelOutputs ForwardColumns(const data::Columns& batch) {
    auto* scripted = dynamic_cast<ScriptedModel*>(model_.get());
    if (scripted != nullptr) scripted->EnterColumns();
    ModelOutputs outputs;
    {
      std::optional<AutocastRegion> autocast;
      EnterAutocast(autocast);
      outputs = ReadModelOutputs(model_->ForwardColumns(OnDevice(batch)), model_->Signature());
    }
    if (scripted != nullptr) outputs.loss = scripted->LeaveColumns(outputs.loss);
    return outputs;
  }

  // The forward pass under autocast when the loop asks for it; outputs in fp32, as
  // Accelerate's prepared model returns them (convert_outputs_to_fp32), so the loss is computed
  // outside the autocast region, as in a user's loop.
  torch::Tensor Forward(const at::Tensor& features) {
    std::optional<AutocastRegion> autocast;
    EnterAutocast(autocast);
    return model_->Forward(OnDevice(features)).to(torch::kFloat);
  }

  // A batch on the device the model computes on (the loader builds it in host memory).
  at::Tensor OnDevice(const at::Tensor& tensor) const {
    return device_.is_cpu() ? tensor : tensor.to(device_, /*non_blocking=*/false);
  }
  data::Columns OnDevice(const data::Columns& batch) const {
    if (device_.is_cpu()) return batch;
    data::Columns moved = batch;
    for (data::Column& column : moved) column.values = OnDevice(column.values);
    return moved;
  }

  // Accelerate's autocast for the loop's precision (bf16 or fp16), on the device the model
  // computes on, in `region` (which the caller scopes); none without mixed precision.
  void EnterAutocast(std::optional<AutocastRegion>& region) const {
    switch (loop_.mixed_precision) {
      case plan::MixedPrecision::no:
        return;
      case plan::MixedPrecision::bf16:
        region.emplace(device_.type(), at::kBFloat16, loop_.autocast.enabled, loop_.autocast.cache_enabled);
        return;
      case plan::MixedPrecision::fp16:
        region.emplace(device_.type(), at::kHalf, loop_.autocast.enabled, loop_.autocast.cache_enabled);
        return;
    }
  }



  // The loss of `output` against `targets`, after checking that they fit each other.
  torch::Tensor Losses(const torch::Tensor& output, const at::Tensor& targets,
                       torch::Reduction::Reduction reduction) {
    if (loop_.loss == plan::Loss::cross_entropy) {
      if (targets.scalar_type() != torch::kLong || targets.dim() != 1) {
        throw std::invalid_argument("cross_entropy needs one integer class index per sample");
      }
      if (output.dim() != 2) {
        throw std::invalid_argument("cross_entropy needs the model to return [batch, classes] logits, not " +
                                    c10::str(output.sizes()));
      }
      torch::Tensor out_of_range = (targets < 0).logical_or(targets >= output.size(1));
      if (out_of_range.any().item<bool>()) {
        throw std::invalid_argument("a class index is outside [0, " + std::to_string(output.size(1)) +
                                    "): the model has " + std::to_string(output.size(1)) + " outputs");
      }
      return at::cross_entropy_loss(output, targets, {}, reduction, /*ignore_index=*/-100,
                                    /*label_smoothing=*/0.0);
    }
    if (output.sizes() != targets.sizes()) {
      throw std::invalid_argument("the model returned predictions of shape " + c10::str(output.sizes()) +
                                  " for targets of shape " + c10::str(targets.sizes()) +
                                  "; match the model's outputs to the data's target columns");
    }
    return torch::mse_loss(output, targets, reduction);
  }

  double ClipGradNorm(double max_norm) override {
    std::vector<torch::Tensor> parameters;
    for (const auto& [name, tensor] : model_->Parameters()) parameters.push_back(tensor);
    return torch::nn::utils::clip_grad_norm_(parameters, max_norm);
  }

  // Whole gradients: after the data-parallel reduction every rank holds the same ones.
  bool UnscaleGradients(double inv_scale) override {
    std::vector<at::Tensor> gradients;
    for (const auto& [name, tensor] : model_->Parameters())
      if (tensor.grad().defined()) gradients.push_back(tensor.grad());
    return UnscaleAndFindNonFinite(gradients, inv_scale);
  }

  void SetLearningRate(double lr) override {
    for (torch::optim::OptimizerParamGroup& group : optimizer_->param_groups()) group.options().set_lr(lr);
  }
  double learning_rate() const override { return optimizer_->param_groups().at(0).options().get_lr(); }

  void OptimizerStep(bool skip) override {
    if (!skip) optimizer_->step();
    // Freed (set to None), PyTorch's default: the next backward allocates them afresh.
    optimizer_->zero_grad();
  }

  std::vector<std::pair<std::string, at::Tensor>> NamedParameters() const override {
    std::vector<std::pair<std::string, at::Tensor>> named;
    for (auto& [name, tensor] : model_->Parameters()) named.emplace_back(name, tensor);
    return named;
  }
  std::vector<std::pair<std::string, at::Tensor>> NamedBuffers() const override {
    std::vector<std::pair<std::string, at::Tensor>> named;
    for (auto& [name, tensor] : model_->Buffers()) named.emplace_back(name, tensor);
    return named;
  }

  OptimizerState ExportOptimizerState() const override {
    return train::ExportOptimizerState(*optimizer_, type_, model_->Parameters());
  }
  void ImportOptimizerState(const OptimizerState& in) override {
    train::ImportOptimizerState(in, type_, model_->Parameters(), *optimizer_);
  }

  ModuleNode Modules() const override { return model_->Modules(ParameterIndex()); }
  std::vector<std::vector<size_t>> ForwardBlocks() const override {
    std::map<std::string, size_t> index = ParameterIndex();
    std::vector<std::vector<size_t>> blocks;
    for (const std::vector<std::string>& prefixes : model_->BlockPrefixes()) {
      std::vector<size_t>& block = blocks.emplace_back();
      for (const auto& [name, i] : index) {
        for (const std::string& prefix : prefixes) {
          if (prefix.empty() || name == prefix || name.rfind(prefix + ".", 0) == 0) {
            block.push_back(i);
            break;
          }
        }
      }
      std::sort(block.begin(), block.end());
    }
    return blocks;
  }
  void SetForwardGate(ForwardGate* gate) override { model_->SetGate(gate); }
  std::vector<int> TensorParallelDims() const override {
    std::map<std::string, int> split = model_->SplitDims();
    if (split.empty()) return {};
    std::vector<int> dims;
    for (const auto& [name, tensor] : model_->Parameters())
      dims.push_back(split.count(name) != 0 ? split.at(name) : -1);
    return dims;
  }

 private:
  // Activation checkpointing: the blocks PlanRecomputation picks run again in backward.
  void Recompute(const plan::Sharding& sharding) {
    std::vector<std::pair<std::string, torch::Tensor>> named = model_->Parameters();
    std::vector<std::vector<size_t>> blocks = ForwardBlocks();
    Recomputation plan = PlanRecomputation(*this, sharding);
    std::vector<std::vector<torch::Tensor>> recomputed(blocks.size());
    for (size_t b = 0; b < blocks.size(); ++b) {
      if (!plan.blocks[b]) continue;
      for (size_t index : blocks[b]) recomputed[b].push_back(named[index].second);
    }
    model_->SetRecomputed(std::move(recomputed));
  }

  std::map<std::string, size_t> ParameterIndex() const {
    std::map<std::string, size_t> index;
    std::vector<std::pair<std::string, torch::Tensor>> named = model_->Parameters();
    for (size_t i = 0; i < named.size(); ++i) index.emplace(named[i].first, i);
    return index;
  }

  plan::TrainLoop loop_;
  std::unique_ptr<Model> model_;
  std::string type_;  // sgd, adam or adamw
  std::unique_ptr<torch::optim::Optimizer> optimizer_;
  // Where the model computes (autocast's device type, where batches go); a shapes-only model
  // will compute on the CPU, where its bytes arrive.
  c10::Device device_{c10::kCPU};
};

}  // namespace

std::unique_ptr<Trainer> MakeTrainer(const plan::BuildModel& model, const plan::TrainLoop& loop,
                                     const TensorParallelism& tp, InitialWeights weights, c10::Device device) {
  return std::make_unique<TorchTrainer>(model, loop, tp, weights, device);
}

std::string CheckScriptedModelTakes(const plan::TorchScript& model, int64_t features) {
  torch::jit::Module module;
  try {
    module = torch::jit::load(model.path, c10::Device(c10::kMeta));
  } catch (const std::exception&) {
    return "";  // the trainer loads it again and says why it cannot
  }
  module.eval();
  try {
    torch::NoGradGuard no_grad;
    module.forward({at::empty({2, features}, at::TensorOptions().device(c10::kMeta).dtype(at::kFloat))});
  } catch (const std::exception& error) {
    ErrorText text = SplitErrorText(error.what());
    // An operation without a meta kernel says nothing about the data.
    bool meta = text.cause.find("meta") != std::string::npos || text.cause.find("Meta") != std::string::npos;
    if (meta) return "";
    return fmt::format("the TorchScript model {} does not take this data's rows of {} features: {}{}",
                       model.path, features, text.cause, text.details);
  }
  return "";
}

}  // namespace accel::rt::train
