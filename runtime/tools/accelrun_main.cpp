// accelrun: runs an execution plan (or compiles and runs a `.accel` spec): launches the
// workers (accelrun-worker, worker_main.cpp), supervises them, and reports the result. Each mode
// lives in its own file. It links no LibTorch: help, dry runs, env, estimate-memory, report,
// consolidate and the state export and import start in milliseconds, and only the workers load it.
#include <algorithm>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "runtime/memory/estimate.h"
#include "runtime/tools/consolidate_command.h"
#include "runtime/tools/env_command.h"
#include "runtime/tools/launch_command.h"
#include "runtime/tools/report_command.h"
#include "runtime/tools/script_command.h"
#include "runtime/tools/state_command.h"
#include "runtime/tools/training_estimate_command.h"
#include "runtime/tools/worker_executable.h"

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  // Subcommands of their own: they start no worker.
  if (!args.empty() && args[0] == "estimate-memory" &&
      std::find(args.begin(), args.end(), "--training") != args.end())
    return accel::tools::RunTrainingEstimateCommand(std::vector<std::string>(args.begin() + 1, args.end()));
  if (!args.empty() && args[0] == "estimate-memory") {
    accel::rt::memory::CommandResult result = accel::rt::memory::RunEstimateMemoryCommand(
        std::vector<std::string>(args.begin() + 1, args.end()), accel::rt::memory::SystemEnvironment());
    fmt::print(stdout, "{}", result.out);
    fmt::print(stderr, "{}", result.err);
    return result.exit_code;
  }
  if (!args.empty() && args[0] == "env")
    return accel::tools::RunEnvCommand(std::vector<std::string>(args.begin() + 1, args.end()),
                                       accel::tools::WorkerExecutable(argv[0]));
  if (!args.empty() && args[0] == "report")
    return accel::tools::RunReportCommand(std::vector<std::string>(args.begin() + 1, args.end()));
  if (!args.empty() && args[0] == "consolidate")
    return accel::tools::RunConsolidateCommand(std::vector<std::string>(args.begin() + 1, args.end()));
  if (!args.empty() && args[0] == "export-state")
    return accel::tools::RunExportStateCommand(std::vector<std::string>(args.begin() + 1, args.end()));
  if (!args.empty() && args[0] == "import-state")
    return accel::tools::RunImportStateCommand(std::vector<std::string>(args.begin() + 1, args.end()));
  // `accelrun [config.yaml] [options] train.py [args]`: a Python script, as `accelerate launch` runs it.
  if (!args.empty() && args[0] != "test" && accel::tools::IsScriptLaunch(args))
    return accel::tools::RunScriptCommand(args);
  accel::tools::LaunchCommandOptions options;
  // `accelrun test <spec | plan> [options]`: a launch whose workers test instead of train.
  if (!args.empty() && args[0] == "test") {
    options.self_test = true;
    args.erase(args.begin());
  }
  std::string error = accel::tools::ParseLaunchArguments(args, options);
  if (options.help) {
    fmt::print("{}", accel::tools::LaunchUsage());
    return 0;
  }
  if (!error.empty()) {
    fmt::print(stderr, "accelrun: error: {}\n\n{}", error, accel::tools::LaunchUsage());
    return 2;
  }
  return accel::tools::RunLaunchCommand(options, argv[0]);
}
