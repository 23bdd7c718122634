#ifndef ACCEL_COMPILER_PLAN_PLAN_PATHS_H_
#define ACCEL_COMPILER_PLAN_PLAN_PATHS_H_

#include <filesystem>

#include "compiler/plan/plan.h"

namespace accel::plan {

// A plan's input files (every field whose unit is `path` in plan.def: the TorchScript model,
// the CSV, `.npy` and safetensors data) are relative to the directory the plan file is in, so a
// plan and its data move together and run from any working directory (docs/training.md). Output
// directories are not inputs: they stay relative to the working directory of the run.

// Rewrites every relative input path of `plan`, written relative to `from` (the working
// directory the spec was compiled in), to be relative to `to` (the directory of the plan file
// being written). Absolute and empty paths stay. Recomputes the plan's hash.
void RebaseInputPaths(Plan& plan, const std::filesystem::path& from, const std::filesystem::path& to);

// Makes every relative input path of `plan` absolute under `base` (the plan file's directory).
// The hash is left as it was: it names the plan as compiled, the same on every machine whatever
// directory the plan sits in.
void ResolveInputPaths(Plan& plan, const std::filesystem::path& base);

// `accelrun --output-dir`: makes `output_dir` the plan's output directory (save_model's `dir`)
// and moves with it every directory the plan places inside the old one (the checkpoints'
// project directory, the trackers' logging directory), keeping their place relative to it.
// Directories outside the old output directory (a scratch disk the spec chose) stay. The hash is
// left as it was (see ResolveInputPaths).
void MoveOutputDir(Plan& plan, const std::filesystem::path& output_dir);

}  // namespace accel::plan

#endif  // ACCEL_COMPILER_PLAN_PLAN_PATHS_H_
