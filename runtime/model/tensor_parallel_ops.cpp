#include "runtime/model/tensor_parallel_ops.h"

#include <ATen/ATen.h>
#include <torch/csrc/autograd/custom_function.h>

#include <cstdint>
#include <stdexcept>

#include <fmt/format.h>

#include "runtime/model/test_fault.h"

namespace accel::rt::train {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

// The sum over the group, in float32 for half-precision tensors, as a tensor of its own.
at::Tensor SumOver(const at::Tensor& tensor, distributed::Collectives& group) {
  std::vector<at::Tensor> sum{tensor.to(at::kFloat).contiguous().clone()};
  group.AllReduceSum(sum);
  return sum[0].to(tensor.scalar_type());
}

// The group travels through the autograd context as its address: custom functions keep only
// IValues, and the group outlives every graph built over it (it is the worker's).
distributed::Collectives& GroupAt(int64_t address) {
  return *reinterpret_cast<distributed::Collectives*>(static_cast<intptr_t>(address));
}
int64_t AddressOf(distributed::Collectives& group) {
  return static_cast<int64_t>(reinterpret_cast<intptr_t>(&group));
}

struct CopyToGroup : public torch::autograd::Function<CopyToGroup> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& input, int64_t group, bool reduce) {
    ctx->saved_data["group"] = group;
    ctx->saved_data["reduce"] = reduce;
    return input.clone();
  }
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    at::Tensor grad = grads[0];
    if (ctx->saved_data["reduce"].toBool()) grad = SumOver(grad, GroupAt(ctx->saved_data["group"].toInt()));
    return {grad, at::Tensor(), at::Tensor()};
  }
};

struct ReduceFromGroup : public torch::autograd::Function<ReduceFromGroup> {
  static at::Tensor forward(AutogradContext*, const at::Tensor& input, int64_t group) {
    return SumOver(input, GroupAt(group));
  }
  static variable_list backward(AutogradContext*, variable_list grads) { return {grads[0], at::Tensor()}; }
};

}  // namespace

at::Tensor CopyToTensorParallel(const at::Tensor& input, distributed::Collectives& group) {
  static const bool skip = TestFaultFromEnvironment() == TestFault::kTpBackward;
  return CopyToGroup::apply(input, AddressOf(group), !skip);
}

at::Tensor ReduceFromTensorParallel(const at::Tensor& input, distributed::Collectives& group) {
  return ReduceFromGroup::apply(input, AddressOf(group));
}

at::Tensor TensorParallelSlice(const at::Tensor& whole, int dim, int index, int count) {
  const int64_t size = whole.size(dim);
  if (size % count != 0) {
    throw std::invalid_argument(fmt::format(
        "a dimension of {} cannot be split evenly over {} tensor-parallel ranks: make each Linear pair's "
        "inner width a multiple of tp_size",
        size, count));
  }
  const int64_t part = size / count;
  return whole.narrow(dim, part * index, part).clone();
}

}  // namespace accel::rt::train
