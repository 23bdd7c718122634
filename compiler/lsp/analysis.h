#ifndef ACCEL_COMPILER_LSP_ANALYSIS_H_
#define ACCEL_COMPILER_LSP_ANALYSIS_H_

// One document compiled as `accelc check` compiles a file, kept until its next edit.

#include <memory>
#include <vector>

#include "compiler/diagnostics/diagnostic.h"
#include "compiler/pipeline/compile.h"
#include "compiler/pipeline/stdlib.h"
#include "compiler/lsp/document_store.h"

namespace accel::lsp {

struct Analysis {
  pipeline::Compilation compilation;
  // What `accelc check FILE` prints for the document: after suppression comments, with the
  // notes of what accelrun cannot run. Points into `compilation`.
  std::vector<diag::Diagnostic> diagnostics;
};

// Compiles the editor's text of `document` under its path (so imports, `extends` and a
// DeepSpeed JSON that a config names resolve next to it, and the suffix picks the format), with
// `accelc check`'s defaults: not lowered, no environment variables. `stdlib` must outlive the
// result.
std::unique_ptr<Analysis> Analyze(const Document& document, const pipeline::Stdlib& stdlib);

}  // namespace accel::lsp

#endif  // ACCEL_COMPILER_LSP_ANALYSIS_H_
