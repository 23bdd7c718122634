#ifndef ACCEL_COMPILER_PIPELINE_FOR_OPTION_H_
#define ACCEL_COMPILER_PIPELINE_FOR_OPTION_H_

#include <string>
#include <string_view>

#include "compiler/pipeline/compile.h"

namespace accel::pipeline {

// Reads `accelc check --for`: a comma-separated list whose first entry names the tool that runs
// the config files (`accelerate`, `trainer` or `deepspeed`), and whose entries may pin a release
// with `@`: `deepspeed@0.19.2`, `accelerate@1.13,deepspeed@0.18`. A release is one
// compiler/sema/releases.def covers, or `major.minor` for its newest covered patch. A range,
// `deepspeed@0.19.2..0.19.8` (`0.19.2..` up to the newest), pins the older release and sets
// `options.upgrade_to` to the newer, for `accelc diff`. Sets `options.tool`, `options.releases`
// and `options.upgrade_to`; returns what is wrong with `value`, or "".
std::string ParseForOption(std::string_view value, CompileOptions& options);

}  // namespace accel::pipeline

#endif  // ACCEL_COMPILER_PIPELINE_FOR_OPTION_H_
