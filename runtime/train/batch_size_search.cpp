#include "runtime/train/batch_size_search.h"

#include <ATen/ATen.h>
#include <ATen/core/grad_mode.h>

#include <algorithm>
#include <cstdlib>
#include <stdexcept>

#include <fmt/format.h>

#include "runtime/engine/train_state.h"
#include "runtime/memory/executable_batch_size.h"

namespace accel::rt::train {
namespace {

// ACCEL_INJECT_OOM_ABOVE_BATCH: `N` for every rank, `R:N` for rank R.
bool InjectedOutOfMemory(int rank, int64_t size) {
  const char* text = std::getenv("ACCEL_INJECT_OOM_ABOVE_BATCH");
  if (text == nullptr || *text == '\0') return false;
  std::string spec(text);
  size_t colon = spec.find(':');
  if (colon != std::string::npos) {
    if (std::stoi(spec.substr(0, colon)) != rank) return false;
    spec = spec.substr(colon + 1);
  }
  return size > std::stoll(spec);
}

}  // namespace

BatchSizeSearch FindExecutableBatchSize(Trainer& trainer, Reducer& reducer, const data::Dataset& data,
                                        int64_t starting_batch_size, bool split_batches,
                                        distributed::Collectives& collectives) {
  const int processes = collectives.world_size();
  auto reduce = [&](int64_t size) {
    int64_t next = memory::ExecutableBatchSize::DefaultReduce(size);
    // split_batches cuts each batch into equal slices (DL-001).
    return split_batches ? next / processes * processes : next;
  };
  memory::ExecutableBatchSize sizes(starting_batch_size, reduce);
  // A probe must leave no trace: batch norm counts its batches and dropout draws random numbers.
  std::vector<std::pair<std::string, at::Tensor>> buffers = trainer.NamedBuffers();
  std::vector<at::Tensor> saved_buffers;
  for (const auto& [name, buffer] : buffers) saved_buffers.push_back(buffer.clone());
  at::Tensor saved_rng = CaptureRngState();
  auto restore = [&] {
    at::NoGradGuard no_grad;
    for (size_t i = 0; i < buffers.size(); ++i) buffers[i].second.copy_(saved_buffers[i]);
    RestoreRngState(saved_rng);
  };
  BatchSizeSearch result;
  at::Tensor flag = at::zeros({1}, at::kInt);
  result.batch_size = sizes.Run([&](int64_t size) {
    // What one process draws per micro-batch at this loader batch size.
    int64_t rows = std::min<int64_t>(split_batches ? size / processes : size, data.size());
    std::string what;
    try {
      if (InjectedOutOfMemory(collectives.rank(), size)) {
        throw std::runtime_error(
            fmt::format("CUDA out of memory. Tried to allocate a batch of {} (injected)", size));
      }
      reducer.PrepareForBackward(/*sync=*/false);
      if (data.columns.empty()) {
        trainer.ForwardBackward(data.features.narrow(0, 0, rows), data.targets.narrow(0, 0, rows));
      } else {
        trainer.ForwardBackward(data.CollateRows(0, rows));
      }
    } catch (const std::exception& error) {
      if (!memory::LooksLikeOutOfMemory(error)) throw;
      what = error.what();
    }
    trainer.OptimizerStep(/*skip=*/true);  // clears the probe's gradients
    restore();
    flag.fill_(what.empty() ? 0 : 1);
    std::vector<at::Tensor> flags{flag};
    collectives.AllReduce(flags, distributed::ReduceOp::kMax);
    if (flag.item<int>() != 0) {
      result.tried += (result.tried.empty() ? "" : ", ") + std::to_string(size);
      // Every rank retries, whichever ran out.
      throw std::runtime_error(what.empty() ? fmt::format("a peer ran out of memory. (batch {})", size)
                                            : what);
    }
    return size;
  });
  return result;
}

}  // namespace accel::rt::train
