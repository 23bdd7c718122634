// find_executable_batch_size with an injected out-of-memory error (catalog §6.3).
#include <gtest/gtest.h>

#include <new>
#include <stdexcept>
#include <vector>

#include "runtime/memory/executable_batch_size.h"

namespace accel::rt::memory {
namespace {

// A "model" that runs out of memory above `fits`, with the message LibTorch's CUDA allocator
// uses, and records every size it was called with.
struct Model {
  int64_t fits;
  std::vector<int64_t> calls;
  int64_t operator()(int64_t batch_size) {
    calls.push_back(batch_size);
    if (batch_size > fits) {
      throw std::runtime_error(
          "CUDA out of memory. Tried to allocate 2.00 GiB (GPU 0; 79.15 GiB total capacity)");
    }
    return batch_size * 10;
  }
};

TEST(ExecutableBatchSize, ShrinksByTheDefaultFactorUntilItFits) {
  Model model{50, {}};
  int releases = 0;
  ExecutableBatchSize finder(128, nullptr, [&] { ++releases; });
  EXPECT_EQ(finder.Run(model), 460);
  EXPECT_EQ(model.calls, (std::vector<int64_t>{128, 115, 103, 92, 82, 73, 65, 58, 52, 46}));
  EXPECT_EQ(releases, 10);  // once before the first try, then after each of the 9 failures
}

TEST(ExecutableBatchSize, RemembersTheSizeAcrossCalls) {
  Model model{50, {}};
  ExecutableBatchSize finder;
  finder.Run(model);
  model.calls.clear();
  EXPECT_EQ(finder.Run(model), 460);
  EXPECT_EQ(model.calls, (std::vector<int64_t>{46}));  // starts where it left off, never grows
  EXPECT_EQ(finder.batch_size(), 46);
}

TEST(ExecutableBatchSize, GivesUpAtZeroAfterThirtyTries) {
  Model model{0, {}};
  ExecutableBatchSize finder;
  try {
    finder.Run(model);
    FAIL() << "no error";
  } catch (const NoExecutableBatchSize& error) {
    EXPECT_NE(std::string(error.what()).find("reached zero (ran out of memory at 128, 115, 103"),
              std::string::npos)
        << error.what();
  }
  EXPECT_EQ(model.calls.size(), 30u);  // 128, 115, ..., 2, 1: the catalog's 30 tries; 0 is not called
  EXPECT_EQ(model.calls.back(), 1);
}

TEST(ExecutableBatchSize, OtherErrorsPropagateAtOnce) {
  ExecutableBatchSize finder;
  int calls = 0;
  EXPECT_THROW(finder.Run([&](int64_t) -> int {
    ++calls;
    throw std::invalid_argument("shape mismatch");
  }),
               std::invalid_argument);
  EXPECT_THROW(finder.Run([&](int64_t) -> int {
    ++calls;
    throw std::bad_alloc();  // Python's MemoryError: not an out-of-memory error by Accelerate's rule
  }),
               std::bad_alloc);
  EXPECT_EQ(calls, 2);
  EXPECT_EQ(finder.batch_size(), 128);
}

TEST(ExecutableBatchSize, ACustomReductionIsUsedAndMustShrink) {
  Model model{20, {}};
  ExecutableBatchSize halving(100, [](int64_t size) { return size / 2; });
  halving.Run(model);
  EXPECT_EQ(model.calls, (std::vector<int64_t>{100, 50, 25, 12}));
  ExecutableBatchSize stuck(100, [](int64_t size) { return size; });
  Model never{0, {}};
  EXPECT_THROW(stuck.Run(never), NoExecutableBatchSize);
  EXPECT_EQ(never.calls.size(), 1u);
}

TEST(LooksLikeOutOfMemory, MatchesAccelerateMarkers) {
  EXPECT_TRUE(
      LooksLikeOutOfMemory(std::runtime_error("DefaultCPUAllocator: can't allocate memory: you tried")));
  EXPECT_TRUE(
      LooksLikeOutOfMemory(std::runtime_error("cuDNN error: CUDNN_STATUS_NOT_SUPPORTED. This error")));
  EXPECT_TRUE(LooksLikeOutOfMemory(std::runtime_error("FATAL ERROR :: MODULE:PT_DEVMEM Allocation failed")));
  EXPECT_TRUE(LooksLikeOutOfMemory(std::runtime_error("HIP out of memory. Tried to allocate")));
  EXPECT_FALSE(LooksLikeOutOfMemory(std::runtime_error("out of memory")));  // no leading space and period
  EXPECT_FALSE(LooksLikeOutOfMemory(std::bad_alloc()));
}

}  // namespace
}  // namespace accel::rt::memory
