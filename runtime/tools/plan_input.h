#ifndef ACCEL_RUNTIME_TOOLS_PLAN_INPUT_H_
#define ACCEL_RUNTIME_TOOLS_PLAN_INPUT_H_

#include <optional>
#include <string>
#include <vector>

#include "compiler/plan/plan.h"

namespace accel::tools {

// The whole file at `path`; empty when it cannot be read.
std::optional<std::string> ReadWholeFile(const std::string& path);

// Reads and validates a plan file; prints `accelrun: error: ...` and returns empty on failure.
std::optional<plan::Plan> LoadPlan(const std::string& path);

// Compiles a job spec (`.accel`, or YAML) with the embedded stdlib and `overrides` (`--set`
// PATH=VALUE, in order) as `accelc build` does, printing its diagnostics as accelc does; empty
// when it has errors.
std::optional<plan::Plan> CompileSpec(const std::string& path,
                                      const std::vector<std::string>& overrides = {});

}  // namespace accel::tools

#endif  // ACCEL_RUNTIME_TOOLS_PLAN_INPUT_H_
