#include "compiler/lsp/analysis.h"

#include "compiler/pipeline/filter.h"
#include "compiler/sema/environment.h"

namespace accel::lsp {

std::unique_ptr<Analysis> Analyze(const Document& document, const pipeline::Stdlib& stdlib) {
  // `accelc check` reads no environment variables unless asked to; the editor's view matches a
  // CI run of `accelc check`, not the environment the editor happened to start in.
  static const sema::MapEnvironment kNoEnvironment;
  pipeline::CompileOptions options;
  options.lower = false;
  options.note_native = true;
  // An editor opens repositories it has never seen: the files their configs name are confined
  // as in `accelc check`.
  options.confine_references = true;
  auto analysis = std::make_unique<Analysis>();
  analysis->compilation = pipeline::CompileText(document.path, document.text, stdlib, kNoEnvironment, options);
  int suppressed = 0;
  diag::DiagnosticEngine shown =
      pipeline::Filter(analysis->compilation.source.get(), std::move(analysis->compilation.diagnostics),
                     pipeline::FilterOptions{}, &suppressed);
  analysis->diagnostics = shown.diagnostics();
  return analysis;
}

}  // namespace accel::lsp
