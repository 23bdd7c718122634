#include "runtime/data/loader.h"

#include <ATen/ATen.h>
#include <fmt/format.h>

#include <string>

#include "runtime/support/error.h"

namespace accel::rt::data {
namespace {

llvm::Error ValidateColumns(const Columns& columns) {
  for (size_t i = 0; i < columns.size(); ++i) {
    const Column& column = columns[i];
    if (column.values.dim() < 1 || column.rows() != columns.front().rows()) {
      return Fail(fmt::format("dataset column `{}` has {} rows, column `{}` has {}", column.name,
                              column.values.dim() < 1 ? 0 : column.rows(), columns.front().name,
                              columns.front().rows()));
    }
    if (column.ragged() && (column.offsets.scalar_type() != at::kLong || column.offsets.dim() != 1)) {
      return Fail(fmt::format("dataset column `{}` has offsets that are not int64 [rows + 1]", column.name));
    }
    for (size_t j = 0; j < i; ++j) {
      if (columns[j].name == column.name)
        return Fail(fmt::format("dataset column `{}` appears twice", column.name));
    }
  }
  return llvm::Error::success();
}

llvm::Error ValidateDataset(const Dataset& dataset) {
  if (!dataset.columns.empty()) {
    if (dataset.features.defined() || dataset.targets.defined()) {
      return Fail("a dataset has either named columns or features and targets, not both");
    }
    if (llvm::Error error = ValidateColumns(dataset.columns)) return error;
    if (dataset.size() == 0) return Fail("the dataset is empty; it needs at least one sample");
    return llvm::Error::success();
  }
  if (!dataset.features.defined() || !dataset.targets.defined()) {
    return Fail("the dataset has no features or no targets");
  }
  if (dataset.features.dim() != 2 || dataset.features.scalar_type() != at::kFloat) {
    return Fail(fmt::format("dataset features must be float32 [samples, features], found {} of {} dimensions",
                            std::string(c10::toString(dataset.features.scalar_type())),
                            dataset.features.dim()));
  }
  if (dataset.targets.dim() < 1 || dataset.targets.size(0) != dataset.features.size(0)) {
    return Fail(fmt::format("the dataset has {} feature rows but {} target rows", dataset.features.size(0),
                            dataset.targets.dim() < 1 ? 0 : dataset.targets.size(0)));
  }
  if (dataset.size() == 0) return Fail("the dataset is empty; it needs at least one sample");
  return llvm::Error::success();
}

// What to change when a process gets no batch at all.
std::string NoBatchHint(const ShardSpec& spec) {
  int64_t per_step = spec.split_batches || spec.num_processes == 1
                         ? spec.batch_size
                         : spec.batch_size * static_cast<int64_t>(spec.num_processes);
  if (spec.drop_last) {
    return fmt::format(
        "drop_last drops every batch: one step needs {} samples; lower batch_size or set "
        "drop_last = false",
        per_step);
  }
  return "set even_batches = true so the last round wraps around, or lower batch_size";
}

}  // namespace

llvm::Expected<DataLoader> DataLoader::Create(Dataset dataset, ShardSpec spec) {
  if (llvm::Error error = ValidateDataset(dataset)) return error;
  spec.dataset_size = dataset.size();
  llvm::Expected<EpochSharder> sharder = EpochSharder::Create(spec);
  if (!sharder) return sharder.takeError();
  if (sharder->batches_per_epoch() == 0) {
    return Fail(fmt::format("process {} of {} gets no batch from {} samples with batch_size {}; {}",
                            spec.process_index, spec.num_processes, spec.dataset_size, spec.batch_size,
                            NoBatchHint(spec)));
  }
  return DataLoader(std::move(dataset), std::move(*sharder));
}

Batch DataLoader::Next() {
  if (position_ == batches_per_epoch()) {
    ++epoch_;
    position_ = 0;
  }
  if (batches_epoch_ != epoch_) {
    batches_ = sharder_.Batches(epoch_);
    batches_epoch_ = epoch_;
  }
  std::vector<int64_t>& indices = batches_[position_++];
  Batch batch;
  if (dataset_.columns.empty()) {
    // A view of the indices, not a copy: index_select copies the rows out.
    at::Tensor index = at::from_blob(indices.data(), {static_cast<int64_t>(indices.size())}, at::kLong);
    batch.features = at::index_select(dataset_.features, 0, index);
    batch.targets = at::index_select(dataset_.targets, 0, index);
  }
  batch.columns = dataset_.Collate(indices);
  batch.epoch = epoch_;
  batch.last_in_epoch = position_ == batches_per_epoch();
  return batch;
}

llvm::Error DataLoader::Restore(int64_t epoch, int64_t position) {
  if (epoch < 0 || position < 0 || position > batches_per_epoch()) {
    return Fail(
        fmt::format("cannot resume the data stream at epoch {}, batch {}: an epoch has {} batches on "
                    "this process; was the checkpoint written with another dataset, batch size or "
                    "process count?",
                    epoch, position, batches_per_epoch()));
  }
  epoch_ = epoch;
  position_ = position;
  return llvm::Error::success();
}

}  // namespace accel::rt::data
