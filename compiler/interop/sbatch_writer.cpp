// A Slurm batch script for a compiled plan (`accelc export --to sbatch`), as torchx writes one
// for a role: the allocation from the plan's placement, then `srun accelrun <plan>`.
#include <algorithm>

#include <fmt/format.h>

#include "compiler/cli/shell_word.h"
#include "compiler/interop/interop.h"

namespace accel::interop {
namespace {

// sbatch reads an `#SBATCH` line up to the end of the line and splits it at blanks: a value
// with either cannot be written there.
bool FitsDirective(const std::string& value) {
  return !value.empty() && value.find_first_of(" \t\n\r\"'") == std::string::npos;
}

// Whether the spec set `compute.main_process_port` (the plan's resolved config keeps null for
// an unset optional).
bool SpecSetsPort(const plan::Plan& plan) {
  const llvm::json::Object* config = plan.config.getAsObject();
  const llvm::json::Object* compute = config ? config->getObject("compute") : nullptr;
  const llvm::json::Object* port = compute ? compute->getObject("main_process_port") : nullptr;
  const llvm::json::Value* value = port ? port->get("value") : nullptr;
  return value == nullptr || value->kind() != llvm::json::Value::Null;
}

// Digits only, at least one: the parts of a Slurm time limit.
bool AllDigits(std::string_view text) {
  return !text.empty() && text.size() <= 9 &&
         std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; });
}

}  // namespace

bool IsSlurmTime(std::string_view text) {
  // Slurm's parse_time (src/common/parse_time.c): an optional `days-` before one to three
  // colon-separated numbers; with days, at most `hours:minutes:seconds`, and `days` alone
  // takes one number (hours).
  size_t dash = text.find('-');
  std::string_view clock = dash == std::string_view::npos ? text : text.substr(dash + 1);
  if (dash != std::string_view::npos && !AllDigits(text.substr(0, dash))) return false;
  int parts = 0;
  for (size_t start = 0;; ++parts) {
    size_t colon = clock.find(':', start);
    size_t length = colon == std::string_view::npos ? colon : colon - start;
    if (!AllDigits(clock.substr(start, length))) return false;
    if (colon == std::string_view::npos) break;
    start = colon + 1;
  }
  return parts <= 2;
}

llvm::Expected<std::string> ExportSbatch(const plan::Plan& plan, const SbatchOptions& options) {
  const auto* init = plan.Find<plan::InitProcessGroup>();
  if (init == nullptr)
    return llvm::createStringError(llvm::inconvertibleErrorCode(), "the plan has no init_process_group step");
  if (!FitsDirective(options.working_dir)) {
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "the working directory `%s` has a blank or a quote, which an `#SBATCH "
                                   "--chdir` line cannot hold; export from another directory",
                                   options.working_dir.c_str());
  }
  bool checkpoints = plan.Find<plan::Checkpoint>() != nullptr;
  std::string s;
  s += "#!/bin/bash\n";
  s += fmt::format("# Slurm batch script of job `{}`, written by `accelc export --to sbatch`\n", plan.job);
  s += fmt::format("# from `{}` (plan {}).\n", plan.source, plan.hash.substr(0, 19));
  s += "# Submit it with `sbatch <this file>`; options given to sbatch win over the #SBATCH lines.\n";
  s += fmt::format("#SBATCH --job-name={}\n", plan.job);
  s += fmt::format("#SBATCH --nodes={}\n", init->num_machines);
  // One task per worker: under srun, each task's accelrun starts exactly its rank's worker.
  s += fmt::format("#SBATCH --ntasks-per-node={}\n", init->processes_per_machine);
  // The plan's relative paths (output, data, checkpoints) resolve where accelc ran, as they
  // would for `accelrun` started there, wherever sbatch is called.
  s += fmt::format("#SBATCH --chdir={}\n", options.working_dir);
  s += fmt::format("#SBATCH --output={}-%j.out\n", plan.job);
  // One GPU per worker: accelrun gives each local rank its own device (docs/gpu.md). Without it
  // most clusters start a GPU job on nodes whose GPUs the job may not see.
  if (init->device == plan::Device::cuda)
    s += fmt::format("#SBATCH --gpus-per-node={}\n", init->processes_per_machine);
  if (options.cpus_per_task > 0) s += fmt::format("#SBATCH --cpus-per-task={}\n", options.cpus_per_task);
  if (!options.time.empty()) s += fmt::format("#SBATCH --time={}\n", options.time);
  if (checkpoints) {
    // Requeued (a lost node, preemption, `scontrol requeue`), the job resumes; the log of the
    // attempt before is kept.
    s += "#SBATCH --requeue\n#SBATCH --open-mode=append\n";
  }
  s += "#\n";
  if (options.cpus_per_task == 0) {
    s += "# No CPU count was asked for: the cluster's default CPUs per task apply (often 1). With\n";
    s += "# `sbatch --cpus-per-task=N` (or `accelc export --cpus-per-task N`) each worker runs N threads\n";
    s += "# (accelrun reads SLURM_CPUS_PER_TASK).\n";
  }
  if (options.time.empty()) {
    s += "# No time limit was asked for: the partition's default applies; `sbatch --time=HH:MM:SS`\n";
    s += "# (or `accelc export --time HH:MM:SS`) sets one.\n";
  }
  if (SpecSetsPort(plan)) {
    s += fmt::format("# The rendezvous is on the first node, port {} (the spec's `main_process_port`).\n",
                     init->main_process_port);
  } else {
    s += "# The rendezvous is on the first node, on a port accelrun derives from the job id, so that\n";
    s += "# jobs sharing a node do not meet.\n";
  }
  if (checkpoints) {
    s += "# --resume auto: the first start trains from step 1, a requeued one continues from the newest\n";
    s += "# complete checkpoint.\n";
  } else {
    s += "# The plan saves no checkpoints, so a requeued job would start over: the script does not ask\n";
    s += "# for requeueing.\n";
  }
  s += fmt::format("srun {} {}{}\n", cli::ShellWord(options.accelrun), cli::ShellWord(options.plan_path),
                   checkpoints ? " --resume auto" : "");
  return s;
}

}  // namespace accel::interop
