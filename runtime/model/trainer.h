#ifndef ACCEL_RUNTIME_MODEL_TRAINER_H_
#define ACCEL_RUNTIME_MODEL_TRAINER_H_

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>

#include "compiler/plan/plan.h"
#include "runtime/data/dataset.h"

namespace accel::rt::distributed {
class Collectives;
}  // namespace accel::rt::distributed

namespace accel::rt::train {

// The optimizer's state keyed by parameter name (PyTorch keys it by position, LibTorch by
// tensor address: neither survives a change of model code), for checkpoints.
struct OptimizerState {
  // `sgd`, `adam` or `adamw`.
  std::string type;
  // The hyper-parameters of the one parameter group, named as PyTorch's `state_dict()` names
  // them: lr, momentum, dampening, weight_decay, nesterov (SGD); lr, betas, eps, weight_decay,
  // amsgrad (Adam, AdamW).
  llvm::json::Object hyperparameters;
  struct Parameter {
    std::string name;
    // State tensors by key (`momentum_buffer`; `exp_avg`, `exp_avg_sq`, `max_exp_avg_sq`).
    std::vector<std::pair<std::string, at::Tensor>> tensors;
    // Per-parameter counters (`step`).
    std::vector<std::pair<std::string, int64_t>> counters;
  };
  // Every parameter of the group, in order; a parameter the optimizer has not stepped yet has
  // neither tensors nor counters.
  std::vector<Parameter> parameters;
  // Whether the tensors are memory of their own that nothing else reads or writes (a load
  // builds them so): ImportOptimizerState then adopts them instead of copying each one.
  bool tensors_owned = false;
};

// Per-sample results of an evaluation batch.
struct Evaluation {
  at::Tensor losses;   // float32 [B]: the loss of each sample (mean over outputs for mse)
  at::Tensor correct;  // float32 [B] of 0/1 with cross_entropy (argmax == label); else undefined
};

// What a model that computes its own loss (from named columns) returned for one batch.
struct ModelOutputs {
  at::Tensor loss;  // float32, 0-dim; with its autograd graph in training
  // The other 0-dim tensors of a returned dict, by key (detached float32): the model's metrics.
  std::vector<std::pair<std::string, at::Tensor>> metrics;
  // A returned dict's `logits`, detached; undefined when it has none.
  at::Tensor logits;
};

// One module of the model, for the sharded engine's wrap policies (flat_units.h).
struct ModuleNode {
  // The module's state_dict prefix: "" for the model itself, `encoder.layers.0`.
  std::string path;
  // Its class: a built-in module's C++ class without namespace and `Impl` (`Linear`,
  // `TransformerEncoderLayer`), a TorchScript module's qualified type name
  // (`__torch__.model.Block`).
  std::string type;
  // Its own trainable parameters (not its children's), as indices into NamedParameters().
  std::vector<size_t> parameters;
  std::vector<ModuleNode> children;
};

// Called by the model's forward around each block it runs in sequence (the sharded engine's
// stage 3 gathers a unit's parameters before the block that reads them). A block's output
// passes through Leave, which may attach an autograd node that runs before the block's
// backward.
class ForwardGate {
 public:
  virtual ~ForwardGate() = default;
  virtual void Enter(size_t block) = 0;
  virtual at::Tensor Leave(size_t block, const at::Tensor& output) = 0;
};

// The model and its optimizer. Hides torch::nn, torch::jit and torch::optim (and their heavy
// headers) behind a small interface the worker drives.
class Trainer {
 public:
  virtual ~Trainer() = default;
  // The forward pass (under bf16 autocast when the loop asks for it, outputs cast back to
  // fp32 as Accelerate's prepared model does), the loss, and backward of loss × `loss_scale`
  // (Accelerate's `backward` divides by the accumulation steps). Gradients add up until
  // OptimizerStep() clears them. Returns this rank's unscaled loss.
  virtual float ForwardBackward(const at::Tensor& features, const at::Tensor& targets,
                                double loss_scale = 1.0) = 0;
  // The forward pass in evaluation mode (batch norm on running statistics), without gradients,
  // under the same autocast as training; the model returns to training mode afterwards.
  virtual Evaluation Evaluate(const at::Tensor& features, const at::Tensor& targets) = 0;
  // A batch of named columns (a TorchScript model that computes its own loss): forward with
  // each column bound to its input (plan::TorchScript::inputs), under autocast as above, and
  // backward of the loss it returned × `loss_scale`. Returns this rank's unscaled loss. Throws
  // std::invalid_argument for a model that does not take named columns or whose forward does
  // not return a loss (see CheckColumns).
  virtual float ForwardBackward(const data::Columns& batch, double loss_scale = 1.0) = 0;
  // The forward pass of named columns in evaluation mode, without gradients: the loss and
  // metrics the model returned.
  virtual ModelOutputs Evaluate(const data::Columns& batch) = 0;
  // Before the first step: checks that `sample` (a few rows of every column) binds to forward's
  // inputs and that one evaluation forward on it returns a loss, leaving no trace (evaluation
  // mode, no gradients). Throws std::invalid_argument naming the column, the input and
  // forward's signature: a name that does not bind, or what forward raised on these shapes.
  virtual void CheckColumns(const data::Columns& sample) = 0;
  // Scales the gradients so their global L2 norm is at most `max_norm` (clip_grad_norm_);
  // returns the norm before clipping.
  virtual double ClipGradNorm(double max_norm) = 0;
  // Multiplies the gradients by `inv_scale` (fp16 loss scaling) and returns whether any
  // gradient of the model was inf or NaN, on any rank that holds a part of it: collective where
  // ranks hold different parts (the sharded engine's shards, tensor-parallel slices), so that
  // every rank gets the same answer.
  virtual bool UnscaleGradients(double inv_scale) = 0;
  // The learning rate of the optimizer's parameter group (the scheduler sets it).
  virtual void SetLearningRate(double lr) = 0;
  virtual double learning_rate() const = 0;
  // Applies the optimizer to the current gradients unless `skip` (an inf/NaN step under a
  // gradient scaler), then zeroes them: the loop's `optimizer.step(); optimizer.zero_grad()`.
  virtual void OptimizerStep(bool skip = false) = 0;
  // Parameters in registration order, named as PyTorch's state_dict names them (`0.weight`).
  virtual std::vector<std::pair<std::string, at::Tensor>> NamedParameters() const = 0;
  // Buffers (batch-norm statistics...) and frozen parameters by state_dict name: state that is
  // saved but not trained; DDP broadcasts the buffers from rank 0.
  virtual std::vector<std::pair<std::string, at::Tensor>> NamedBuffers() const = 0;
  // The optimizer's state. The tensors are the live state, not copies: they change with the
  // next OptimizerStep().
  virtual OptimizerState ExportOptimizerState() const = 0;
  // Replaces the optimizer's state and hyper-parameters by copies of `state` (as PyTorch's
  // `load_state_dict` does). Throws std::invalid_argument, changing nothing, when the type, the
  // parameter names, a tensor's shape or a key does not match this optimizer.
  virtual void ImportOptimizerState(const OptimizerState& state) = 0;

