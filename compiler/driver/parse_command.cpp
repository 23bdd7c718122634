// `accelc parse` (and `dump-ast`): the parser alone, for syntax tests and tree dumps.
#include "compiler/driver/accelc_commands.h"

#include <cstdio>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "compiler/ast/ast.h"
#include "compiler/diagnostics/diagnostic.h"
#include "compiler/diagnostics/render.h"
#include "compiler/parse/parse.h"
#include "compiler/pipeline/compile.h"
#include "compiler/pipeline/verify.h"
#include "compiler/source/source_file.h"
#include "llvm/Support/Error.h"

namespace accel::accelc {

// `accelc parse`: the parser alone, for syntax tests and tree dumps.
int ParseOnly(const Options& options) {
  int status = kExitClean;
  for (const std::string& path : options.files) {
    llvm::Expected<accel::source::SourceFile> source =
        accel::source::SourceFile::Read(path, accel::pipeline::kMaxSourceBytes);
    if (!source) {
      status = kExitUsage;
      llvm::handleAllErrors(
          source.takeError(),
          [&](const accel::source::FileTooLargeError& error) {
            fmt::print(stderr, "accelc: error: {} [A1008]\n", error.message());
            status = kExitDiagnostics;
          },
          [](const llvm::ErrorInfoBase& error) {
            fmt::print(stderr, "accelc: error: {}\n", error.message());
          });
      continue;
    }
    accel::diag::DiagnosticEngine diagnostics;
    accel::ast::File file = accel::parse::Parse(*source, diagnostics);
    if (options.dump_ast) fmt::print("{}", accel::ast::Dump(file));
    if (options.verify) {
      std::vector<std::string> problems = accel::pipeline::Verify(*source, diagnostics.diagnostics());
      for (const std::string& problem : problems) fmt::print(stderr, "{}\n", problem);
      if (!problems.empty() && status == kExitClean) status = kExitDiagnostics;
      continue;
    }
    fmt::print(stderr, "{}", accel::diag::RenderText(diagnostics.diagnostics()));
    if (diagnostics.has_errors() && status == kExitClean) status = kExitDiagnostics;
  }
  return status;
}

}  // namespace accel::accelc
