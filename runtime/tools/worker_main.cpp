// accelrun-worker: one rank of a job, started by accelrun (never by hand), and the LibTorch half
// of `accelrun env`. The only executable that links LibTorch, so that the launcher, its dry
// runs, `--help`, `env` and `estimate-memory` start like a small C++ tool.
//
//   accelrun-worker <plan.json> [--output-dir <dir>] [--inputs-dir <dir>] [--resume auto|<dir>]
//                   [--allow-schedule-change] [--progress-tty] [--self-test]
//   accelrun-worker --facts     (LibTorch's facts for `accelrun env`, as one JSON object)
#include <string>
#include <vector>

#include <fmt/format.h>

#include "compiler/cli/arguments.h"
#include "runtime/distributed/collectives.h"
#include "runtime/launch/launcher.h"
#include "runtime/tools/torch_facts.h"
#include "runtime/tools/worker_command.h"
#include "runtime/train/process_group.h"

namespace {

struct WorkerOptions {
  accel::tools::WorkerCommandOptions command;
  bool facts = false;
};

}  // namespace

int main(int argc, char** argv) {
  accel::rt::distributed::KeepFlightRecorderOff();
  WorkerOptions o;
  // Where this rank sits comes from the launcher's environment; the options add the rest.
  o.command.worker.context = accel::rt::train::WorkerContextFromEnvironment();
  std::vector<accel::cli::Option> table = accel::rt::train::WorkerArgumentOptions(o.command.worker);
  table.push_back({.names = {"--self-test"}, .apply = accel::cli::SetFlag(o.command.self_test)});
  table.push_back({.names = {"--facts"}, .apply = accel::cli::SetFlag(o.facts)});
  std::string error = accel::cli::Parse(std::vector<std::string>(argv + 1, argv + argc), table,
                                        [&o](const std::string& arg) -> std::string {
                                          if (!o.command.worker.plan.empty())
                                            return fmt::format("unexpected argument `{}`", arg);
                                          o.command.worker.plan = arg;
                                          return "";
                                        });
  if (error.empty() && !o.facts && o.command.worker.plan.empty()) error = "missing the plan to run";
  if (!error.empty()) {
    fmt::print(
        stderr,
        "accelrun-worker: error: {}\naccelrun-worker runs one rank of a job and is started by accelrun; "
        "run `accelrun <spec | plan>` instead\n",
        error);
    return accel::rt::launch::kWorkerExitUsage;
  }
  if (o.facts) {
    fmt::print("{}\n", accel::tools::TorchFactsJson(accel::tools::CollectTorchFacts()));
    return 0;
  }
  return accel::tools::RunWorkerCommand(o.command);
}
