#ifndef ACCEL_RUNTIME_TRAIN_CPU_AUTOCAST_H_
#define ACCEL_RUNTIME_TRAIN_CPU_AUTOCAST_H_

#include <ATen/autocast_mode.h>

namespace accel::rt::train {

// `torch.autocast("cpu", dtype=torch.bfloat16, **AutocastKwargs)` for one forward pass:
// restores the previous settings and, leaving the outermost region, drops the cast cache.
class CpuAutocast {
 public:
  CpuAutocast(bool enabled, bool cache_enabled)
      : was_enabled_(at::autocast::is_cpu_enabled()),
        was_dtype_(at::autocast::get_autocast_cpu_dtype()),
        was_cache_enabled_(at::autocast::is_autocast_cache_enabled()) {
    at::autocast::set_cpu_enabled(enabled);
    at::autocast::set_autocast_cpu_dtype(at::kBFloat16);
    at::autocast::set_autocast_cache_enabled(cache_enabled);
    at::autocast::increment_nesting();
  }
  ~CpuAutocast() {
    if (at::autocast::decrement_nesting() == 0) at::autocast::clear_cache();
    at::autocast::set_cpu_enabled(was_enabled_);
    at::autocast::set_autocast_cpu_dtype(was_dtype_);
    at::autocast::set_autocast_cache_enabled(was_cache_enabled_);
  }
  CpuAutocast(const CpuAutocast&) = delete;
  CpuAutocast& operator=(const CpuAutocast&) = delete;

 private:
  bool was_enabled_;
  at::ScalarType was_dtype_;
  bool was_cache_enabled_;
};

}  // namespace accel::rt::train

#endif  // ACCEL_RUNTIME_TRAIN_CPU_AUTOCAST_H_
