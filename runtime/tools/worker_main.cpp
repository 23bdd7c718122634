// accelrun-worker: one rank of a job, started by accelrun (never by hand), and the LibTorch half
// of `accelrun env`. The only executable that links LibTorch, so that the launcher, its dry
// runs, `--help`, `env` and `estimate-memory` start like a small C++ tool.
//
//   accelrun-worker <plan.json> [--output-dir <dir>] [--resume auto|<dir>] [--self-test]
//   accelrun-worker --facts     (LibTorch's facts for `accelrun env`, as one JSON object)
#include <string>
#include <vector>

#include <fmt/format.h>

#include "compiler/cli/arguments.h"
#include "runtime/launch/launcher.h"
#include "runtime/tools/torch_facts.h"
#include "runtime/tools/worker_command.h"

namespace {

struct WorkerOptions {
  std::string plan;
  std::string output_dir;
  std::string resume;
  bool self_test = false;
  bool facts = false;
};

}  // namespace

int main(int argc, char** argv) {
  WorkerOptions o;
  std::vector<accel::cli::Option> table = {
      {.names = {"--output-dir"},
       .value_name = "<dir>",
       .apply = accel::cli::StoreText(o.output_dir),
       .needs = "a directory"},
      {.names = {"--resume"},
       .value_name = "auto|<dir>",
       .apply = accel::cli::StoreText(o.resume),
       .needs = "auto or a directory"},
      {.names = {"--self-test"}, .apply = accel::cli::SetFlag(o.self_test)},
      {.names = {"--facts"}, .apply = accel::cli::SetFlag(o.facts)},
  };
  std::string error = accel::cli::Parse(std::vector<std::string>(argv + 1, argv + argc), table,
                                        [&o](const std::string& arg) -> std::string {
                                          if (!o.plan.empty())
                                            return fmt::format("unexpected argument `{}`", arg);
                                          o.plan = arg;
                                          return "";
                                        });
  if (error.empty() && !o.facts && o.plan.empty()) error = "missing the plan to run";
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
  return accel::tools::RunWorkerCommand(o.plan, o.output_dir, o.resume, o.self_test);
}
