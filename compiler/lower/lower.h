#ifndef ACCEL_COMPILER_LOWER_LOWER_H_
#define ACCEL_COMPILER_LOWER_LOWER_H_

#include <optional>
#include <string>

#include "compiler/diagnostics/diagnostic.h"
#include "compiler/plan/plan.h"
#include "compiler/sema/check.h"

namespace accel::lower {

// Lowers a checked spec to an execution plan: the ordered steps the runtime executes and the
// resolved configuration with each value's provenance. `source_name` is recorded in the plan.
// Reports A4xxx diagnostics for what the runtime cannot execute yet and then returns no plan.
// The plan's hash is filled in. If set, `deepspeed_json` is the checked DeepSpeed JSON (root
// record `DeepSpeedConfig`) that the spec's `compute.deepspeed_config.hf_ds_config` names: a
// DEEPSPEED job lowers its ZeRO, precision, optimizer and schedule settings from it.
std::optional<plan::Plan> Lower(const sema::Spec& spec, const std::string& source_name,
                                diag::DiagnosticEngine& diagnostics,
                                const sema::Value* deepspeed_json = nullptr);

// The resolved configuration under `v`, as the plan's `config` holds it: records become objects
// (with their `type`), every other value becomes {"value": ..., "from": provenance}.
llvm::json::Value ConfigTree(const sema::Value& v);

}  // namespace accel::lower

#endif  // ACCEL_COMPILER_LOWER_LOWER_H_
