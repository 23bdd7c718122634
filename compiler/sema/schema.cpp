#include "compiler/sema/schema.h"

#include <fmt/format.h>
#include <algorithm>

#include "compiler/sema/evaluate.h"

namespace accel::sema {

const FieldSchema* RecordSchema::Find(std::string_view field) const {
  for (const FieldSchema& f : fields) {
    if (f.name == field) return &f;
  }
  return nullptr;
}

const FieldSchema* RecordSchema::FindAlias(std::string_view alias) const {
  for (const FieldSchema& f : fields) {
    for (const std::string& name : f.aliases) {
      if (name == alias) return &f;
    }
  }
  return nullptr;
}

const FieldSchema* RecordSchema::FindSynonym(std::string_view name) const {
  for (const FieldSchema& f : fields) {
    if (std::find(f.synonyms.begin(), f.synonyms.end(), name) != f.synonyms.end()) return &f;
  }
  return nullptr;
}

const FieldSchema* RecordSchema::FindFileKey(std::string_view key) const {
  for (const FieldSchema& f : fields) {
    if (f.file_key.value_or(f.name) == key) return &f;
  }
  return nullptr;
}

std::vector<std::string> RecordSchema::FileKeys() const {
  std::vector<std::string> keys;
  for (const FieldSchema& f : fields) keys.push_back(f.file_key.value_or(f.name));
  return keys;
}

std::vector<std::string> RecordSchema::FieldNames() const {
  std::vector<std::string> names;
  for (const FieldSchema& f : fields) names.push_back(f.name);
  return names;
}

const EnumSchema::Member* EnumSchema::Find(std::string_view name) const {
  for (const Member& m : members) {
    if (m.name == name) return &m;
  }
  for (const Member& m : members) {
    if (m.value == name) return &m;
  }
  return nullptr;
}

namespace {

class SchemaBuilder {
 public:
  explicit SchemaBuilder(diag::DiagnosticEngine& diagnostics) : diagnostics_(diagnostics) {}

  Schema Build(const std::vector<const ast::File*>& files) {
    // Names first, so a field may use a type declared later or in another file.
    for (const ast::File* file : files) DeclareNames(*file);
    for (const ast::File* file : files) {
      for (const ast::RecordDecl& decl : file->records) DefineRecord(*file, decl);
    }
    for (auto& [name, record] : schema_.records) CheckNames(record);
    return std::move(schema_);
  }

 private:
  void DeclareNames(const ast::File& file) {
    for (const ast::EnumDecl& decl : file.enums) {
      if (!Claim(file, decl.name)) continue;
      EnumSchema& e = schema_.enums[decl.name.text];
      e.name = decl.name.text;
      e.doc = decl.doc;
      for (const ast::EnumMember& m : decl.members) e.members.push_back({m.name.text, m.value, m.doc});
    }
    for (const ast::RecordDecl& decl : file.records) {
      if (decl.kind == "extend") continue;  // adds to a record declared elsewhere
      if (!Claim(file, decl.name)) continue;
      RecordSchema& r = schema_.records[decl.name.text];
      r.name = decl.name.text;
      r.kind = decl.kind;
      r.doc = decl.doc;
      r.file = file.source;
      r.span = decl.name.span;
    }
  }

  // Records that `name` is declared; reports A2002 when it already was.
  bool Claim(const ast::File& file, const ast::Name& name) {
    auto [it, inserted] = declared_.emplace(name.text, std::make_pair(file.source, name.span));
    if (inserted) return true;
    diag::Diagnostic& d =
        diagnostics_.Emit(diag::Kind::DuplicateDeclaration, file.source, name.span, name.text);
    d.notes.push_back(diag::DiagnosticEngine::Note(diag::Kind::NoteDeclaredHere, it->second.first,
                                                   it->second.second, name.text));
    return false;
  }

