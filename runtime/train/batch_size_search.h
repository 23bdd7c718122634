#ifndef ACCEL_RUNTIME_TRAIN_BATCH_SIZE_SEARCH_H_
#define ACCEL_RUNTIME_TRAIN_BATCH_SIZE_SEARCH_H_

#include <cstdint>
#include <string>

#include "runtime/data/dataset.h"
#include "runtime/distributed/collectives.h"
#include "runtime/engine/reducer.h"
#include "runtime/model/trainer.h"

namespace accel::rt::train {

// The data loader's batch size that fits in memory on every rank: Accelerate's
// find_executable_batch_size (runtime/memory/executable_batch_size.h: what counts as out of
// memory, int(size × 0.9), giving up at 0) applied to one probe step. Every rank runs a
// forward and backward pass on the first `size` rows of `data` (under no_sync, so no
// collective can be left waiting by a rank that ran out), then all agree: if any rank ran out
// of memory, all retry smaller. Gradients are cleared and buffers and the RNG restored after
// each probe: the model and the random stream are as before.
// With `split_batches` sizes stay multiples of the process count. Collective. Throws
// memory::NoExecutableBatchSize when even size 1 does not fit.
//
// For tests, ACCEL_INJECT_OOM_ABOVE_BATCH=N (or R:N for rank R only) makes a probe larger than
// N fail as if the device ran out of memory.
struct BatchSizeSearch {
  int64_t batch_size = 0;
  std::string tried;  // the sizes that ran out of memory, comma-separated
};
BatchSizeSearch FindExecutableBatchSize(Trainer& trainer, Reducer& reducer, const data::Dataset& data,
                                        int64_t starting_batch_size, bool split_batches,
                                        distributed::Collectives& collectives);

}  // namespace accel::rt::train

#endif  // ACCEL_RUNTIME_TRAIN_BATCH_SIZE_SEARCH_H_
