#ifndef ACCEL_RUNTIME_MODEL_WRAP_POLICY_H_
#define ACCEL_RUNTIME_MODEL_WRAP_POLICY_H_

#include <cstdint>
#include <string>
#include <vector>

#include "compiler/plan/plan.h"
#include "runtime/model/trainer.h"

// Which modules FSDP's auto-wrap policy selects: the sharded engine's units
// (runtime/engine/flat_units.h) and the blocks activation checkpointing recomputes
// (activation_checkpointing.h) follow the same choice.
namespace accel::rt::train {

// A selected module and the parameters it takes, as indices into Trainer::NamedParameters(),
// ascending; module "" is the root: the parameters no selected module holds.
struct WrappedModule {
  std::string module;
  std::vector<size_t> parameters;
};

// FSDP's auto-wrap policies over the module tree, children before parents (a wrapped module
// takes the parameters no wrapped descendant took):
// - no_wrap: one unit, the root, of every parameter;
// - transformer_based: every module whose class is in `transformer_layer_cls_to_wrap`;
// - size_based: every module other than the root whose parameters not yet wrapped number at
//   least `min_num_params`.
// The root comes first (when it has parameters), then the wrapped units in module order.
// Throws std::invalid_argument when transformer_based names classes none of which this model
// has, naming the classes it has (an empty list wraps TransformerEncoderLayer if there is one).
std::vector<WrappedModule> WrapModules(const ModuleNode& root, const std::vector<int64_t>& numels,
                                       const plan::Sharding& sharding);

}  // namespace accel::rt::train

#endif  // ACCEL_RUNTIME_MODEL_WRAP_POLICY_H_
