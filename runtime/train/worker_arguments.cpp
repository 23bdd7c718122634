#include "runtime/train/worker_arguments.h"

#include <filesystem>

#include "compiler/plan/plan_paths.h"

namespace accel::rt::train {

std::vector<cli::Option> WorkerArgumentOptions(WorkerArguments& into) {
  return {
      {.names = {"--output-dir"},
       .value_name = "<dir>",
       .apply = cli::StoreText(into.context.output_dir),
       .needs = "a directory"},
      {.names = {"--inputs-dir"},
       .value_name = "<dir>",
       .apply = cli::StoreText(into.inputs_dir),
       .needs = "a directory"},
      {.names = {"--resume"},
       .value_name = "auto|<dir>",
       .apply = cli::StoreText(into.context.resume),
       .needs = "auto or a directory"},
      {.names = {"--allow-schedule-change"}, .apply = cli::SetFlag(into.context.allow_schedule_change)},
      {.names = {"--progress-tty"}, .apply = cli::SetFlag(into.context.progress_tty)},
  };
}

void PlacePlan(plan::Plan& plan, const WorkerArguments& arguments) {
  plan::ResolveInputPaths(plan, arguments.inputs_dir.empty() ? std::filesystem::current_path()
                                                             : std::filesystem::path(arguments.inputs_dir));
  if (!arguments.context.output_dir.empty()) plan::MoveOutputDir(plan, arguments.context.output_dir);
}

}  // namespace accel::rt::train
