#ifndef ACCEL_RUNTIME_TRAIN_DATA_IDENTITY_H_
#define ACCEL_RUNTIME_TRAIN_DATA_IDENTITY_H_

#include <cstdint>
#include <variant>

#include "compiler/plan/plan.h"

// Torch-free, so that the launcher's state import writes what the worker checks.
namespace accel::rt::train {

// What a checkpoint records to refuse resuming over other data: the generator seed of the
// synthetic set, or the sampler's seed for file datasets.
inline int64_t DataIdentitySeed(const plan::BuildDataloader& spec) {
  const auto* synthetic = std::get_if<plan::SyntheticRegression>(&spec.dataset);
  return synthetic != nullptr ? synthetic->seed : spec.data_seed;
}

}  // namespace accel::rt::train

#endif  // ACCEL_RUNTIME_TRAIN_DATA_IDENTITY_H_
