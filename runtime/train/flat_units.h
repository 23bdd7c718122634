#ifndef ACCEL_RUNTIME_TRAIN_FLAT_UNITS_H_
#define ACCEL_RUNTIME_TRAIN_FLAT_UNITS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "compiler/plan/plan.h"
#include "runtime/train/trainer.h"

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

// FSDP's auto-wrap policies over the module tree, children before parents (a wrapped module
// takes the parameters no wrapped descendant took):
// - no_wrap: one unit, the root, of every parameter;
// - transformer_based: every module whose class is in `transformer_layer_cls_to_wrap`;
// - size_based: every module other than the root whose parameters not yet wrapped number at
//   least `min_num_params`.
// The root unit comes first (when it has parameters), then the wrapped units in module order.
// Throws std::invalid_argument when transformer_based names classes none of which this model
// has, naming the classes it has (an empty list wraps TransformerEncoderLayer if there is one).
std::vector<FlatUnit> WrapUnits(const ModuleNode& root, const std::vector<int64_t>& numels,
                                const plan::Sharding& sharding);

// Fills offsets, numel, padded and shard_size for `shard_count` ranks.
void LayOut(std::vector<FlatUnit>& units, const std::vector<int64_t>& numels, int shard_count);

}  // namespace accel::rt::train

#endif  // ACCEL_RUNTIME_TRAIN_FLAT_UNITS_H_
