#ifndef ACCEL_RUNTIME_ENGINE_FLAT_UNITS_H_
#define ACCEL_RUNTIME_ENGINE_FLAT_UNITS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "compiler/plan/plan.h"
#include "runtime/model/trainer.h"
#include "runtime/model/wrap_policy.h"

// The sharded engine's units: which parameters are laid end to end in one flat buffer, and
// where each rank's shard of it lies (docs/sharding.md).
namespace accel::rt::train {

struct FlatUnit {
  // The wrapped module's path; "" for the root unit (the parameters no wrapped module holds).
  std::string module;
  // Indices into Trainer::NamedParameters(), in that order.
  std::vector<size_t> parameters;
  // Where each parameter's elements start in the flat buffer (parallel to `parameters`).
  std::vector<int64_t> offsets;
  // The parameters' elements; the buffer holds `padded` (zeros after `numel`), a multiple of
  // the shard count, and rank r of the shard group owns [r * shard_size, (r + 1) * shard_size).
  int64_t numel = 0;
  int64_t padded = 0;
  int64_t shard_size = 0;
};

// The units of WrapModules's modules (wrap_policy.h), in its order, not yet laid out.
std::vector<FlatUnit> WrapUnits(const ModuleNode& root, const std::vector<int64_t>& numels,
                                const plan::Sharding& sharding);

// Fills offsets, numel, padded and shard_size for `shard_count` ranks.
void LayOut(std::vector<FlatUnit>& units, const std::vector<int64_t>& numels, int shard_count);

}  // namespace accel::rt::train

#endif  // ACCEL_RUNTIME_ENGINE_FLAT_UNITS_H_