  void DefineRecord(const ast::File& file, const ast::RecordDecl& decl) {
    auto it = schema_.records.find(decl.name.text);
    if (decl.kind == "extend") {
      // `extend ClusterConfig { ... }` lets a plugin's file add its section and its cross-field
      // rules to the record they belong to, so each catalog area stays in one file.
      if (it == schema_.records.end()) {
        diagnostics_.Emit(diag::Kind::UnknownType, file.source, decl.name.span, decl.name.text,
                          "; `extend` adds to a record declared elsewhere");
        return;
      }
    } else if (it == schema_.records.end() || it->second.span.begin != decl.name.span.begin ||
               it->second.file != file.source) {
      // A duplicate declaration was reported already; only the first one defines the record.
      return;
    }
    RecordSchema& record = it->second;
    record.open = record.open || decl.open;
    for (const ast::FieldDecl& f : decl.fields) {
      FieldSchema field;
      field.name = f.name.text;
      field.doc = f.doc;
      field.type = Resolve(file, f.type);
      field.default_value = f.default_value.get();
      for (const ast::Name& env : f.env_vars) field.env_vars.push_back(env.text);
      field.constraint = f.constraint.get();
      for (const ast::Name& alias : f.aliases) field.aliases.push_back(alias.text);
      for (const ast::Name& also : f.synonyms) field.synonyms.push_back(also.text);
      field.deprecated = f.deprecated;
      field.file_key = f.file_key;
      field.file = file.source;
      field.span = f.name.span;
      record.fields.push_back(std::move(field));
    }
    for (const ast::RuleDecl& r : decl.rules) {
      RuleSchema rule;
      rule.code = r.code.text;
      if (r.severity.text != "error" && r.severity.text != "warning") {
        diagnostics_.Emit(diag::Kind::UnknownSeverity, file.source, r.severity.span, r.severity.text);
      }
      rule.severity = r.severity.text == "warning" ? diag::Severity::Warning : diag::Severity::Error;
      rule.message = r.message;
      rule.doc = r.doc;
      for (const ast::Name& target : r.targets) rule.targets.push_back(target.text);
      rule.condition = r.condition.get();
      rule.file = file.source;
      rule.span = r.code.span;
      record.rules.push_back(std::move(rule));
    }
  }

  // Every name a constraint or rule reads must be a field path of the record, or a bare enum
  // member; a typo here would otherwise surface only when some job happens to evaluate it.
  void CheckNames(const RecordSchema& record) {
    for (const FieldSchema& field : record.fields) {
      if (field.constraint) CheckNames(record, field.file, *field.constraint, "a constraint");
    }
    for (const RuleSchema& rule : record.rules) {
      if (rule.condition) CheckNames(record, rule.file, *rule.condition, "rule " + rule.code);
    }
  }

  void CheckNames(const RecordSchema& record, const source::SourceFile* file, const ast::Expr& expr,
                  const std::string& where) {
    for (const ast::ExprPtr& operand : expr.operands) CheckNames(record, file, *operand, where);
    if (expr.kind == ast::ExprKind::Call && !IsBuiltinFunction(expr.text)) {
      diagnostics_.Emit(diag::Kind::UnknownName, file, expr.path.empty() ? expr.span : expr.path[0].span,
                        expr.text + "()",
                        fmt::format("{} of `{}`; functions are len, contains, starts_with, "
                                    "ends_with, split, lower and upper",
                                    where, record.name));
      return;
    }
    if (expr.kind != ast::ExprKind::Path || expr.path.empty()) return;
    const RecordSchema* scope = &record;
    // Through a union-typed field (`data: SyntheticRegression | CsvDataset`) the next name must
    // be a field of at least one member; a member without it reads as none.
    std::vector<const RecordSchema*> members;
    for (size_t i = 0; i < expr.path.size(); ++i) {
      const ast::Name& name = expr.path[i];
      const FieldSchema* field = scope ? scope->Find(name.text) : nullptr;
      for (size_t m = 0; field == nullptr && m < members.size(); ++m) field = members[m]->Find(name.text);
      members.clear();
      if (field == nullptr) {
        if (expr.path.size() == 1 && IsEnumMember(name.text)) return;
        diagnostics_.Emit(diag::Kind::UnknownName, file, name.span, name.text,
                          fmt::format("{} of `{}`", where, record.name));
        return;
      }
      const Type* type = &field->type;
      if (type->kind == Type::Kind::Optional) type = &type->args[0];
      if (type->kind == Type::Kind::Union) {
        for (const Type& alternative : type->args) {
          auto member = schema_.records.find(alternative.name);
          if (alternative.kind == Type::Kind::Record && member != schema_.records.end())
            members.push_back(&member->second);
        }
        scope = nullptr;
        continue;
      }
      auto next = type->kind == Type::Kind::Record ? schema_.records.find(type->name) : schema_.records.end();
      scope = next == schema_.records.end() ? nullptr : &next->second;
    }
  }

  bool IsEnumMember(const std::string& name) const {
    for (const auto& [_, e] : schema_.enums) {
      if (e.Find(name) != nullptr) return true;
    }
    return false;
  }

  Type Resolve(const ast::File& file, const ast::TypeRef& ref) {
    if (ref.alternatives.size() == 1) return Resolve(file, ref.alternatives[0]);
    Type type{Type::Kind::Union, "", {}};
    bool optional = false;
    for (const ast::TypeAtom& atom : ref.alternatives) {
      Type alternative = Resolve(file, atom);
      if (alternative.kind == Type::Kind::Optional) {
        optional = true;
        alternative = alternative.args[0];
      }
      type.args.push_back(std::move(alternative));
    }
    if (optional) return Type{Type::Kind::Optional, "", {std::move(type)}};
    return type;
  }

