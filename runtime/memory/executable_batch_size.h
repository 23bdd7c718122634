#ifndef ACCEL_RUNTIME_MEMORY_EXECUTABLE_BATCH_SIZE_H_
#define ACCEL_RUNTIME_MEMORY_EXECUTABLE_BATCH_SIZE_H_

#include <cstdint>
#include <exception>
#include <functional>
#include <stdexcept>
#include <string>
#include <type_traits>

// `find_executable_batch_size` (catalog §6.3): run a function with a batch size, and on an
// out-of-memory error retry with a smaller one until it fits.
namespace accel::rt::memory {

// What counts as running out of memory, as Accelerate decides it: an error (not
// std::bad_alloc, which is Python's MemoryError and does not count) whose message contains
// ` out of memory.` (CUDA, HIP, XPU), `cuDNN error: CUDNN_STATUS_NOT_SUPPORTED.`,
// `DefaultCPUAllocator: can't allocate memory` (LibTorch on the CPU) or
// `FATAL ERROR :: MODULE:PT_DEVMEM Allocation failed` (HPU).
bool LooksLikeOutOfMemory(const std::exception& error);

// No batch size fits: the size reached zero.
class NoExecutableBatchSize : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The retry loop. The current batch size lives in the object and persists across calls, as in
// Accelerate's decorator: a second call starts from the last size that worked (or the last one
// tried) and never grows back.
class ExecutableBatchSize {
 public:
  // `reduce` maps a batch size that ran out of memory to the next one to try; by default
  // `int(size * 0.9)`: 128, 115, 103, 92, ... 2, 1, 0. (Accelerate's decorator-factory form
  // silently drops a custom reduction; here it always applies.) `release_memory` runs once
  // before the first try and after every out-of-memory error (emptying a device cache).
  explicit ExecutableBatchSize(int64_t starting_batch_size = 128,
                               std::function<int64_t(int64_t)> reduce = nullptr,
                               std::function<void()> release_memory = nullptr);

  // Calls `function(batch_size)` until it returns, reducing the batch size after each
  // out-of-memory error; any other exception propagates unchanged. Throws
  // NoExecutableBatchSize when the size reaches zero (or stops shrinking), naming the sizes tried.
  template <typename Function>
  auto Run(Function&& function) -> std::invoke_result_t<Function&, int64_t> {
    Release();
    std::string tried;
    while (true) {
      CheckUsable(tried);
      try {
        return function(batch_size_);
      } catch (const std::exception& error) {
        if (!LooksLikeOutOfMemory(error)) throw;
        tried += (tried.empty() ? "" : ", ") + std::to_string(batch_size_);
        Release();
        Shrink();
      }
    }
  }

  int64_t batch_size() const { return batch_size_; }

  // Accelerate's default reduction: int(size * 0.9).
  static int64_t DefaultReduce(int64_t batch_size);

 private:
  void Release();
  void Shrink();
  void CheckUsable(const std::string& tried) const;

  int64_t batch_size_;
  int64_t previous_ = -1;
  std::function<int64_t(int64_t)> reduce_;
  std::function<void()> release_memory_;
};

}  // namespace accel::rt::memory

#endif  // ACCEL_RUNTIME_MEMORY_EXECUTABLE_BATCH_SIZE_H_
