#ifndef ACCEL_RUNTIME_TRAIN_WORKER_ARGUMENTS_H_
#define ACCEL_RUNTIME_TRAIN_WORKER_ARGUMENTS_H_

#include <string>
#include <vector>

#include "compiler/cli/arguments.h"
#include "compiler/plan/plan.h"
#include "runtime/train/worker_context.h"

// What accelrun passes every worker after the plan (runtime/tools/launch_command.cpp builds the
// command line), read the same way by accelrun-worker and by the Accelerator of a user's own
// program under `accelrun --program`.
namespace accel::rt::train {

struct WorkerArguments {
  // The plan to run (the launcher's copy in the output directory).
  std::string plan;
  // The directory the plan's relative input paths are relative to: the directory of the plan
  // the user gave accelrun, or the working directory for a spec (plan_paths.h). Empty: the
  // working directory.
  std::string inputs_dir;
  // `--output-dir`, `--resume`, `--allow-schedule-change`, `--progress-tty`.
  WorkerContext context;
};

// The options: `--output-dir`, `--inputs-dir`, `--resume`, `--allow-schedule-change` and
// `--progress-tty`, each stored into `into`. The plan is the one positional argument.
std::vector<cli::Option> WorkerArgumentOptions(WorkerArguments& into);

// Places `plan`'s inputs and outputs as the launcher asked: relative input paths against
// `inputs_dir` (the working directory when empty), outputs under `--output-dir` when given.
void PlacePlan(plan::Plan& plan, const WorkerArguments& arguments);

}  // namespace accel::rt::train

#endif  // ACCEL_RUNTIME_TRAIN_WORKER_ARGUMENTS_H_
