#ifndef ACCEL_RUNTIME_MODEL_TENSOR_PARALLEL_OPS_H_
#define ACCEL_RUNTIME_MODEL_TENSOR_PARALLEL_OPS_H_

#include <ATen/core/Tensor.h>

#include "runtime/distributed/collectives.h"

// The pieces a built-in model is split with under tensor parallelism; the mesh and the wrapper
// that gathers whole state are the engine's (runtime/engine/tensor_parallel.h).
namespace accel::rt::train {

// Megatron's two communication operators, as autograd functions over the tensor-parallel
// group (every call bounded by the group's timeout):
//   CopyToTensorParallel     before a column-parallel Linear: identity forward, the input's
//                            gradient all-reduced (summed) in backward;
//   ReduceFromTensorParallel after a row-parallel Linear: the partial outputs all-reduced
//                            (summed) forward, identity backward.
// Half-precision tensors are summed in float32 and rounded once (Gloo reduces no bfloat16).
at::Tensor CopyToTensorParallel(const at::Tensor& input, distributed::Collectives& group);
at::Tensor ReduceFromTensorParallel(const at::Tensor& input, distributed::Collectives& group);

// Slice `index` of `count` equal slices of `whole` along `dim`, as a tensor of its own. Throws
// std::invalid_argument when `count` does not divide that dimension.
at::Tensor TensorParallelSlice(const at::Tensor& whole, int dim, int index, int count);

}  // namespace accel::rt::train

#endif  // ACCEL_RUNTIME_MODEL_TENSOR_PARALLEL_OPS_H_
