// `accelc export --to sbatch`: a Slurm batch script that runs the spec's plan, with the plan
// compiled now and written beside it.
#include "compiler/driver/accelc_commands.h"

#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <string>
#include <system_error>

#include <fmt/format.h>

#include "compiler/diagnostics/render.h"
#include "compiler/driver/accelc_shared.h"
#include "compiler/interop/interop.h"
#include "compiler/pipeline/compile.h"
#include "compiler/plan/plan.h"
#include "compiler/plan/plan_paths.h"
#include "compiler/sema/environment.h"
#include "llvm/Support/Error.h"

namespace accel::accelc {

using pipeline::Compilation;

// `accelc export --to sbatch SPEC`: compiles the spec as `build` does (environment, `--set`),
// writes the plan beside the script (`-o job.sbatch` gives `job.plan.json`; on stdout,
// `<job>.plan.json` here), then the batch script that runs it under srun. The plan is fixed at
// export: editing the spec later changes nothing a submitted or requeued job runs.
int ExportBatchScript(const Options& options, const accel::pipeline::Stdlib& stdlib) {
  namespace fs = std::filesystem;
  const std::string& path = options.files[0];
  accel::sema::MapEnvironment environment = MakeEnvironment(options);
  accel::pipeline::CompileOptions compile_options = options.compile;
  compile_options.overrides = options.overrides;
  Compilation compilation = accel::pipeline::CompileFile(path, stdlib, environment, compile_options);
  fmt::print(stderr, "{}", accel::diag::RenderText(compilation.diagnostics.diagnostics()));
  if (!compilation.source) return kExitUsage;
  if (compilation.config_file || compilation.schema_only) {
    fmt::print(stderr, "accelc: error: `{}` is not a job spec; only a job spec exports to a batch script\n",
               path);
    return kExitUsage;
  }
  if (!compilation.plan) {
    // The errors above say why: a spec with mistakes, or one for an engine accelrun does not run.
    fmt::print(
        stderr,
        "accelc: error: `{}` does not compile to a plan that accelrun runs (see above), so there is no "
        "batch script for it\n",
        path);
    return kExitDiagnostics;
  }
  std::error_code ec;
  fs::path working_dir = fs::current_path(ec);
  fs::path plan_path = options.output.empty() ? fs::path(compilation.plan->job + ".plan.json")
                                              : fs::path(options.output).replace_extension(".plan.json");
  plan_path = fs::absolute(plan_path, ec).lexically_normal();
  // accelrun reads the plan's input paths relative to the plan file's directory.
  accel::plan::RebaseInputPaths(*compilation.plan, working_dir, plan_path.parent_path());
  // The accelrun of the build that compiled the plan, when it is beside this accelc: its plan
  // format is this accelc's. Otherwise the one on the job's PATH.
  std::string accelrun = "accelrun";
  fs::path self = fs::read_symlink("/proc/self/exe", ec);
  if (!ec && ::access((self.parent_path() / "accelrun").c_str(), X_OK) == 0)
    accelrun = (self.parent_path() / "accelrun").string();
  llvm::Expected<std::string> script =
      accel::interop::ExportSbatch(*compilation.plan, {.plan_path = plan_path.string(),
                                                       .working_dir = working_dir.string(),
                                                       .accelrun = accelrun,
                                                       .time = options.slurm_time,
                                                       .cpus_per_task = options.cpus_per_task});
  if (!script) {
    fmt::print(stderr, "accelc: error: {}\n", llvm::toString(script.takeError()));
    return kExitUsage;
  }
  if (!WriteFile(plan_path.string(), accel::plan::ToJson(*compilation.plan))) {
    fmt::print(stderr, "accelc: error: cannot write `{}`\n", plan_path.string());
    return kExitUsage;
  }
  fmt::print(stderr, "accelc: wrote the plan the script runs to {}\n", plan_path.string());
  if (options.output.empty()) {
    fmt::print("{}", *script);
  } else if (!WriteFile(options.output, *script)) {
    fmt::print(stderr, "accelc: error: cannot write `{}`\n", options.output);
    return kExitUsage;
  }
  return kExitClean;
}

}  // namespace accel::accelc
