#ifndef ACCEL_COMPILER_SEMA_SCHEMA_H_
#define ACCEL_COMPILER_SEMA_SCHEMA_H_

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "compiler/ast/ast.h"
#include "compiler/diagnostics/diagnostic.h"
#include "compiler/sema/types.h"

namespace accel::sema {

// Schema declarations resolved from the stdlib ASTs. Holds pointers into those ASTs (default
// values, constraints, rule conditions), so the ASTs must outlive the Schema.
struct FieldSchema {
  std::string name;
  std::string doc;
  Type type;
  const ast::Expr* default_value = nullptr;  // null: required unless the type is optional
  std::vector<std::string> env_vars;
  const ast::Expr* constraint = nullptr;
  std::vector<std::string> aliases;       // old names that still set this field, with a warning
  std::vector<std::string> synonyms;      // names that set it just as well (pydantic's field name)
  std::optional<std::string> deprecated;  // why the field should no longer be set
  // Its key in Accelerate's config files (YAML, DeepSpeed JSON) when that differs from `name`.
  std::optional<std::string> file_key;
  const source::SourceFile* file = nullptr;
  source::Span span;
};

struct RuleSchema {
  std::string code;  // stable id, e.g. `DS003`
  diag::Severity severity = diag::Severity::Error;
  std::string message;
  std::string doc;
  // The tools (`accelc check --for`) the rule holds for; empty means every one.
  std::vector<std::string> targets;
  const ast::Expr* condition = nullptr;
  const source::SourceFile* file = nullptr;
  source::Span span;
};

struct RecordSchema {
  std::string name;
  std::string kind;  // kwargs, plugin, config, record
  std::string doc;
  // Declared `open`: its config-file reader ignores unknown keys (DeepSpeed's dict-read sections).
  bool open = false;
  std::vector<FieldSchema> fields;
  std::vector<RuleSchema> rules;
  const source::SourceFile* file = nullptr;
  source::Span span;

  // Whether a config file may set a field of this record by an old name (`alias`). Not in a
  // closed `config` record: that is a loader's dataclass (Accelerate's `ClusterConfig`), built
  // with the file's keys as keyword arguments, so an old name is an unknown key it refuses.
  // DeepSpeed's own models do read their aliases.
  bool FileTakesOldNames() const { return kind != "config" || open; }

  const FieldSchema* Find(std::string_view field) const;
  // The field that lists `alias` among its old names, or null.
  const FieldSchema* FindAlias(std::string_view alias) const;
  // The field that lists `name` among its synonyms, or null.
  const FieldSchema* FindSynonym(std::string_view name) const;
  std::vector<std::string> FieldNames() const;
  // The field whose config-file key is `key` (its `key "..."`, else its name), or null.
  const FieldSchema* FindFileKey(std::string_view key) const;
  std::vector<std::string> FileKeys() const;
};

struct EnumSchema {
  struct Member {
    std::string name;
    std::string value;
    std::string doc;
  };
  std::string name;
  std::string doc;
  std::vector<Member> members;

  // The member named `name` or whose serialized value is `name`, or null.
  const Member* Find(std::string_view name) const;
};

struct Schema {
  std::map<std::string, RecordSchema, std::less<>> records;
  std::map<std::string, EnumSchema, std::less<>> enums;
};

// Resolves a type written in a spec (a typed `let`) against `schema`. Returns empty and sets
// `unknown` to the first name that is neither a builtin type nor declared in the schema.
std::optional<Type> ResolveType(const ast::TypeRef& ref, const Schema& schema, const ast::Name** unknown);

// Collects the declarations of `files` into one Schema and resolves every type name.
// Reports unknown types (A2001), duplicate declarations (A2002), and names in `where`
// constraints and rules that are neither a field of their record nor an enum member (A2008).
Schema BuildSchema(const std::vector<const ast::File*>& files, diag::DiagnosticEngine& diagnostics);

}  // namespace accel::sema

#endif  // ACCEL_COMPILER_SEMA_SCHEMA_H_
