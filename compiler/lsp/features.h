#ifndef ACCEL_COMPILER_LSP_FEATURES_H_
#define ACCEL_COMPILER_LSP_FEATURES_H_

// The language features, one file each, over a document and its latest analysis. Each takes
// the request's params and returns its result as JSON, or a ProtocolError.

#include "llvm/Support/Error.h"
#include "llvm/Support/JSON.h"

#include "compiler/lsp/analysis.h"
#include "compiler/lsp/cursor.h"
#include "compiler/lsp/document_store.h"
#include "compiler/lsp/links.h"
#include "compiler/sema/schema.h"

namespace accel::lsp {

// What every feature reads. The document and analysis are of one version of the text.
struct FeatureContext {
  const Document& document;
  const Analysis& analysis;
  const sema::Schema& schema;
  Links& links;
};

// The kind of text a document holds, by its name as `accelc check` decides.
enum class DocumentFormat { kSpec, kYaml, kJson };
DocumentFormat FormatOf(const Document& document);

// textDocument/publishDiagnostics params: the analysis' diagnostics in this document.
// Diagnostics located in another file (an imported spec, the DeepSpeed JSON a config names) are
// shown at the top of this one, with their place as related information.
llvm::json::Value PublishDiagnostics(const FeatureContext& context);

// textDocument/hover, textDocument/completion, textDocument/definition.
llvm::Expected<llvm::json::Value> Hover(const FeatureContext& context, const llvm::json::Object& params);
llvm::Expected<llvm::json::Value> Completion(const FeatureContext& context, const llvm::json::Object& params);
llvm::Expected<llvm::json::Value> Definition(const FeatureContext& context, const llvm::json::Object& params);

// textDocument/documentSymbol (hierarchical), textDocument/formatting, textDocument/codeAction.
llvm::Expected<llvm::json::Value> DocumentSymbols(const FeatureContext& context,
                                                  const llvm::json::Object& params);
llvm::Expected<llvm::json::Value> Formatting(const FeatureContext& context, const llvm::json::Object& params);
llvm::Expected<llvm::json::Value> CodeActions(const FeatureContext& context,
                                              const llvm::json::Object& params);

// One diagnostic as LSP's Diagnostic object (range in `document`'s text).
llvm::json::Value ToLspDiagnostic(const diag::Diagnostic& diagnostic, const FeatureContext& context);

// The cursor at `position` (cursor.h), for the document's format; kNone in JSON files.
Cursor CursorAt(const FeatureContext& context, Position position);

}  // namespace accel::lsp

#endif  // ACCEL_COMPILER_LSP_FEATURES_H_
