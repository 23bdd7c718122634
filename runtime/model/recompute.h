#ifndef ACCEL_RUNTIME_MODEL_RECOMPUTE_H_
#define ACCEL_RUNTIME_MODEL_RECOMPUTE_H_

#include <cstddef>
#include <vector>

#include <ATen/core/Tensor.h>

// Activation checkpointing's mechanism: a block of forward that keeps only its input, and
// runs again in backward to get its gradients (torch.utils.checkpoint, as FSDP's
// checkpoint_wrapper applies it to each wrapped module).
namespace accel::rt::train {

// A model whose forward runs in numbered blocks, each a function of the previous block's
// output and the model's parameters.
class BlockForward {
 public:
  virtual ~BlockForward() = default;
  // Block `block` of forward on `input`: deterministic (no dropout draws), so that running it
  // again gives the same activations.
  virtual at::Tensor ComputeBlock(size_t block, const at::Tensor& input) = 0;
};

// Block `block` of `model` on `input`, with autograd keeping only `input`: its backward runs
// the block again (under the autocast settings of this call) and differentiates that, giving
// the gradients of `input` and of `parameters` (the trainable parameters the block reads, each
// of which then gets its gradient through its own accumulator, as without recomputation).
// `model` must outlive the backward pass.
at::Tensor RecomputeInBackward(BlockForward& model, size_t block, const at::Tensor& input,
                               const std::vector<at::Tensor>& parameters);

}  // namespace accel::rt::train

#endif  // ACCEL_RUNTIME_MODEL_RECOMPUTE_H_
