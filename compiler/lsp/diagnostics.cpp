// textDocument/publishDiagnostics: the diagnostics of `accelc check` in LSP's shape.
#include <fmt/format.h>

#include "compiler/config/reader.h"
#include "compiler/lsp/features.h"
#include "compiler/lsp/protocol.h"

namespace accel::lsp {
namespace {

DiagnosticSeverity SeverityOf(diag::Severity severity) {
  switch (severity) {
    case diag::Severity::Error:
      return DiagnosticSeverity::kError;
    case diag::Severity::Warning:
      return DiagnosticSeverity::kWarning;
    case diag::Severity::Note:
      return DiagnosticSeverity::kInformation;
  }
  return DiagnosticSeverity::kError;
}

// A location in any file the compilation read: this document, an imported one, the stdlib.
llvm::json::Value Location(const source::SourceFile& file, source::Span span, Links& links) {
  LineIndex index(file.text());
  return llvm::json::Object{{"uri", links.UriOf(file)}, {"range", ToJson(index.RangeOf(span))}};
}

}  // namespace

DocumentFormat FormatOf(const Document& document) {
  if (!config::IsConfigFileName(document.path)) return DocumentFormat::kSpec;
  size_t dot = document.path.rfind('.');
  return dot != std::string::npos && document.path.substr(dot) == ".json" ? DocumentFormat::kJson
                                                                          : DocumentFormat::kYaml;
}

llvm::json::Value ToLspDiagnostic(const diag::Diagnostic& diagnostic, const FeatureContext& context) {
  const source::SourceFile* own = context.analysis.compilation.source.get();
  bool here = diagnostic.file != nullptr && diagnostic.file == own;
  LineIndex index(context.document.text);
  Range range = here ? index.RangeOf(diagnostic.span) : Range{};
  std::string message = diagnostic.message;
  llvm::json::Array related;
  if (diagnostic.file != nullptr && !here) {
    // Shown at the top of this file, the place it is about linked.
    source::LineColumn at = diagnostic.file->Locate(diagnostic.span.begin);
    message = fmt::format("{}:{}:{}: {}", diagnostic.file->name(), at.line, at.column, message);
    related.push_back(
        llvm::json::Object{{"location", Location(*diagnostic.file, diagnostic.span, context.links)},
                           {"message", diagnostic.message}});
  }
  for (const diag::Diagnostic& note : diagnostic.notes) {
    if (note.file == nullptr) {
      message += "\nnote: " + note.message;
      continue;
    }
    related.push_back(llvm::json::Object{{"location", Location(*note.file, note.span, context.links)},
                                         {"message", note.message}});
  }
  llvm::json::Object out{{"range", ToJson(range)},
                         {"severity", static_cast<int>(SeverityOf(diagnostic.severity))},
                         {"source", "accelc"},
                         {"message", message}};
  if (!diagnostic.code.empty()) {
    out["code"] = diagnostic.code;
    if (std::optional<std::string> href = context.links.CodeHref(diagnostic.code)) {
      out["codeDescription"] = llvm::json::Object{{"href", *href}};
    }
  }
  if (!related.empty()) out["relatedInformation"] = std::move(related);
  return out;
}

llvm::json::Value PublishDiagnostics(const FeatureContext& context) {
  llvm::json::Array diagnostics;
  for (const diag::Diagnostic& diagnostic : context.analysis.diagnostics) {
    diagnostics.push_back(ToLspDiagnostic(diagnostic, context));
  }
  return llvm::json::Object{{"uri", context.document.uri},
                            {"version", context.document.version},
                            {"diagnostics", std::move(diagnostics)}};
}

}  // namespace accel::lsp
