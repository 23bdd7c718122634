// The built-in models: an MLP and a small Transformer encoder, as torch::nn modules.
#include "runtime/model/torch_model.h"

#include <map>
#include <stdexcept>

#include "runtime/model/tensor_parallel_ops.h"
#include "runtime/model/test_fault.h"
#include "runtime/model/weight_storage.h"
#include "runtime/support/progress.h"

namespace accel::rt::train {
namespace {

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
  // Every built-in module passes here once its weights are created: on a busy machine a large
  // model's take longer than the collective timeout, so each says that the rank is at work.
  progress::StillWorking();
  if (drop) {
    for (const torch::Tensor& tensor : module->parameters()) ReleaseBytes(tensor);
    for (const torch::Tensor& tensor : module->buffers()) ReleaseBytes(tensor);
  }
  return module;
}
torch::Tensor BytesDroppedIf(bool drop, torch::Tensor tensor) {
  progress::StillWorking();
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

}  // namespace

std::unique_ptr<Model> MakeMlpModel(const plan::MLP& spec, const TensorParallelism& tp, bool shapes_only) {
  return std::make_unique<MlpModel>(spec, tp, shapes_only);
}

std::unique_ptr<Model> MakeTransformerModel(const plan::Transformer& spec, const TensorParallelism& tp,
                                            bool shapes_only) {
  return std::make_unique<BuiltInTransformer>(spec, tp, shapes_only);
}

}  // namespace accel::rt::train
