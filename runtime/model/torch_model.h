#ifndef ACCEL_RUNTIME_MODEL_TORCH_MODEL_H_
#define ACCEL_RUNTIME_MODEL_TORCH_MODEL_H_

// Inside runtime/model only: the torch::nn and torch::jit modules behind a Trainer. Included by
// the three TUs that build and drive them (torch_trainer.cpp, builtin_models.cpp,
// scripted_model.cpp), the runtime's only users of <torch/torch.h> besides optimizer_state.cpp.
#include <torch/script.h>
#include <torch/torch.h>

#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "compiler/plan/plan.h"
#include "runtime/model/recompute.h"
#include "runtime/model/trainer.h"

namespace accel::rt::train {

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
  // The gate around a forward of named columns and on the loss it returned: a TorchScript
  // model's one block. The built-in models take no columns, so nothing to gate.
  virtual void EnterColumns() {}
  virtual torch::Tensor LeaveColumns(const torch::Tensor& loss) { return loss; }
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

inline std::string JoinPath(const std::string& prefix, const std::string& name) {
  return prefix.empty() ? name : prefix + "." + name;
}

// The built-in models (builtin_models.cpp) and a TorchScript file's (scripted_model.cpp); each
// throws std::invalid_argument as MakeTrainer says.
std::unique_ptr<Model> MakeMlpModel(const plan::MLP& spec, const TensorParallelism& tp, bool shapes_only);
std::unique_ptr<Model> MakeTransformerModel(const plan::Transformer& spec, const TensorParallelism& tp,
                                            bool shapes_only);
std::unique_ptr<Model> MakeScriptedModel(const plan::TorchScript& spec, bool shapes_only);

}  // namespace accel::rt::train

#endif  // ACCEL_RUNTIME_MODEL_TORCH_MODEL_H_
