#ifndef ACCEL_COMPILER_PIPELINE_OVERRIDE_OPTION_H_
#define ACCEL_COMPILER_PIPELINE_OVERRIDE_OPTION_H_

#include <string>
#include <vector>

#include "compiler/cli/arguments.h"

namespace accel::pipeline {

// `--set PATH=VALUE` (repeatable), as `accelc build` and `accelrun` both take it: each value is
// appended to `overrides` in command-line order (CompileOptions::overrides), and a value without
// `=` is a usage error. `overrides` must outlive the returned option.
cli::Option OverrideOption(std::vector<std::string>& overrides);

}  // namespace accel::pipeline

#endif  // ACCEL_COMPILER_PIPELINE_OVERRIDE_OPTION_H_
