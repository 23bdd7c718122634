#ifndef ACCEL_RUNTIME_TRAIN_DATA_SOURCE_H_
#define ACCEL_RUNTIME_TRAIN_DATA_SOURCE_H_

#include <cstdint>
#include <optional>

#include "compiler/plan/plan.h"
#include "llvm/Support/Error.h"
#include "runtime/data/loader.h"
#include "runtime/train/data_identity.h"

namespace accel::rt::train {

// This rank's data loaders for the plan's `build_dataloader` step: the dataset (generated, or
// read from CSV, .npy or safetensors files) sharded as Accelerate's prepared DataLoader shards
// it. With `eval_samples`, the dataset's last rows are held out into an evaluation loader
// (in order, even batches, the training loader's batch size and splitting), whose gathered
// batches are the held-out rows in order followed by even_batches' duplicates. Errors name the
// file and what is wrong with it.
struct DataLoaders {
  data::DataLoader train;
  std::optional<data::DataLoader> eval;
};
llvm::Expected<DataLoaders> OpenDataLoaders(const plan::BuildDataloader& spec, int64_t eval_samples, int rank,
                                            int world_size);

// The training loader alone (no held-out rows).
llvm::Expected<data::DataLoader> OpenDataLoader(const plan::BuildDataloader& spec, int rank, int world_size);

// The features per row of a dataset that feeds the model one tensor, read without loading its
// rows: the synthetic set's `features`, a CSV's feature columns (named, else its first line's
// columns less the targets), the second dimension of a safetensors or .npy file's features
// (from its header). nullopt for named columns and token streams, and for a file that cannot be
// read here (the loader then says why).
std::optional<int64_t> PeekFeatureWidth(const plan::Dataset& dataset);

}  // namespace accel::rt::train

#endif  // ACCEL_RUNTIME_TRAIN_DATA_SOURCE_H_
