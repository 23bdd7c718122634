#ifndef ACCEL_RUNTIME_MODEL_NAMED_INPUTS_H_
#define ACCEL_RUNTIME_MODEL_NAMED_INPUTS_H_

#include <string>
#include <vector>

#include <torch/script.h>

#include "compiler/plan/plan.h"
#include "runtime/data/dataset.h"
#include "runtime/model/trainer.h"

// A TorchScript model that computes its own loss from a batch of named columns, as Hugging Face
// models do: how the columns reach `forward` and how its loss comes back. Used by torch_trainer.cpp
// and scripted_model.cpp; errors are std::invalid_argument with one line a user can act on.
namespace accel::rt::train {

// Binds a batch's named columns to the inputs of a TorchScript module's `forward`, read from
// its schema: named tensor arguments (`forward(self, input_ids, attention_mask, labels=None)`),
// each column feeding the argument of its input name, or one `Dict[str, Tensor]` argument keyed
// by input name. A column's input name is its own unless `renames` maps it.
class InputBinder {
 public:
  // Reads the schema of `module`'s forward. Throws std::invalid_argument for a module without
  // a forward method.
  InputBinder(const torch::jit::Module& module, std::vector<plan::InputBinding> renames);

  // forward's inputs as Python writes them: `forward(input_ids: Tensor, labels: Optional[Tensor] = None)`.
  const std::string& signature() const { return signature_; }

  // Throws std::invalid_argument, naming the column, the input and the signature, when
  // `columns` cannot feed forward: a column whose input forward does not take, a required
  // input no column feeds, two columns for one input, a rename of a column the batch lacks,
  // an input that is not a tensor.
  void Check(const data::Columns& columns) const;

  // forward(columns): call Check first. Throws what forward throws.
  torch::jit::IValue Call(torch::jit::Module& module, const data::Columns& columns) const;

 private:
  struct Input {
    std::string name;
    std::string type;  // Python's annotation: `Tensor`, `Optional[Tensor]`
    bool tensor = false;
    bool required = false;
  };
  // The input `column` feeds.
  std::string InputOf(const std::string& column) const;
  std::string ColumnList(const data::Columns& columns) const;

  std::vector<plan::InputBinding> renames_;
  std::vector<Input> inputs_;
  bool takes_dict_ = false;
  std::string signature_;
};

// The loss and metrics of what forward returned: a tensor (the loss), a dict with `loss` (its
// other 0-dim tensors are metrics; its `logits` are kept for evaluation; other larger tensors
// are ignored), or a tuple
// or list whose first element is the loss. The loss must hold one floating value; it becomes
// a float32 0-dim tensor that keeps its autograd graph. Throws std::invalid_argument saying
// what forward returned and what is expected, naming `signature`.
ModelOutputs ReadModelOutputs(const torch::jit::IValue& output, const std::string& signature);

}  // namespace accel::rt::train

#endif  // ACCEL_RUNTIME_MODEL_NAMED_INPUTS_H_
