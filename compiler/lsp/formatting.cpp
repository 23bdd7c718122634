// textDocument/formatting: `accelc fmt`'s layout as one edit; nothing for a file that does not
// parse (its syntax errors are already published) or that is not a `.accel` spec.
#include "compiler/format/format.h"
#include "compiler/lsp/features.h"
#include "compiler/lsp/protocol.h"

namespace accel::lsp {

llvm::Expected<llvm::json::Value> Formatting(const FeatureContext& context,
                                             const llvm::json::Object& params) {
  llvm::json::Array edits;
  if (FormatOf(context.document) != DocumentFormat::kSpec) return edits;
  source::SourceFile source(context.document.path, context.document.text);
  diag::DiagnosticEngine diagnostics;
  format::Formatted formatted = format::Format(source, diagnostics);
  if (formatted.outcome == format::Formatted::Outcome::kUnsafe) {
    return llvm::make_error<ProtocolError>(ErrorCode::kRequestFailed,
                                           "accelc fmt left the file alone: " + formatted.problem);
  }
  if (formatted.outcome != format::Formatted::Outcome::kFormatted ||
      formatted.text == context.document.text) {
    return edits;
  }
  // One edit over the whole text: the layout can move every line, and editors diff it anyway.
  LineIndex index(context.document.text);
  Range whole{{0, 0}, index.PositionOf(static_cast<uint32_t>(context.document.text.size()))};
  edits.push_back(llvm::json::Object{{"range", ToJson(whole)}, {"newText", formatted.text}});
  return edits;
}

}  // namespace accel::lsp
