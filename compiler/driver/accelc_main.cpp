// accelc: checks `.accel` job specs and compiles them to execution plans. Links no LibTorch.
// Its main reads the command line, routes each command to its own file (accelc_commands.h),
// and runs check and build itself, which share the loop over many files' compilations.
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iterator>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "compiler/diagnostics/diagnostic.h"
#include "compiler/diagnostics/render.h"
#include "compiler/driver/accelc_commands.h"
#include "compiler/driver/accelc_options.h"
#include "compiler/driver/accelc_shared.h"
#include "compiler/driver/init_command.h"
#include "compiler/lsp/links.h"
#include "compiler/lsp/server.h"
#include "compiler/lsp/transport.h"
#include "compiler/pipeline/compile.h"
#include "compiler/pipeline/filter.h"
#include "compiler/pipeline/format_files.h"
#include "compiler/pipeline/inputs.h"
#include "compiler/pipeline/stdlib.h"
#include "compiler/pipeline/verify.h"
#include "compiler/plan/plan.h"
#include "compiler/plan/plan_paths.h"
#include "llvm/Support/BuryPointer.h"

namespace accel::accelc {
namespace {

using pipeline::Compilation;

int Main(int argc, char** argv) {
  Options options;
  std::string error = ParseArguments(argc, argv, options);
  if (options.help) {
    // `--help` alone is applied, so the command is the first argument that is not an option.
    std::string command = options.command;
    for (int i = 1; command.empty() && i < argc; ++i) {
      if (argv[i][0] != '-') command = argv[i];
    }
    if (command == "build") command = "compile";
    auto named = std::find_if(std::begin(kCommands), std::end(kCommands),
                              [&](const Command& c) { return c.name == command; });
    fmt::print("{}", named != std::end(kCommands) ? CommandUsage(*named) : Usage());
    return kExitClean;
  }
  if (options.version) {
    fmt::print("accelc {} (plan format {})\nschemas modelled from {} and {}\n", kVersion,
               accel::plan::kFormat, accel::pipeline::kModelledAccelerate,
               accel::pipeline::kModelledDeepSpeed);
    return kExitClean;
  }
  if (!error.empty()) {
    // A misspelt command is one line; the whole usage text would bury the suggestion.
    bool misspelt = error.find("did you mean") != std::string::npos;
    fmt::print(stderr, "accelc: error: {}\n{}", error, misspelt ? "" : "\n" + Usage());
    return kExitUsage;
  }
  if (options.command == "parse") return ParseOnly(options);
  if (options.command == "fmt") {
    using accel::pipeline::FormatMode;
    FormatMode mode = options.diff    ? FormatMode::kDiff
                      : options.check ? FormatMode::kCheck
                                      : FormatMode::kWrite;
    bool color = isatty(STDERR_FILENO) && std::getenv("NO_COLOR") == nullptr;
    return accel::pipeline::FormatFiles(options.files, mode, color);
  }

  accel::diag::DiagnosticEngine stdlib_diagnostics;
  std::unique_ptr<accel::pipeline::Stdlib> loaded = accel::pipeline::Stdlib::Load(stdlib_diagnostics);
  // Lives until the process ends and is never destroyed: the kernel takes its memory back at
  // once, where its destructors would walk every schema node (7% of checking one config).
  const accel::pipeline::Stdlib* stdlib = loaded.get();
  llvm::BuryPointer(std::move(loaded));
  if (stdlib_diagnostics.has_errors()) {
    fmt::print(stderr, "accelc: internal error: the embedded stdlib does not check:\n{}",
               accel::diag::RenderText(stdlib_diagnostics.diagnostics()));
    return kExitUsage;
  }
  if (options.command == "explain-code") return ExplainCodes(options, stdlib->schema());
  if (options.command == "init") {
    return RunInit({.output = options.output,
                                   .accelerate_yaml = options.format == "accelerate-yaml",
                                   .defaults = options.defaults,
                                   .force = options.force},
                                  *stdlib);
  }
  if (options.command == "lsp") {
    accel::lsp::ServerOptions server;
    server.reference_base =
        options.reference_url.empty() ? accel::lsp::DefaultReferenceBase() : options.reference_url;
    server.stdlib_dir = accel::lsp::DefaultStdlibDir(*stdlib);
    accel::lsp::FdSource in(STDIN_FILENO);
    accel::lsp::FdSink out(STDOUT_FILENO);
    return accel::lsp::Serve(in, out, *stdlib, server);
  }
  if (options.command == "diff" && options.files.size() == 1) return DiffAcrossReleases(options, *stdlib);
  if (options.command == "explain" || options.command == "diff") return DescribePlans(options, *stdlib);
  if (options.command == "export" && options.to == "sbatch") return ExportBatchScript(options, *stdlib);
  if (options.command == "import" || options.command == "export") return Convert(options, *stdlib);
  if (options.command == "docs") return WriteReference(options.output, stdlib->schema());
  if (std::string error = CheckToggles(options, stdlib->schema()); !error.empty()) {
    fmt::print(stderr, "accelc: error: {}\n", error);
    return kExitUsage;
  }

  int status = kExitClean;
  std::vector<std::string> files = options.files;
  if (options.command == "check") {
    const accel::sema::Schema& schema = stdlib->schema();
    accel::pipeline::Inputs inputs =
        accel::pipeline::ExpandInputs(options.files, [&](const std::string& path) {
          return accel::pipeline::WhyNotConfigJson(path, schema);
        });
    for (const std::string& error : inputs.errors) fmt::print(stderr, "accelc: error: {}\n", error);
    for (const std::string& skipped : inputs.skipped) {
      fmt::print(stderr, "accelc: note: skipped {}\n", skipped);
    }
    if (!inputs.errors.empty()) status = kExitUsage;
    files = std::move(inputs.files);
  }
  accel::sema::MapEnvironment environment = MakeEnvironment(options);
  accel::pipeline::CompileOptions compile_options = options.compile;
  // `check` validates for any engine unless asked for the native runtime; building a plan
  // is always for the native runtime.
  compile_options.lower = options.command == "compile" || options.target == "native";
  compile_options.note_native = options.command == "check" && !compile_options.lower && !options.verify;
  compile_options.overrides = options.overrides;
  compile_options.confine_references = options.command == "check" && !options.read_outside_repo;
  unsigned jobs = options.jobs != 0 ? options.jobs : std::max(1u, std::thread::hardware_concurrency());
  auto results = std::make_unique<std::vector<Compilation>>(
      CompileAll(files, *stdlib, environment, compile_options, jobs));
  // Never destroyed either, as the stdlib above: every file's tree stays until the exit.
  std::vector<Compilation>& compilations = *results;
  llvm::BuryPointer(std::move(results));

  int errors = 0;
  int warnings = 0;
  int suppressed = 0;
  ReportedOnce reported;
  for (size_t i = 0; i < compilations.size(); ++i) {
    Compilation& compilation = compilations[i];
    if (!options.verify) {
      int dropped = 0;
      compilation.diagnostics = accel::pipeline::Filter(
          compilation.source.get(), std::move(compilation.diagnostics), options.filter, &dropped);
      suppressed += dropped;
      compilation.diagnostics = reported.Unseen(std::move(compilation.diagnostics));
    }
    errors += compilation.diagnostics.error_count();
    warnings += compilation.diagnostics.warning_count();
    if (!compilation.source) {
      status = kExitUsage;
      continue;
    }
    if (options.verify) {
      std::vector<std::string> problems =
          accel::pipeline::Verify(*compilation.source, compilation.diagnostics.diagnostics());
      for (const std::string& problem : problems) fmt::print(stderr, "{}\n", problem);
      if (!problems.empty() && status == kExitClean) status = kExitDiagnostics;
      continue;
    }
    if (compilation.diagnostics.has_errors()) {
      if (status == kExitClean) status = kExitDiagnostics;
      continue;
    }
    if (options.command == "compile") {
      if (compilation.schema_only || compilation.config_file) {
        fmt::print(stderr, "accelc: error: `{}` {}; only a job spec compiles to a plan\n", files[i],
                   compilation.config_file ? "is a config file (`accelc check` checks it)"
                                           : "declares schemas but no job");
        status = kExitDiagnostics;
        continue;
      }
      // accelrun reads the plan's input paths relative to the plan file's directory; on stdout
      // the plan is taken to be written in the working directory, where they already point.
      if (!options.output.empty()) {
        accel::plan::RebaseInputPaths(*compilation.plan, std::filesystem::current_path(),
                                      std::filesystem::absolute(options.output).parent_path());
      }
      std::string json = accel::plan::ToJson(*compilation.plan);
      if (options.output.empty()) {
        fmt::print("{}", json);
      } else if (!WriteFile(options.output, json)) {
        fmt::print(stderr, "accelc: error: cannot write `{}`\n", options.output);
        return kExitUsage;
      }
    }
  }
  if (options.verify) {
    // Unreadable files still say why.
    for (const Compilation& c : compilations) {
      if (!c.source) fmt::print(stderr, "{}", accel::diag::RenderText(c.diagnostics.diagnostics()));
    }
    return status;
  }
  Report(compilations, options);
  if (options.command == "check") {
    fmt::print(stderr, "{} file{} checked: {} error{}, {} warning{}{}\n", files.size(),
               files.size() == 1 ? "" : "s", errors, errors == 1 ? "" : "s", warnings,
               warnings == 1 ? "" : "s", suppressed > 0 ? fmt::format(", {} suppressed", suppressed) : "");
  }
  return status;
}

}  // namespace
}  // namespace accel::accelc

int main(int argc, char** argv) { return accel::accelc::Main(argc, argv); }
