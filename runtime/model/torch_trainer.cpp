// MakeTrainer: the Trainer over a torch_model.h model (the loss, backward, autocast, clipping and
// the optimizer). Apart from trainer.h, so that the interface the other files include does not
// include them back.
#include "runtime/model/trainer.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <map>
#include <optional>
#include <sstream>
#include <stdexcept>

#include "runtime/model/activation_checkpointing.h"
#include "runtime/model/autocast_region.h"
#include "runtime/model/error_text.h"
#include "runtime/model/loss_scaler.h"
#include "runtime/model/named_inputs.h"
#include "runtime/model/optimizer_factory.h"
#include "runtime/model/optimizer_state.h"
#include "runtime/model/torch_model.h"
#include "runtime/model/weight_storage.h"
#include "runtime/tensor/scalar_type.h"

namespace accel::rt::train {
namespace {

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
                           return MakeMlpModel(m, tp, shapes_only);
                         },
                         [&](const plan::Transformer& m) -> std::unique_ptr<Model> {
                           return MakeTransformerModel(m, tp, shapes_only);
                         },
                         [&](const plan::TorchScript& m) -> std::unique_ptr<Model> {
                           refuse_tp("a TorchScript model carries none (Accelerate requires a `tp_plan`)");
                           return MakeScriptedModel(m, shapes_only);
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
    model_->EnterColumns();
    ModelOutputs outputs;
    {
      std::optional<AutocastRegion> autocast;
      EnterAutocast(autocast);
      outputs = ReadModelOutputs(model_->ForwardColumns(OnDevice(batch)), model_->Signature());
    }
    outputs.loss = model_->LeaveColumns(outputs.loss);
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

}  // namespace accel::rt::train
