#ifndef ACCEL_RUNTIME_TRAIN_GRADIENT_ACCUMULATION_H_
#define ACCEL_RUNTIME_TRAIN_GRADIENT_ACCUMULATION_H_

#include <cstdint>
#include <stdexcept>

// GradientAccumulationPlugin's semantics (catalog §3.3): when a micro-batch ends an
// accumulation cycle (gradients are synchronized and the optimizer steps) and when the
// data-parallel all-reduce may be skipped. Torch-free; the training loop asks it per batch.
namespace accel::rt::train {

struct GradientAccumulationSpec {
  int64_t num_steps = 1;             // `None` → 1
  bool sync_with_dataloader = true;  // end the cycle at the dataloader's last batch
  bool sync_each_batch = false;      // all-reduce on every micro-batch anyway (less memory)
};

class GradientAccumulation {
 public:
  // Throws std::invalid_argument for num_steps < 1 (Accelerate would divide by zero, GA-004).
  explicit GradientAccumulation(GradientAccumulationSpec spec);

  // Enters the `accumulate()` block for the next micro-batch; `last_batch_of_dataloader` says
  // the dataloader has just yielded its final batch. Returns sync_gradients: the counter
  // reached a multiple of num_steps, or (with sync_with_dataloader) the data ran out, which
  // also resets the counter so the next epoch starts a fresh cycle.
  bool Begin(bool last_batch_of_dataloader);

  bool sync_gradients() const { return sync_gradients_; }
  // Whether this micro-batch's backward pass must all-reduce gradients (outside `no_sync`).
  bool all_reduce_gradients() const { return sync_gradients_ || spec_.sync_each_batch; }
  int64_t step() const { return step_; }
  // Restores the counter (resume mid-cycle).
  void set_step(int64_t step) { step_ = step; }

 private:
  GradientAccumulationSpec spec_;
  int64_t step_ = 0;
  bool sync_gradients_ = true;
};

}  // namespace accel::rt::train

#endif  // ACCEL_RUNTIME_TRAIN_GRADIENT_ACCUMULATION_H_
