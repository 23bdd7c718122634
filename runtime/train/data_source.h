#ifndef ACCEL_RUNTIME_TRAIN_DATA_SOURCE_H_
#define ACCEL_RUNTIME_TRAIN_DATA_SOURCE_H_

#include <cstdint>

#include "compiler/plan/plan.h"
#include "llvm/Support/Error.h"
#include "runtime/data/loader.h"

namespace accel::rt::train {

// This rank's data loader for the plan's `build_dataloader` step: the dataset (generated, or
// read from CSV, .npy or safetensors files) sharded as Accelerate's prepared DataLoader shards
// it. Errors name the file and what is wrong with it.
llvm::Expected<data::DataLoader> OpenDataLoader(const plan::BuildDataloader& spec, int rank, int world_size);

// What a checkpoint records to refuse resuming over other data: the generator seed of the
// synthetic set, or the sampler's seed for file datasets.
int64_t DataIdentitySeed(const plan::BuildDataloader& spec);

}  // namespace accel::rt::train

#endif  // ACCEL_RUNTIME_TRAIN_DATA_SOURCE_H_
