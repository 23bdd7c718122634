#ifndef ACCEL_TESTS_SUPPORT_PEAK_MEMORY_H_
#define ACCEL_TESTS_SUPPORT_PEAK_MEMORY_H_

#include <ATen/ATen.h>
#include <c10/core/Allocator.h>
#include <c10/core/CPUAllocator.h>
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

// The bytes c10's CPU allocator holds in this whole process, every thread's: with
// FLAGS_caffe2_report_cpu_memory_usage set (ProcessAllocationsCounted), the allocator keeps one
// running total, which it reports with each allocation of a thread that listens. Counts what
// was allocated since the flag was set.
inline int64_t ProcessAllocatedBytes() {
  struct Probe final : c10::MemoryReportingInfoBase {
    void reportMemoryUsage(void* /*ptr*/, int64_t size, size_t total_allocated, size_t /*total_reserved*/,
                           c10::Device /*device*/) override {
      if (size > 0) held = static_cast<int64_t>(total_allocated) - size;  // less the probe itself
    }
    bool memoryProfilingEnabled() const override { return true; }
    int64_t held = 0;
  };
  auto probe = std::make_shared<Probe>();
  {
    c10::DebugInfoGuard guard(c10::DebugInfoKind::PROFILER_STATE, probe);
    at::Tensor one = at::empty({1}, at::kFloat);
  }
  return probe->held;
}

// While alive, the CPU allocator counts every thread's allocations (ProcessAllocatedBytes).
class ProcessAllocationsCounted {
 public:
  ProcessAllocationsCounted() : before_(FLAGS_caffe2_report_cpu_memory_usage) {
    FLAGS_caffe2_report_cpu_memory_usage = true;
  }
  ~ProcessAllocationsCounted() { FLAGS_caffe2_report_cpu_memory_usage = before_; }
  ProcessAllocationsCounted(const ProcessAllocationsCounted&) = delete;
  ProcessAllocationsCounted& operator=(const ProcessAllocationsCounted&) = delete;

 private:
  bool before_;
};

}  // namespace accel::testing

#endif  // ACCEL_TESTS_SUPPORT_PEAK_MEMORY_H_
