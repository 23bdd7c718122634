#include "compiler/sema/lets.h"

namespace accel::sema {

void Lets::Declare(const std::vector<LetBinding>& bindings) {
  for (const LetBinding& binding : bindings) {
    auto [it, inserted] = bindings_.emplace(std::make_pair(binding.visible_in, binding.name), binding);
    if (!inserted) {
      diag::Diagnostic& d = diagnostics_.Emit(diag::Kind::DuplicateDeclaration, binding.file,
                                              binding.let->name.span, binding.name);
      d.notes.push_back(diag::DiagnosticEngine::Note(diag::Kind::NoteDeclaredHere, it->second.file,
                                                     it->second.let->name.span, binding.name));
    }
  }
}

void Lets::ContinueFrom(const Lets& outer) {
  bindings_ = outer.bindings_;
  expanding_ = outer.expanding_;
}

const LetBinding* Lets::Named(const ast::Expr& expr, const source::SourceFile* file) const {
  if (expr.kind != ast::ExprKind::Path || expr.path.empty()) return nullptr;
  std::string name;
  for (const ast::Name& part : expr.path) name += (name.empty() ? "" : ".") + part.text;
  auto it = bindings_.find(std::make_pair(file, name));
  return it == bindings_.end() ? nullptr : &it->second;
}

std::optional<Value> Lets::Expand(const LetBinding& binding, const ast::Expr& use, const Type& type,
                                  const source::SourceFile* file, const std::string& path,
                                  const Convert& convert) {
  const ast::LetDecl& let = *binding.let;
  if (!expanding_.insert(binding.let).second) {
    diag::Diagnostic& d = diagnostics_.Emit(diag::Kind::CyclicLet, file, use.span, binding.name);
    d.notes.push_back(diag::DiagnosticEngine::Note(diag::Kind::NoteDeclaredHere, binding.file, let.name.span,
                                                   binding.name));
    return std::nullopt;
  }
  std::optional<Value> value;
  if (let.value && TypeAccepts(binding, convert)) value = convert(*let.value, type, binding.file, path);
  expanding_.erase(binding.let);
  // The value's provenance is the use site: that is where the user set the field.
  if (value) value->provenance = {Provenance::Kind::Spec, file, use.span, ""};
  return value;
}

// A typed `let` (`let port: int = 8080`) must hold a value of its own type, checked once at
// its first use; the use site then checks it against the field.
bool Lets::TypeAccepts(const LetBinding& binding, const Convert& convert) {
  const ast::LetDecl& let = *binding.let;
  if (!let.type) return true;
  auto [it, first] = checked_.emplace(binding.let, true);
  if (!first) return it->second;
  const ast::Name* unknown = nullptr;
  std::optional<Type> type = ResolveType(*let.type, schema_, &unknown);
  if (!type) {
    if (unknown) diagnostics_.Emit(diag::Kind::UnknownType, binding.file, unknown->span, unknown->text, "");
    return it->second = false;
  }
  return it->second = convert(*let.value, *type, binding.file, binding.name).has_value();
}

}  // namespace accel::sema
