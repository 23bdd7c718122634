// `accelc explain` and `accelc diff`: a plan (or a config's settings) for humans, what differs
// between two of them, and what upgrading a tool's release changes for a config.
#include "compiler/driver/accelc_commands.h"

#include <cstdio>
#include <fstream>
#include <iterator>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "compiler/diagnostics/diagnostic.h"
#include "compiler/diagnostics/render.h"
#include "compiler/lower/lower.h"
#include "compiler/pipeline/compile.h"
#include "compiler/pipeline/release_diff.h"
#include "compiler/plan/describe.h"
#include "compiler/plan/plan.h"
#include "compiler/sema/check.h"
#include "compiler/sema/environment.h"
#include "llvm/Support/Error.h"

namespace accel::accelc {

using pipeline::Compilation;

namespace {

// A file's resolved settings as a plan without steps, for explain and diff: an Accelerate config
// YAML, a DeepSpeed JSON, or a job spec the native runtime cannot run. Settings sit where a job
// keeps them (`compute.*` for an Accelerate config, so a config and a spec compare field by
// field), `deepspeed.*` for a DeepSpeed JSON. No hash: nothing runs. `what` heads `explain`.
accel::plan::Plan ConfigSettings(const accel::sema::Spec& spec, const std::string& what,
                                 const std::string& path) {
  accel::plan::Plan settings;
  settings.job = what;
  settings.source = path;
  settings.format = "";
  if (spec.root.type_name == "Job") {
    settings.config = accel::lower::ConfigTree(spec.root);  // the plan's own layout
    return settings;
  }
  std::string where = spec.root.type_name == "ClusterConfig"     ? "compute"
                      : spec.root.type_name == "DeepSpeedConfig" ? "deepspeed"
                                                                 : spec.root.type_name;
  settings.config = llvm::json::Object{{where, accel::lower::ConfigTree(spec.root)}};
  return settings;
}

// The plan of `path`: read when it is a plan (`.json` with an `accel-plan/` format), else
// compiled from the spec. Diagnostics are printed; empty on failure, with `failure` set to the
// exit status: kExitErrors for a file with errors (as `check` exits), kExitUsage for one that
// cannot be read.
std::optional<accel::plan::Plan> LoadPlan(const std::string& path, const Options& options,
                                          const accel::pipeline::Stdlib& stdlib, int& failure) {
  failure = kExitErrors;
  if (path.size() > 5 && path.compare(path.size() - 5, 5, ".json") == 0) {
    std::ifstream in(path, std::ios::binary);
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (in.bad() || (!in.eof() && in.fail()) || text.empty()) {
      fmt::print(stderr, "accelc: error: cannot read `{}`\n", path);
      failure = kExitUsage;
      return std::nullopt;
    }
    if (text.find("accel-plan/") != std::string::npos) {
      llvm::Expected<accel::plan::Plan> plan = accel::plan::FromJson(text, path);
      if (!plan) {
        fmt::print(stderr, "accelc: error: {}\n", llvm::toString(plan.takeError()));
        return std::nullopt;
      }
      return std::move(*plan);
    }
  }
  accel::sema::MapEnvironment environment = MakeEnvironment(options);
  accel::pipeline::CompileOptions compile_options = options.compile;
  compile_options.overrides = options.overrides;
  Compilation compilation = accel::pipeline::CompileFile(path, stdlib, environment, compile_options);
  // A checked spec that only the native runtime refuses (A4xxx: FSDP, DeepSpeed, GPUs) still
  // has settings to explain and compare; `accelc check` says what accelrun cannot run.
  bool runtime_gaps_only = compilation.spec.has_value() && !compilation.plan;
  for (const accel::diag::Diagnostic& d : compilation.diagnostics.diagnostics()) {
    if (d.severity == accel::diag::Severity::Error && d.code.rfind("A4", 0) != 0) runtime_gaps_only = false;
  }
  if (runtime_gaps_only && compilation.root_record == "Job") {
    return ConfigSettings(*compilation.spec, "a job accelrun cannot run (`accelc check` says why)", path);
  }
  fmt::print(stderr, "{}", accel::diag::RenderText(compilation.diagnostics.diagnostics()));
  if (compilation.config_file && compilation.spec && !compilation.diagnostics.has_errors()) {
    return ConfigSettings(*compilation.spec, compilation.root_record, path);
  }
  if (!compilation.plan) {
    if (!compilation.diagnostics.has_errors()) {
      fmt::print(stderr, "accelc: error: `{}` is not a job spec, a config file or a plan\n", path);
    }
    // No source: the file could not be read at all.
    if (!compilation.source) failure = kExitUsage;
    return std::nullopt;
  }
  return std::move(*compilation.plan);
}

}  // namespace

// `accelc explain PLAN` and `accelc diff A B`.
int DescribePlans(const Options& options, const accel::pipeline::Stdlib& stdlib) {
  std::vector<accel::plan::Plan> plans;
  for (const std::string& path : options.files) {
    int failure = kExitUsage;
    std::optional<accel::plan::Plan> plan = LoadPlan(path, options, stdlib, failure);
    if (!plan) return failure;
    plans.push_back(std::move(*plan));
  }
  if (options.command == "explain") {
    fmt::print("{}", accel::plan::Explain(plans[0], options.all));
    return kExitClean;
  }
  accel::plan::PlanDiff diff = accel::plan::Diff(plans[0], plans[1]);
  fmt::print("{}", accel::plan::RenderDiff(diff, options.files[0], options.files[1]));
  return diff.changes.empty() ? kExitClean : kExitDiagnostics;  // as diff(1): 1 when they differ
}

// `accelc diff --for TOOL@OLD..NEW CONFIG`: what the upgrade changes for the file; exit 1 when
// anything does, as diff(1).
int DiffAcrossReleases(const Options& options, const accel::pipeline::Stdlib& stdlib) {
  accel::sema::MapEnvironment environment = MakeEnvironment(options);
  accel::pipeline::CompileOptions compile_options = options.compile;
  compile_options.lower = false;
  bool unreadable = false;
  std::string changes =
      accel::pipeline::DiffReleases(options.files[0], stdlib, environment, compile_options, unreadable);
  if (unreadable) {
    fmt::print(stderr, "accelc: error: cannot read `{}`\n", options.files[0]);
    return kExitUsage;
  }
  if (changes.empty()) {
    fmt::print("{}: the upgrade changes nothing that accelc checks\n", options.files[0]);
    return kExitClean;
  }
  fmt::print("{}", changes);
  return kExitDiagnostics;
}

}  // namespace accel::accelc
