#ifndef ACCEL_TESTS_SUPPORT_PEAK_MEMORY_H_
#define ACCEL_TESTS_SUPPORT_PEAK_MEMORY_H_

#include <c10/core/Allocator.h>
#include <c10/util/ThreadLocalDebugInfo.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <utility>

namespace accel::testing {

// The most bytes c10's CPU allocator had handed out at once while `body` ran on this thread
// (memory freed there that was allocated before counts against it). The allocator reports
// through the profiler's per-thread hook, so ranks that are threads of one process are measured
// apart.
template <typename Body>
int64_t PeakAllocatedBytes(Body&& body) {
  struct PeakMemory final : c10::MemoryReportingInfoBase {
    void reportMemoryUsage(void* /*ptr*/, int64_t size, size_t /*total_allocated*/, size_t /*total_reserved*/,
                           c10::Device /*device*/) override {
      live += size;
      peak = std::max(peak, live);
    }
    bool memoryProfilingEnabled() const override { return true; }
    int64_t live = 0;
    int64_t peak = 0;
  };
  auto memory = std::make_shared<PeakMemory>();
  {
    c10::DebugInfoGuard guard(c10::DebugInfoKind::PROFILER_STATE, memory);
    std::forward<Body>(body)();
  }
  return memory->peak;
}

}  // namespace accel::testing

#endif  // ACCEL_TESTS_SUPPORT_PEAK_MEMORY_H_
