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
#include "compiler/parse/parse.h"

namespace {

using accel::driver::Compilation;

constexpr int kExitClean = 0;
constexpr int kExitDiagnostics = 1;
constexpr int kExitUsage = 2;

constexpr const char* kUsage = R"(usage: accelc <command> [options] <file>...

commands:
  check <file>...         check job specs; print every problem found
  compile <file> [-o out] compile one spec to an execution plan (JSON, stdout by default)
  dump-ast <file>         print the syntax tree of a file

options:
  --format text|json      diagnostics format (default text; json goes to stdout)
  --version               print the version
  -h, --help              print this help

exit status: 0 clean, 1 errors were reported, 2 usage or I/O failure
)";

struct Options {
  std::string command;
  std::vector<std::string> files;
  std::string output;
  std::string format = "text";
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
      if (options.format != "text" && options.format != "json") {
        return fmt::format("unknown format `{}`; expected `text` or `json`", options.format);
      }
    } else if (arg.size() > 1 && arg[0] == '-') {  // a lone `-` is standard input
      return fmt::format("unknown option `{}`", arg);
    } else if (options.command.empty()) {
      options.command = arg;
    } else {
      options.files.push_back(arg);
    }
  }
  if (options.command != "check" && options.command != "compile" && options.command != "dump-ast") {
    return options.command.empty() ? "missing command" : fmt::format("unknown command `{}`", options.command);
  }
  if (options.files.empty()) return "missing input file";
  if (options.command != "check" && options.files.size() != 1) {
    return fmt::format("`{}` takes exactly one file", options.command);
  }
  return "";
}

void Report(const Compilation& compilation, const Options& options) {
  const auto& diagnostics = compilation.diagnostics.diagnostics();
  if (options.format == "json") {
    fmt::print("{}\n", accel::diag::RenderJson(diagnostics));
    return;
  }
  bool color = isatty(STDERR_FILENO) && std::getenv("NO_COLOR") == nullptr;
  fmt::print(stderr, "{}", accel::diag::RenderText(diagnostics, {color}));
}

bool WriteFile(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
  return static_cast<bool>(out.flush());
}

int DumpAst(const std::string& path) {
  llvm::Expected<accel::source::SourceFile> source = accel::source::SourceFile::Read(path);
  if (!source) {
    fmt::print(stderr, "accelc: error: {}\n", llvm::toString(source.takeError()));
    return kExitUsage;
  }
  accel::diag::DiagnosticEngine diagnostics;
  accel::ast::File file = accel::parse::Parse(*source, diagnostics);
  fmt::print("{}", accel::ast::Dump(file));
  fmt::print(stderr, "{}", accel::diag::RenderText(diagnostics.diagnostics()));
  return diagnostics.has_errors() ? kExitDiagnostics : kExitClean;
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
      fmt::print("accelc 0.1.0 (plan format {})\n", accel::plan::kFormat);
      return kExitClean;
    }
  }
  Options options;
  if (std::string error = ParseArguments(argc, argv, options); !error.empty()) {
    fmt::print(stderr, "accelc: error: {}\n\n{}", error, kUsage);
    return kExitUsage;
  }
  if (options.command == "dump-ast") return DumpAst(options.files[0]);

  accel::diag::DiagnosticEngine stdlib_diagnostics;
  std::unique_ptr<accel::driver::Stdlib> stdlib = accel::driver::Stdlib::Load(stdlib_diagnostics);
  if (stdlib_diagnostics.has_errors()) {
    fmt::print(stderr, "accelc: internal error: the embedded stdlib does not check:\n{}",
               accel::diag::RenderText(stdlib_diagnostics.diagnostics()));
    return kExitUsage;
  }
  accel::sema::ProcessEnvironment environment;

  int status = kExitClean;
  int errors = 0;
  int warnings = 0;
  for (const std::string& path : options.files) {
    Compilation compilation = accel::driver::CompileFile(path, *stdlib, environment);
    Report(compilation, options);
    errors += compilation.diagnostics.error_count();
    warnings += compilation.diagnostics.warning_count();
    if (!compilation.source) {
      status = kExitUsage;
      continue;
    }
    if (compilation.diagnostics.has_errors()) {
      if (status == kExitClean) status = kExitDiagnostics;
      continue;
    }
    if (options.command == "compile") {
      std::string json = accel::plan::ToJson(*compilation.plan);
      if (options.output.empty()) {
        fmt::print("{}", json);
      } else if (!WriteFile(options.output, json)) {
        fmt::print(stderr, "accelc: error: cannot write `{}`\n", options.output);
        return kExitUsage;
      }
    }
  }
  if (options.command == "check" && options.format == "text") {
    fmt::print(stderr, "{} file{} checked: {} error{}, {} warning{}\n", options.files.size(),
               options.files.size() == 1 ? "" : "s", errors, errors == 1 ? "" : "s", warnings,
               warnings == 1 ? "" : "s");
  }
  return status;
}
