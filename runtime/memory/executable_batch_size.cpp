#include "runtime/memory/executable_batch_size.h"

#include <new>
#include <string_view>

#include <fmt/format.h>

namespace accel::rt::memory {

bool LooksLikeOutOfMemory(const std::exception& error) {
  if (dynamic_cast<const std::bad_alloc*>(&error) != nullptr) return false;
  std::string_view text = error.what();
  for (std::string_view marker :
       {" out of memory.", "cuDNN error: CUDNN_STATUS_NOT_SUPPORTED.",
        "DefaultCPUAllocator: can't allocate memory", "FATAL ERROR :: MODULE:PT_DEVMEM Allocation failed"}) {
    if (text.find(marker) != std::string_view::npos) return true;
  }
  return false;
}

ExecutableBatchSize::ExecutableBatchSize(int64_t starting_batch_size, std::function<int64_t(int64_t)> reduce,
                                         std::function<void()> release_memory)
    : batch_size_(starting_batch_size),
      reduce_(reduce ? std::move(reduce) : DefaultReduce),
      release_memory_(std::move(release_memory)) {}

int64_t ExecutableBatchSize::DefaultReduce(int64_t batch_size) {
  // int(batch_size * 0.9) in Python: the product as a double, truncated toward zero.
  return static_cast<int64_t>(static_cast<double>(batch_size) * 0.9);
}

void ExecutableBatchSize::Release() {
  if (release_memory_) release_memory_();
}

void ExecutableBatchSize::Shrink() {
  previous_ = batch_size_;
  batch_size_ = reduce_(batch_size_);
}

void ExecutableBatchSize::CheckUsable(const std::string& tried) const {
  std::string history = tried.empty() ? "" : fmt::format(" (ran out of memory at {})", tried);
  if (batch_size_ <= 0) {
    throw NoExecutableBatchSize("no executable batch size found, reached zero" + history);
  }
  // A custom reduction that does not shrink would retry forever.
  if (previous_ >= 0 && batch_size_ >= previous_) {
    throw NoExecutableBatchSize(fmt::format("the batch-size reduction went from {} to {} instead of down{}",
                                            previous_, batch_size_, history));
  }
}

}  // namespace accel::rt::memory
