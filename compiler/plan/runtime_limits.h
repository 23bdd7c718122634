#ifndef ACCEL_COMPILER_PLAN_RUNTIME_LIMITS_H_
#define ACCEL_COMPILER_PLAN_RUNTIME_LIMITS_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "compiler/diagnostics/diagnostic.h"
#include "compiler/plan/plan.h"

// What accelrun cannot execute, read off a plan: one list, written once. `accelc build` reports
// each limit at the spec field it names, and accelrun refuses a plan that breaks one before any
// process starts (also a plan written by hand, or rewritten by `--device cpu`). The workers assert
// the same list, as a check of this one.
namespace accel::plan {

// The setting a limit is about, so that the compiler points at where the spec wrote it. A new
// member is a compile error in lowering's switch (lower.cpp), which maps each to a spec field.
enum class LimitedSetting {
  kProcesses,
  kShardingStage,
  kTensorParallel,
  kMaxGradNorm,
  kStateDictType,
  kSaveOnEachNode,
};

struct RuntimeLimit {
  diag::Kind kind;  // its A4xxx code, whose kinds.def message takes `what` and `fix`
  LimitedSetting setting;
  std::string what;
  std::string fix;  // starts with "; "
};

// Whether `plan` checkpoints in the sharded layout: every rank writes its own slices, and an
// index, into one folder that rank 0 finishes.
bool WritesShardedCheckpoints(const Plan& plan);

// Every reason the runtime cannot execute `plan`, in a fixed order; empty when it can.
// `machines`: how many machines it runs on where that is not the plan's own count (`accelrun
// --nnodes`, or a scheduler's placement); unset, the plan's.
std::vector<RuntimeLimit> RuntimeLimitsBroken(const Plan& plan,
                                              std::optional<int64_t> machines = std::nullopt);

// The limit's kinds.def message with its code, "... [A4026]", for a program without a source span
// to point at (accelrun on a plan file, the worker's assertion).
std::string Describe(const RuntimeLimit& limit);

}  // namespace accel::plan

#endif  // ACCEL_COMPILER_PLAN_RUNTIME_LIMITS_H_
