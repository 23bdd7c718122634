#ifndef ACCEL_COMPILER_PIPELINE_EXPLAIN_H_
#define ACCEL_COMPILER_PIPELINE_EXPLAIN_H_

#include <optional>
#include <string>

#include "compiler/sema/schema.h"

namespace accel::pipeline {

// `accelc explain-code CODE`: what a diagnostic code (`A2003`) or a stdlib rule id (`DS-019`)
// means and how to fix it, as text. Empty when the code is unknown.
std::optional<std::string> ExplainCode(const std::string& code, const sema::Schema& schema);

// Every code ExplainCode knows: the kinds.def codes, then the stdlib rule ids (sorted).
std::vector<std::string> KnownCodes(const sema::Schema& schema);

}  // namespace accel::pipeline

#endif  // ACCEL_COMPILER_PIPELINE_EXPLAIN_H_
