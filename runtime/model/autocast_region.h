#ifndef ACCEL_RUNTIME_MODEL_AUTOCAST_REGION_H_
#define ACCEL_RUNTIME_MODEL_AUTOCAST_REGION_H_

#include <ATen/autocast_mode.h>

namespace accel::rt::train {

// `torch.autocast(device_type, dtype=dtype, **AutocastKwargs)` for one forward pass: sets the
// device's autocast state, restores the previous one and, leaving the outermost region, drops
// the cast cache.
class AutocastRegion {
 public:
  AutocastRegion(c10::DeviceType device, at::ScalarType dtype, bool enabled, bool cache_enabled)
      : device_(device),
        was_enabled_(at::autocast::is_autocast_enabled(device)),
        was_dtype_(at::autocast::get_autocast_dtype(device)),
        was_cache_enabled_(at::autocast::is_autocast_cache_enabled()) {
    at::autocast::set_autocast_enabled(device, enabled);
    at::autocast::set_autocast_dtype(device, dtype);
    at::autocast::set_autocast_cache_enabled(cache_enabled);
    at::autocast::increment_nesting();
  }
  ~AutocastRegion() {
    if (at::autocast::decrement_nesting() == 0) at::autocast::clear_cache();
    at::autocast::set_autocast_enabled(device_, was_enabled_);
    at::autocast::set_autocast_dtype(device_, was_dtype_);
    at::autocast::set_autocast_cache_enabled(was_cache_enabled_);
  }
  AutocastRegion(const AutocastRegion&) = delete;
  AutocastRegion& operator=(const AutocastRegion&) = delete;

 private:
  c10::DeviceType device_;
  bool was_enabled_;
  at::ScalarType was_dtype_;
  bool was_cache_enabled_;
};

}  // namespace accel::rt::train

#endif  // ACCEL_RUNTIME_MODEL_AUTOCAST_REGION_H_
