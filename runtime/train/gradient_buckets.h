#ifndef ACCEL_RUNTIME_TRAIN_GRADIENT_BUCKETS_H_
#define ACCEL_RUNTIME_TRAIN_GRADIENT_BUCKETS_H_

#include <cstdint>
#include <vector>

#include <ATen/core/Tensor.h>

#include "runtime/dist/collectives.h"

namespace accel::rt::train {

// Data-parallel gradient averaging with DDP's bucketing: parameters are grouped, in reverse
// order (the order backward produces their gradients), into flat fp32 buckets of at most
// `bucket_cap_bytes` (a parameter larger than the cap gets a bucket of its own). Buckets are
// allocated once and reused every step.
class GradientBuckets {
 public:
  GradientBuckets(const std::vector<at::Tensor>& parameters, int64_t bucket_cap_bytes);

  // Replaces every parameter's gradient by its mean over all ranks: copy into the buckets,
  // all-reduce them together, scale by 1/world_size, copy back. Collective. A parameter
  // without a gradient contributes zeros (and receives the mean).
  void AverageGradients(dist::Collectives& collectives);

  size_t bucket_count() const { return buckets_.size(); }

 private:
  struct Slot {
    size_t parameter;
    size_t bucket;
    int64_t offset;
    int64_t numel;
  };
  std::vector<at::Tensor> parameters_;
  std::vector<at::Tensor> buckets_;
  std::vector<Slot> slots_;
};

}  // namespace accel::rt::train

#endif  // ACCEL_RUNTIME_TRAIN_GRADIENT_BUCKETS_H_
