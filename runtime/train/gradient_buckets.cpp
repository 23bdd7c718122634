#include "runtime/train/gradient_buckets.h"

#include <ATen/ATen.h>

namespace accel::rt::train {

GradientBuckets::GradientBuckets(const std::vector<at::Tensor>& parameters, int64_t bucket_cap_bytes)
    : parameters_(parameters) {
  std::vector<int64_t> sizes;
  int64_t filled = 0;
  for (size_t i = parameters_.size(); i-- > 0;) {
    int64_t numel = parameters_[i].numel();
    int64_t bytes = numel * static_cast<int64_t>(sizeof(float));
    if (sizes.empty() || (filled > 0 && filled + bytes > bucket_cap_bytes)) {
      sizes.push_back(0);
      filled = 0;
    }
    slots_.push_back({i, sizes.size() - 1, sizes.back(), numel});
    sizes.back() += numel;
    filled += bytes;
  }
  for (int64_t size : sizes) buckets_.push_back(at::zeros({size}, at::kFloat));
}

void GradientBuckets::AverageGradients(dist::Collectives& collectives) {
  if (collectives.world_size() == 1) return;
  for (const Slot& slot : slots_) {
    at::Tensor view = buckets_[slot.bucket].narrow(0, slot.offset, slot.numel);
    const at::Tensor& grad = parameters_[slot.parameter].grad();
    if (grad.defined()) {
      view.copy_(grad.reshape({-1}));
    } else {
      view.zero_();
    }
  }
  collectives.AllReduceSum(buckets_);
  // Gloo has no AVG: divide once per bucket.
  double scale = 1.0 / collectives.world_size();
  for (at::Tensor& bucket : buckets_) bucket.mul_(scale);
  for (const Slot& slot : slots_) {
    at::Tensor& parameter = parameters_[slot.parameter];
    at::Tensor view = buckets_[slot.bucket].narrow(0, slot.offset, slot.numel).view(parameter.sizes());
    if (parameter.grad().defined()) {
      parameter.mutable_grad().copy_(view);
    } else {
      parameter.mutable_grad() = view.clone();
    }
  }
}

}  // namespace accel::rt::train
