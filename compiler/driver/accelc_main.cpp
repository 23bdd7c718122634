// accelc: checks `.accel` job specs and compiles them to execution plans. Links no LibTorch.
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "compiler/ast/ast.h"
#include "compiler/diagnostics/render.h"
#include "compiler/driver/compile.h"
#include "compiler/driver/verify.h"
#include "compiler/parse/parse.h"

namespace {

using accel::driver::Compilation;

constexpr int kExitClean = 0;
constexpr int kExitDiagnostics = 1;
constexpr int kExitUsage = 2;
constexpr const char* kVersion = "0.1.0";

constexpr const char* kUsage = R"(usage: accelc <command> [options] <file>...

commands:
  check <file>...         check job specs; print every problem found
  compile <file> [-o out] compile one spec to an execution plan (JSON, stdout by default)
  parse <file>...         only parse: report syntax errors (with --dump-ast, print the tree)
  dump-ast <file>         the same as `parse --dump-ast`

options:
  --format <f>            diagnostics format: text (default, stderr), json, sarif (SARIF 2.1.0
                          for code scanning) or github (workflow annotations); all but text
                          go to stdout
  --dump-ast              with `parse`: print the syntax tree of each file
  --verify                check that each file produces exactly the diagnostics its
                          `expected-error {{...}}` comments state (as clang -verify)
  --version               print the version
  -h, --help              print this help

exit status: 0 clean, 1 errors were reported, 2 usage or I/O failure
)";

struct Options {
  std::string command;
  std::vector<std::string> files;
  std::string output;
  std::string format = "text";
  bool verify = false;
  bool dump_ast = false;
};

// Parses argv; returns an error message, or "" on success.
std::string ParseArguments(int argc, char** argv, Options& options) {
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    auto value = [&](const std::string& flag) -> std::string {
      if (i + 1 >= argc) return "";
      return argv[++i];
    };
    if (arg == "-o") {
      options.output = value(arg);
      if (options.output.empty()) return "`-o` needs a file name";
    } else if (arg == "--format" || arg.rfind("--format=", 0) == 0) {
      options.format = arg == "--format" ? value(arg) : arg.substr(9);
      if (options.format != "text" && options.format != "json" && options.format != "sarif" &&
          options.format != "github") {
        return fmt::format("unknown format `{}`; expected `text`, `json`, `sarif` or `github`",
                           options.format);
      }
    } else if (arg == "--verify") {
      options.verify = true;
    } else if (arg == "--dump-ast") {
      options.dump_ast = true;
    } else if (arg.size() > 1 && arg[0] == '-') {  // a lone `-` is standard input
      return fmt::format("unknown option `{}`", arg);
    } else if (options.command.empty()) {
      options.command = arg;
    } else {
      options.files.push_back(arg);
    }
  }
  if (options.command == "dump-ast") {
    options.command = "parse";
    options.dump_ast = true;
  }
  if (options.command != "check" && options.command != "compile" && options.command != "parse") {
    return options.command.empty() ? "missing command" : fmt::format("unknown command `{}`", options.command);
  }
  if (options.files.empty()) return "missing input file";
  if (options.command == "compile" && options.files.size() != 1) {
    return fmt::format("`{}` takes exactly one file", options.command);
  }
  return "";
}

// Prints the diagnostics of every compilation, in the requested format, as one document.
void Report(const std::vector<Compilation>& compilations, const Options& options) {
  std::vector<accel::diag::Diagnostic> all;
  for (const Compilation& c : compilations) {
    all.insert(all.end(), c.diagnostics.diagnostics().begin(), c.diagnostics.diagnostics().end());
  }
  if (options.format == "json") {
    fmt::print("{}\n", accel::diag::RenderJson(all));
  } else if (options.format == "sarif") {
    fmt::print("{}", accel::diag::RenderSarif(all, kVersion));
  } else if (options.format == "github") {
    fmt::print("{}", accel::diag::RenderGithub(all));
  } else {
    bool color = isatty(STDERR_FILENO) && std::getenv("NO_COLOR") == nullptr;
    fmt::print(stderr, "{}", accel::diag::RenderText(all, {color}));
  }
}

bool WriteFile(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
  return static_cast<bool>(out.flush());
}