  Type Resolve(const ast::File& file, const ast::TypeAtom& atom) {
    Type type = ResolveAtom(file, atom);
    if (atom.optional) return Type{Type::Kind::Optional, "", {std::move(type)}};
    return type;
  }

  Type ResolveAtom(const ast::File& file, const ast::TypeAtom& atom) {
    static const std::map<std::string, Type::Kind, std::less<>> kBuiltins = {
        {"bool", Type::Kind::Bool},     {"int", Type::Kind::Int},   {"float", Type::Kind::Float},
        {"string", Type::Kind::String}, {"path", Type::Kind::Path}, {"duration", Type::Kind::Duration},
        {"bytes", Type::Kind::Bytes},   {"host", Type::Kind::Host}};
    const std::string& name = atom.name.text;
    if (name == "list" || name == "map") {
      size_t arity = name == "list" ? 1 : 2;
      if (atom.arguments.size() != arity) {
        diagnostics_.Emit(diag::Kind::UnknownType, file.source, atom.span, name,
                          fmt::format("; `{}` takes {} type argument{}", name, arity, arity == 1 ? "" : "s"));
        return Type{Type::Kind::String, "", {}};
      }
      Type type{name == "list" ? Type::Kind::List : Type::Kind::Map, "", {}};
      for (const ast::TypeRef& argument : atom.arguments) type.args.push_back(Resolve(file, argument));
      return type;
    }
    if (auto it = kBuiltins.find(name); it != kBuiltins.end()) return Type{it->second, "", {}};
    if (schema_.enums.count(name)) return Type{Type::Kind::Enum, name, {}};
    if (schema_.records.count(name)) return Type{Type::Kind::Record, name, {}};
    std::vector<std::string> candidates = {"bool",     "int",   "float", "string", "path", "host",
                                           "duration", "bytes", "list",  "map"};
    for (const auto& [n, _] : schema_.enums) candidates.push_back(n);
    for (const auto& [n, _] : schema_.records) candidates.push_back(n);
    std::string guess = diag::ClosestMatch(name, candidates);
    diag::Diagnostic& d = diagnostics_.Emit(diag::Kind::UnknownType, file.source, atom.name.span, name,
                                            guess.empty() ? "" : "; did you mean `" + guess + "`?");
    if (!guess.empty()) d.fixit = diag::FixIt{atom.name.span, guess};
    return Type{Type::Kind::String, "", {}};
  }

  diag::DiagnosticEngine& diagnostics_;
  Schema schema_;
  std::map<std::string, std::pair<const source::SourceFile*, source::Span>, std::less<>> declared_;
};

}  // namespace

std::optional<Type> ResolveType(const ast::TypeRef& ref, const Schema& schema, const ast::Name** unknown) {
  static const std::map<std::string, Type::Kind, std::less<>> kBuiltins = {
      {"bool", Type::Kind::Bool},     {"int", Type::Kind::Int},   {"float", Type::Kind::Float},
      {"string", Type::Kind::String}, {"path", Type::Kind::Path}, {"duration", Type::Kind::Duration},
      {"bytes", Type::Kind::Bytes},   {"host", Type::Kind::Host}};
  std::vector<Type> alternatives;
  bool optional = false;
  for (const ast::TypeAtom& atom : ref.alternatives) {
    const std::string& name = atom.name.text;
    Type type;
    if ((name == "list" && atom.arguments.size() == 1) || (name == "map" && atom.arguments.size() == 2)) {
      type.kind = name == "list" ? Type::Kind::List : Type::Kind::Map;
      for (const ast::TypeRef& argument : atom.arguments) {
        std::optional<Type> resolved = ResolveType(argument, schema, unknown);
        if (!resolved) return std::nullopt;
        type.args.push_back(std::move(*resolved));
      }
    } else if (auto it = kBuiltins.find(name); it != kBuiltins.end()) {
      type.kind = it->second;
    } else if (schema.enums.count(name)) {
      type = Type{Type::Kind::Enum, name, {}};
    } else if (schema.records.count(name)) {
      type = Type{Type::Kind::Record, name, {}};
    } else {
      if (unknown) *unknown = &atom.name;
      return std::nullopt;
    }
    optional = optional || atom.optional;
    alternatives.push_back(std::move(type));
  }
  if (alternatives.empty()) return std::nullopt;
  Type result = alternatives.size() == 1 ? alternatives[0] : Type{Type::Kind::Union, "", alternatives};
  if (optional) return Type{Type::Kind::Optional, "", {result}};
  return result;
}

Schema BuildSchema(const std::vector<const ast::File*>& files, diag::DiagnosticEngine& diagnostics) {
  return SchemaBuilder(diagnostics).Build(files);
}

}  // namespace accel::sema
