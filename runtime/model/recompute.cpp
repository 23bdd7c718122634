#include "runtime/model/recompute.h"

#include <ATen/autocast_mode.h>
#include <torch/csrc/autograd/autograd.h>
#include <torch/csrc/autograd/custom_function.h>

#include "runtime/model/autocast_region.h"

namespace accel::rt::train {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

// Forward runs without a graph (Function::apply turns gradients off inside forward); backward
// builds the block's graph again and differentiates it on the spot. The model is passed as a
// pointer, as saved_data holds no C++ objects; the caller keeps it alive.
struct Recomputed : public torch::autograd::Function<Recomputed> {
  static at::Tensor forward(AutogradContext* context, const at::Tensor& input, BlockForward* model,
                            int64_t block, at::TensorList parameters) {
    context->saved_data["model"] = reinterpret_cast<int64_t>(model);
    context->saved_data["block"] = block;
    // Backward runs outside forward's autocast region: the block must run again under it, on
    // the device the block computes on, in its dtype (bf16 or fp16).
    const c10::DeviceType device = input.device().type();
    context->saved_data["device"] = static_cast<int64_t>(device);
    context->saved_data["autocast"] = at::autocast::is_autocast_enabled(device);
    context->saved_data["autocast_dtype"] = static_cast<int64_t>(at::autocast::get_autocast_dtype(device));
    context->saved_data["autocast_cache"] = at::autocast::is_autocast_cache_enabled();
    variable_list saved{input};
    saved.insert(saved.end(), parameters.begin(), parameters.end());
    context->save_for_backward(saved);
    return model->ComputeBlock(static_cast<size_t>(block), input);
  }

  // One gradient per forward argument: the input's, none for the model and the block, then
  // one per parameter.
  static variable_list backward(AutogradContext* context, variable_list gradients) {
    variable_list saved = context->get_saved_variables();
    variable_list result(saved.size() + 2);
    if (!gradients[0].defined()) return result;
    // Gradient edges count tensors only: the input is edge 0, parameter i is edge i + 1.
    at::Tensor input = saved[0].detach();
    input.set_requires_grad(context->needs_input_grad(0));
    variable_list with_respect_to;
    std::vector<size_t> slots;  // where each of with_respect_to's gradients goes in `result`
    if (input.requires_grad()) {
      with_respect_to.push_back(input);
      slots.push_back(0);
    }
    for (size_t i = 1; i < saved.size(); ++i) {
      if (!context->needs_input_grad(i)) continue;
      with_respect_to.push_back(saved[i]);
      slots.push_back(i + 2);
    }
    if (with_respect_to.empty()) return result;
    at::Tensor output;
    {
      at::AutoGradMode grad_mode(true);
      AutocastRegion autocast(static_cast<c10::DeviceType>(context->saved_data["device"].toInt()),
                              static_cast<at::ScalarType>(context->saved_data["autocast_dtype"].toInt()),
                              context->saved_data["autocast"].toBool(),
                              context->saved_data["autocast_cache"].toBool());
      auto* model = reinterpret_cast<BlockForward*>(context->saved_data["model"].toInt());
      output = model->ComputeBlock(static_cast<size_t>(context->saved_data["block"].toInt()), input);
    }
    variable_list grads = torch::autograd::grad({output}, with_respect_to, {gradients[0]},
                                                /*retain_graph=*/false, /*create_graph=*/false,
                                                /*allow_unused=*/true);
    for (size_t k = 0; k < grads.size(); ++k) result[slots[k]] = grads[k];
    return result;
  }
};

}  // namespace

at::Tensor RecomputeInBackward(BlockForward& model, size_t block, const at::Tensor& input,
                               const std::vector<at::Tensor>& parameters) {
  return Recomputed::apply(input, &model, static_cast<int64_t>(block), at::TensorList(parameters));
}

}  // namespace accel::rt::train
