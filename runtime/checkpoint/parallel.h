#ifndef ACCEL_RUNTIME_CHECKPOINT_PARALLEL_H_
#define ACCEL_RUNTIME_CHECKPOINT_PARALLEL_H_

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <thread>
#include <vector>

namespace accel::rt::checkpoint {

// Calls `work(i)` for every i in [0, count) on up to `max_threads` threads (at most
// `threads_per_core` per core) and returns when all calls have returned. Checkpoint files are
// hashed and written one per thread: hashing is CPU-bound and fsync waits on the disk, so files
// overlap well. Work that waits on the disk half the time (loading pages, then hashing them)
// keeps every core busy with two threads per core.
template <typename Work>
void ParallelFor(size_t count, Work&& work, size_t max_threads = 8, size_t threads_per_core = 1) {
  size_t cores = std::max(1u, std::thread::hardware_concurrency());
  size_t threads = std::min({count, max_threads, cores * threads_per_core});
  if (threads <= 1) {
    for (size_t i = 0; i < count; ++i) work(i);
    return;
  }
  std::atomic<size_t> next{0};
  auto run = [&] {
    for (size_t i = next++; i < count; i = next++) work(i);
  };
  std::vector<std::thread> pool;
  for (size_t t = 1; t < threads; ++t) pool.emplace_back(run);
  run();
  for (std::thread& thread : pool) thread.join();
}

}  // namespace accel::rt::checkpoint

#endif  // ACCEL_RUNTIME_CHECKPOINT_PARALLEL_H_
