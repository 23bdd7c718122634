#ifndef ACCEL_COMPILER_PIPELINE_RELEASE_DIFF_H_
#define ACCEL_COMPILER_PIPELINE_RELEASE_DIFF_H_

#include <string>

#include "compiler/pipeline/compile.h"
#include "compiler/pipeline/stdlib.h"
#include "compiler/sema/environment.h"

namespace accel::pipeline {

// `accelc diff --for deepspeed@0.19.2..0.19.8 FILE`: what moving a config file from the older
// release of a range to the newer changes (CompileOptions::releases to ::upgrade_to). The file
// is checked under each, and the two checks compared: the unset keys whose default changes
// (A0006, from the older release's check with its defaults set against the newer's), and the
// errors and warnings that appear, go away or change severity. Returns the report, one
// `file:line:col: what: message [code]` line a change, in the order of the file; empty when
// nothing changes. `unreadable` is set when the file cannot be read at all.
std::string DiffReleases(const std::string& path, const Stdlib& stdlib, const sema::Environment& environment,
                         const CompileOptions& options, bool& unreadable);

}  // namespace accel::pipeline

#endif  // ACCEL_COMPILER_PIPELINE_RELEASE_DIFF_H_
