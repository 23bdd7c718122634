#ifndef ACCEL_RUNTIME_DATA_LOADER_H_
#define ACCEL_RUNTIME_DATA_LOADER_H_

#include <cstdint>

#include <ATen/core/Tensor.h>

#include "llvm/Support/Error.h"
#include "runtime/data/dataset.h"
#include "runtime/data/sampler.h"

namespace accel::rt::data {

// One batch of this process.
struct Batch {
  // float32 [B, F].
  at::Tensor features;
  // float32 [B, O] or int64 [B], as in the Dataset.
  at::Tensor targets;
  // With a dataset of named columns: B rows of each column, in the dataset's order, ragged
  // columns padded (Dataset::Collate); features and targets are then undefined.
  Columns columns;
  int64_t epoch = 0;
  // The last batch of this process in `epoch`: what GradientAccumulationPlugin's
  // sync_with_dataloader (GradientState.end_of_dataloader) keys on.
  bool last_in_epoch = false;

  // The samples in the batch.
  int64_t size() const {
    if (features.defined()) return features.size(0);
    return columns.empty() ? 0 : columns.front().values.size(0);
  }
};

// This process's endless stream of batches over an in-memory dataset, epoch after epoch, in
// the order and sharding of runtime/data/sampler.h. Not collective: each rank computes its own
// indices from the shared (seed, epoch), so ranks never talk to each other here. Not
// thread-safe.
class DataLoader {
 public:
  // `spec.dataset_size` is ignored and taken from `dataset`. Errors: an empty or malformed
  // dataset (features not 2-D float32, targets of another row count, named columns of
  // different row counts or names), an invalid spec (see
  // ShardBatches), and a spec that gives this process no batch per epoch (e.g. drop_last with
  // fewer samples than one batch), each naming the fix.
  static llvm::Expected<DataLoader> Create(Dataset dataset, ShardSpec spec);

  // The next batch of this process; after the last batch of an epoch, the first of the next.
  // The tensors are fresh copies of the dataset rows.
  Batch Next();

  // The epoch of the last batch drawn (0 before the first) and how many batches of it were
  // drawn (0 … batches_per_epoch()): with the seed, all a checkpoint needs to continue the
  // stream sample-exactly.
  int64_t epoch() const { return epoch_; }
  int64_t position() const { return position_; }
  // Continues the stream where epoch() and position() were taken: the next Next() returns the
  // batch that followed them (the first of epoch + 1 when position == batches_per_epoch()).
  // Errors on a negative epoch or a position outside [0, batches_per_epoch()].
  llvm::Error Restore(int64_t epoch, int64_t position);

  // This process's batches per epoch, the same in every epoch.
  int64_t batches_per_epoch() const { return sharder_.batches_per_epoch(); }
  const Dataset& dataset() const { return dataset_; }
  const ShardSpec& spec() const { return sharder_.spec(); }

 private:
  DataLoader(Dataset dataset, EpochSharder sharder)
      : dataset_(std::move(dataset)), sharder_(std::move(sharder)) {}

  Dataset dataset_;
  EpochSharder sharder_;
  int64_t epoch_ = 0;
  int64_t position_ = 0;
  // The batches of epoch `batches_epoch_` (-1: none computed yet).
  BatchList batches_;
  int64_t batches_epoch_ = -1;
};

}  // namespace accel::rt::data

#endif  // ACCEL_RUNTIME_DATA_LOADER_H_
