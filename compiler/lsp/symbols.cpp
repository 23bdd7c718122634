// textDocument/documentSymbol: the outline of a spec (imports, lets, schema declarations, the
// job and its nested blocks) or of a config file (its keys).
#include "compiler/lsp/features.h"
#include "compiler/lsp/protocol.h"

namespace accel::lsp {
namespace {

llvm::json::Object Symbol(std::string name, SymbolKind kind, const Range& range, const Range& selection) {
  // LSP refuses empty names; a recovered parse may leave one.
  return llvm::json::Object{{"name", name.empty() ? std::string("?") : std::move(name)},
                            {"kind", static_cast<int>(kind)},
                            {"range", ToJson(range)},
                            {"selectionRange", ToJson(selection)}};
}

// The selection must lie inside the range; a recovered parse can break that.
Range Within(const Range& range, Range selection) {
  auto before = [](Position a, Position b) {
    return a.line < b.line || (a.line == b.line && a.character < b.character);
  };
  if (before(selection.start, range.start) || before(range.end, selection.end))
    return {range.start, range.start};
  return selection;
}

llvm::json::Array BlockSymbols(const ast::Block& block, const LineIndex& index, int depth);

llvm::json::Array ExprChildren(const ast::Expr& expr, const LineIndex& index, int depth) {
  if (expr.kind == ast::ExprKind::Record && expr.block) return BlockSymbols(*expr.block, index, depth + 1);
  llvm::json::Array children;
  if (expr.kind == ast::ExprKind::List) {
    for (const ast::ExprPtr& item : expr.operands) {
      if (!item || item->kind != ast::ExprKind::Record || !item->block) continue;
      Range range = index.RangeOf(item->span);
      llvm::json::Object symbol =
          Symbol(item->text.empty() ? "item" : item->text, SymbolKind::kObject, range, range);
      symbol["children"] = BlockSymbols(*item->block, index, depth + 1);
      children.push_back(std::move(symbol));
    }
  }
  return children;
}

llvm::json::Array BlockSymbols(const ast::Block& block, const LineIndex& index, int depth) {
  llvm::json::Array symbols;
  // Nesting is bounded by the parser (A1006); this only guards the recursion itself.
  if (depth > 64) return symbols;
  for (const ast::Statement& statement : block.statements) {
    if (statement.path.empty()) continue;
    std::string name;
    for (const ast::Name& segment : statement.path) name += (name.empty() ? "" : ".") + segment.text;
    Range range = index.RangeOf(statement.span);
    Range selection =
        index.RangeOf(source::Span::Join(statement.path.front().span, statement.path.back().span));
    llvm::json::Object symbol = Symbol(name, SymbolKind::kField, range, Within(range, selection));
    llvm::json::Array children;
    if (statement.block) children = BlockSymbols(*statement.block, index, depth + 1);
    if (statement.value) children = ExprChildren(*statement.value, index, depth);
    if (!children.empty()) symbol["children"] = std::move(children);
    symbols.push_back(std::move(symbol));
  }
  return symbols;
}

}  // namespace

llvm::Expected<llvm::json::Value> DocumentSymbols(const FeatureContext& context,
                                                  const llvm::json::Object& params) {
  const ast::File* file = context.analysis.compilation.tree.get();
  llvm::json::Array symbols;
  if (file == nullptr) return symbols;
  LineIndex index(context.document.text);
  if (FormatOf(context.document) != DocumentFormat::kSpec) {
    // A config file is one synthetic job: its keys are the outline.
    for (const ast::JobDecl& job : file->jobs) {
      for (llvm::json::Value& symbol : BlockSymbols(job.body, index, 0)) symbols.push_back(std::move(symbol));
    }
    return symbols;
  }
  for (const ast::ImportDecl& import : file->imports) {
    Range range = index.RangeOf(import.span);
    symbols.push_back(Symbol(import.path, SymbolKind::kModule, range, range));
  }
  for (const ast::LetDecl& let : file->lets) {
    Range range = index.RangeOf(let.span);
    symbols.push_back(
        Symbol(let.name.text, SymbolKind::kConstant, range, Within(range, index.RangeOf(let.name.span))));
  }
  for (const ast::EnumDecl& decl : file->enums) {
    Range range = index.RangeOf(decl.span);
    symbols.push_back(
        Symbol(decl.name.text, SymbolKind::kEnum, range, Within(range, index.RangeOf(decl.name.span))));
  }
  for (const ast::RecordDecl& decl : file->records) {
    Range range = index.RangeOf(decl.span);
    llvm::json::Object symbol =
        Symbol(decl.name.text, SymbolKind::kStruct, range, Within(range, index.RangeOf(decl.name.span)));
    llvm::json::Array fields;
    for (const ast::FieldDecl& field : decl.fields) {
      Range field_range = index.RangeOf(field.span);
      fields.push_back(Symbol(field.name.text, SymbolKind::kField, field_range,
                              Within(field_range, index.RangeOf(field.name.span))));
    }
    if (!fields.empty()) symbol["children"] = std::move(fields);
    symbols.push_back(std::move(symbol));
  }
  for (const ast::JobDecl& job : file->jobs) {
    Range range = index.RangeOf(job.span);
    llvm::json::Object symbol = Symbol("job " + job.name.text, SymbolKind::kObject, range,
                                       Within(range, index.RangeOf(job.name.span)));
    llvm::json::Array children = BlockSymbols(job.body, index, 0);
    if (!children.empty()) symbol["children"] = std::move(children);
    symbols.push_back(std::move(symbol));
  }
  return symbols;
}

}  // namespace accel::lsp
