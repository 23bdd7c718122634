#include "runtime/tools/worker_command.h"

#include <signal.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>

#include <fmt/format.h>

#include "runtime/launch/launcher.h"
#include "runtime/tools/plan_input.h"
#include "runtime/train/worker.h"

namespace accel::tools {
namespace {

namespace launch = rt::launch;

// Rank 0's list of the self-test's checks, all passed.
void PrintChecks(const std::vector<rt::distributed::SelfTestCheck>& checks, int world_size) {
  for (const rt::distributed::SelfTestCheck& check : checks)
    fmt::print("accelrun: test: ok  {:<26}  {}\n", check.name, check.detail);
  fmt::print("accelrun: test: every rank got the expected result of every data operation (world size {})\n",
             world_size);
  std::fflush(stdout);
}

}  // namespace

int RunWorkerCommand(const WorkerCommandOptions& options) {
  // A worker must not outlive its launcher: if the launcher dies (even by SIGKILL), the kernel
  // kills this worker. The parent check covers a launcher that died before the prctl.
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (const char* launcher = std::getenv("ACCEL_LAUNCHER_PID");
      launcher && ::getppid() != std::atoi(launcher)) {
    fmt::print(stderr, "accelrun: error: the launcher is gone; stopping\n");
    return launch::kWorkerExitFailed;
  }
  std::optional<plan::Plan> plan = LoadPlan(options.worker.plan);
  if (!plan) return launch::kWorkerExitUsage;
  rt::train::PlacePlan(*plan, options.worker);
  const rt::train::WorkerContext& context = options.worker.context;
  // One line per rank: a rank that fails before it says anything else still leaves this in the
  // launcher's failure report.
  fmt::print("accelrun: worker rank {} of {} (pid {}) joins {}:{}\n", context.rank, context.world_size,
             ::getpid(), context.master_addr, context.master_port);
  std::fflush(stdout);
  llvm::Error error = llvm::Error::success();
  if (options.self_test) {
    llvm::Expected<std::vector<rt::distributed::SelfTestCheck>> checks =
        rt::train::RunSelfTestWorker(*plan, context);
    if (checks && context.rank == 0) PrintChecks(*checks, context.world_size);
    error = checks ? llvm::Error::success() : checks.takeError();
  } else {
    llvm::Expected<rt::train::RunSummary> summary = rt::train::RunWorker(*plan, context);
    error = summary ? llvm::Error::success() : summary.takeError();
  }
  if (!error) return 0;
  int code = launch::kWorkerExitFailed;
  llvm::handleAllErrors(
      std::move(error),
      [&code](const rt::train::CollectiveFailure& failure) {
        code = launch::kWorkerExitPeerFailure;
        fmt::print(stderr, "accelrun: error: {}\n", failure.message());
      },
      [&code](const rt::train::ArgumentMismatch& mismatch) {
        code = launch::kWorkerExitUsage;
        fmt::print(stderr, "accelrun: error: {}\n", mismatch.message());
      },
      [](const llvm::ErrorInfoBase& error) { fmt::print(stderr, "accelrun: error: {}\n", error.message()); });
  return code;
}

}  // namespace accel::tools
