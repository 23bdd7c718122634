#ifndef ACCEL_COMPILER_LOWER_DATA_H_
#define ACCEL_COMPILER_LOWER_DATA_H_

#include "compiler/lower/lowering.h"
#include "compiler/plan/plan.h"

// The data phase of lowering: the dataset and its loader, and whether the model fits the data
// (named columns feed a TorchScript model that returns its own loss).
namespace accel::lower {

// The dataset, and DataLoaderConfiguration resolved as Accelerate resolves it when `prepare()`
// wraps a map-style DataLoader.
plan::BuildDataloader LowerData(Lowering& lowering);

// Named columns feed a TorchScript model that returns its own loss (`model`, also when the spec
// leaves `train.loss` unset); features and targets feed any model, and the runtime's loss
// compares its outputs with the targets. Sets `loop.loss` to `model` for named columns.
void FitModelToData(Lowering& lowering, const plan::Dataset& dataset, plan::TrainLoop& loop);

}  // namespace accel::lower

#endif  // ACCEL_COMPILER_LOWER_DATA_H_