// `accelc parse`: the parser alone, for syntax tests and tree dumps.
int ParseOnly(const Options& options) {
  int status = kExitClean;
  for (const std::string& path : options.files) {
    llvm::Expected<accel::source::SourceFile> source = accel::source::SourceFile::Read(path);
    if (!source) {
      fmt::print(stderr, "accelc: error: {}\n", llvm::toString(source.takeError()));
      status = kExitUsage;
      continue;
    }
    accel::diag::DiagnosticEngine diagnostics;
    if (source->text().size() > accel::driver::kMaxSourceBytes) {
      fmt::print(stderr, "accelc: error: `{}` is {} bytes; spec files are limited to {} MiB [A1008]\n", path,
                 source->text().size(), accel::driver::kMaxSourceBytes >> 20);
      status = kExitDiagnostics;
      continue;
    }
    accel::ast::File file = accel::parse::Parse(*source, diagnostics);
    if (options.dump_ast) fmt::print("{}", accel::ast::Dump(file));
    if (options.verify) {
      std::vector<std::string> problems = accel::driver::Verify(*source, diagnostics.diagnostics());
      for (const std::string& problem : problems) fmt::print(stderr, "{}\n", problem);
      if (!problems.empty() && status == kExitClean) status = kExitDiagnostics;
      continue;
    }
    fmt::print(stderr, "{}", accel::diag::RenderText(diagnostics.diagnostics()));
    if (diagnostics.has_errors() && status == kExitClean) status = kExitDiagnostics;
  }
  return status;
}

}  // namespace

int main(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "-h" || arg == "--help") {
      fmt::print("{}", kUsage);
      return kExitClean;
    }
    if (arg == "--version") {
      fmt::print("accelc {} (plan format {})\n", kVersion, accel::plan::kFormat);
      return kExitClean;
    }
  }
  Options options;
  if (std::string error = ParseArguments(argc, argv, options); !error.empty()) {
    fmt::print(stderr, "accelc: error: {}\n\n{}", error, kUsage);
    return kExitUsage;
  }
  if (options.command == "parse") return ParseOnly(options);

  accel::diag::DiagnosticEngine stdlib_diagnostics;
  std::unique_ptr<accel::driver::Stdlib> stdlib = accel::driver::Stdlib::Load(stdlib_diagnostics);
  if (stdlib_diagnostics.has_errors()) {
    fmt::print(stderr, "accelc: internal error: the embedded stdlib does not check:\n{}",
               accel::diag::RenderText(stdlib_diagnostics.diagnostics()));
    return kExitUsage;
  }
  accel::sema::ProcessEnvironment environment;
  accel::driver::CompileOptions compile_options;
  compile_options.lower = options.command == "compile";

  int status = kExitClean;
  int errors = 0;
  int warnings = 0;
  std::vector<Compilation> compilations;
  for (const std::string& path : options.files) {
    compilations.push_back(accel::driver::CompileFile(path, *stdlib, environment, compile_options));
    Compilation& compilation = compilations.back();
    errors += compilation.diagnostics.error_count();
    warnings += compilation.diagnostics.warning_count();
    if (!compilation.source) {
      status = kExitUsage;
      continue;
    }
    if (options.verify) {
      std::vector<std::string> problems =
          accel::driver::Verify(*compilation.source, compilation.diagnostics.diagnostics());
      for (const std::string& problem : problems) fmt::print(stderr, "{}\n", problem);
      if (!problems.empty() && status == kExitClean) status = kExitDiagnostics;
      continue;
    }
    if (compilation.diagnostics.has_errors()) {
      if (status == kExitClean) status = kExitDiagnostics;
      continue;
    }
    if (options.command == "compile") {
      if (compilation.schema_only) {
        fmt::print(stderr, "accelc: error: `{}` declares schemas but no job; only a job compiles to a plan\n",
                   path);
        status = kExitDiagnostics;
        continue;
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
  if (options.command == "check" && options.format == "text") {
    fmt::print(stderr, "{} file{} checked: {} error{}, {} warning{}\n", options.files.size(),
               options.files.size() == 1 ? "" : "s", errors, errors == 1 ? "" : "s", warnings,
               warnings == 1 ? "" : "s");
  }
  return status;
}