  // For the sharded engine (sharded_engine.h). The model's module tree.
  virtual ModuleNode Modules() const = 0;
  // The blocks forward runs in sequence, each as the indices into NamedParameters() of the
  // parameters it reads: one per Linear of an MLP; the input embedding, each encoder layer and
  // the head of the built-in transformer; the whole model for TorchScript, whose forward
  // LibTorch cannot interrupt between submodules.
  virtual std::vector<std::vector<size_t>> ForwardBlocks() const = 0;
  // Calls `gate` around every block of every later forward (training and evaluation); null
  // removes it. `gate` must outlive its use.
  virtual void SetForwardGate(ForwardGate* gate) = 0;
  // With tensor parallelism (tensor_parallel.h): per NamedParameters() entry, the dimension its
  // whole tensor is split along over the tensor-parallel group (0 rows, 1 columns), -1 for one
  // every rank holds whole. Empty without tensor parallelism.
  virtual std::vector<int> TensorParallelDims() const { return {}; }
};

// This rank's place in a tensor-parallel group, for MakeTrainer.
struct TensorParallelism {
  distributed::Collectives* group = nullptr;  // outlives the trainer
  int rank = 0;
  int size = 1;
};

// What a rank holds of the model's weights once it is built.
enum class InitialWeights {
  // Every value: built from the generator, or read from the TorchScript file.
  kValues,
  // Shapes only (weight_storage.h: no bytes), for a rank that receives rank 0's weights
  // (cpu_ram_efficient_loading). A built-in model is still built from the generator, so the
  // generator ends where rank 0's does, but each top-level module drops its bytes as soon as it
  // is built (an MLP's Linears one by one); a TorchScript file is loaded onto the meta device,
  // one tensor in memory at a time. Buffers too hold no bytes. A TorchScript module with
  // tensor attributes that are neither parameters nor buffers has nothing to receive them by,
  // and one with tied weights would be untied, so such a module loads its values as kValues
  // does.
  kShapesOnly,
};

// Builds the model described by `model` (an MLP initialized from the global torch generator, so
// the caller seeds first, or a TorchScript file) and the optimizer, loss and precision of
// `loop`. Throws std::invalid_argument for a model kind, loss or optimizer this runtime does
// not know and for a TorchScript file that does not load or has no trainable parameters.
// With `tp` (size > 1) the built-in MLP is built whole from the generator, then keeps this
// rank's slices: each pair of consecutive Linears split column- then row-wise (a last Linear
// without a partner stays whole); other models are refused (std::invalid_argument). `weights`
// kShapesOnly with `tp` is a std::logic_error: the slices are cut from the values.
// `device`: where the model computes. It is built on the CPU (the same weights as a CPU run)
// and moved there; every batch is moved there before forward. Shapes only need the CPU (a
// std::logic_error otherwise).
std::unique_ptr<Trainer> MakeTrainer(const plan::BuildModel& model, const plan::TrainLoop& loop,
                                     const TensorParallelism& tp = {},
                                     InitialWeights weights = InitialWeights::kValues,
                                     c10::Device device = c10::kCPU);

// Whether a TorchScript model fed one tensor takes rows of `features` values: the module is
// loaded on the meta device (no weight is read) and runs one forward pass on a meta batch, so
// a model that does not fit the data fails in moments, by its cause and traceback. Returns the
// error, or "" when the forward pass runs, or when the check cannot tell (a file that does not
// load, whose error the trainer gives; an operation without a meta kernel).
std::string CheckScriptedModelTakes(const plan::TorchScript& model, int64_t features);

}  // namespace accel::rt::train

#endif  // ACCEL_RUNTIME_MODEL_TRAINER_H_
