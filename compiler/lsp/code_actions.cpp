// textDocument/codeAction: every fix-it of the diagnostics in the requested range (did-you-mean
// field and member names, new names of renamed and deprecated fields, quoting) as a quick fix.
#include <fmt/format.h>

#include "compiler/lsp/features.h"
#include "compiler/lsp/protocol.h"

namespace accel::lsp {
namespace {

bool Before(Position a, Position b) {
  return a.line < b.line || (a.line == b.line && a.character < b.character);
}

// Ranges that touch count: a cursor at the end of a misspelt name still offers its fix.
bool Touches(const Range& a, const Range& b) { return !Before(a.end, b.start) && !Before(b.end, a.start); }

}  // namespace

llvm::Expected<llvm::json::Value> CodeActions(const FeatureContext& context,
                                              const llvm::json::Object& params) {
  llvm::Expected<Range> requested = GetRange(params, "range", "params");
  if (!requested) return requested.takeError();
  const source::SourceFile* own = context.analysis.compilation.source.get();
  LineIndex index(context.document.text);
  llvm::json::Array actions;
  for (const diag::Diagnostic& diagnostic : context.analysis.diagnostics) {
    if (!diagnostic.fixit || diagnostic.file != own || own == nullptr) continue;
    Range range = index.RangeOf(diagnostic.fixit->span);
    if (!Touches(range, *requested) && !Touches(index.RangeOf(diagnostic.span), *requested)) continue;
    std::string current(own->Slice(diagnostic.fixit->span));
    std::string title = diagnostic.fixit->replacement.empty()
                            ? fmt::format("Remove `{}`", current)
                            : fmt::format("Replace `{}` with `{}`", current, diagnostic.fixit->replacement);
    llvm::json::Array edits;
    edits.push_back(llvm::json::Object{{"range", ToJson(range)}, {"newText", diagnostic.fixit->replacement}});
    llvm::json::Object changes;
    changes[context.document.uri] = std::move(edits);
    actions.push_back(llvm::json::Object{
        {"title", title},
        {"kind", "quickfix"},
        {"diagnostics", llvm::json::Array{ToLspDiagnostic(diagnostic, context)}},
        {"isPreferred", true},
        {"edit", llvm::json::Object{{"changes", std::move(changes)}}},
    });
  }
  return actions;
}

}  // namespace accel::lsp
