#ifndef ACCEL_COMPILER_AST_AST_H_
#define ACCEL_COMPILER_AST_AST_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "compiler/source/source_file.h"

// The syntax tree of one `.accel` file, exactly as written: no name resolution, no defaults.
// Every node carries the span of the text it came from. Produced by parse::Parse, read by sema.
namespace accel::ast {

using source::Span;

struct Name {
  std::string text;
  Span span;
};

struct Expr;
using ExprPtr = std::unique_ptr<Expr>;
struct Block;

enum class ExprKind {
  Int,       // int_value
  Float,     // float_value
  String,    // text (escapes resolved)
  Bool,      // bool_value
  None,      // `none`
  Duration,  // int_value in milliseconds, text = as written
  Bytes,     // int_value in bytes, text = as written
  Path,      // path: `mixed_precision`, `compute.machines`, `MULTI_CPU`
  Record,    // text = type name, block = the fields: `MLP { hidden = 64 }`
  Call,      // text = callee, operands = arguments: `torchscript("m.pt")`
  List,      // operands
  Map,       // path[i] names operands[i] (keys as written, quotes removed)
  Unary,     // text = operator (`-`, `not`), operands[0]
  Binary,    // text = operator (`+`, `<=`, `and`, `in`, ...), operands[0] and operands[1]
  IsSet,     // operands[0] is set; bool_value = true for `is not set`
};

struct Expr {
  ExprKind kind = ExprKind::None;
  Span span;
  int64_t int_value = 0;
  double float_value = 0;
  bool bool_value = false;
  std::string text;
  std::vector<Name> path;
  std::vector<ExprPtr> operands;
  std::unique_ptr<Block> block;
};

// `path = value` or `path { ... }` (sugar for a record value of the field's declared type).
struct Statement {
  Span span;
  std::vector<Name> path;
  ExprPtr value;                 // set for assignments
  std::unique_ptr<Block> block;  // set for block statements
};

struct Block {
  Span span;
  std::vector<Statement> statements;
  // Error recovery dropped or repaired part of this block: a field missing from it may just
  // be in the broken part, so the checker does not report missing fields here.
  bool recovered = false;
};

// `name` or `list<T>`, `map<K, V>`, with an optional `?` suffix.
struct TypeRef;
struct TypeAtom {
  Span span;
  Name name;
  std::vector<TypeRef> arguments;
  bool optional = false;
};
// One atom, or a union `A | B`.
struct TypeRef {
  Span span;
  std::vector<TypeAtom> alternatives;
};

struct FieldDecl {
  Span span;
  std::string doc;
  Name name;
  TypeRef type;
  ExprPtr default_value;                  // null: the field is required (unless optional)
  std::vector<Name> env_vars;             // `from env A, B`: first one set wins
  ExprPtr constraint;                     // `where ...`, null when absent
  std::vector<Name> aliases;              // `alias old_name`: other names that set this field
  std::vector<Name> synonyms;             // `also name`: names the reader accepts just as well
  std::optional<std::string> deprecated;  // `deprecated "why"`: setting it warns
  std::optional<std::string> file_key;    // `key "fsdp_offload_params"`: its name in Accelerate's files
};

// `rule CODE severity "message": condition`
struct RuleDecl {
  Span span;
  std::string doc;
  Name code;
  Name severity;
  // `... "message" for accelerate, trainer`: the tools the rule holds for; empty means every one.
  std::vector<Name> targets;
  std::string message;
  ExprPtr condition;
};

struct RecordDecl {
  Span span;
  std::string doc;
  std::string kind;  // kwargs, plugin, config or record
  // Declared `open`: the reader of its config-file section ignores unknown keys.
  bool open = false;
  Name name;
  std::vector<FieldDecl> fields;
  std::vector<RuleDecl> rules;
};

struct EnumMember {
  Span span;
  std::string doc;
  Name name;
  std::string value;  // serialized form; defaults to the member name
};

struct EnumDecl {
  Span span;
  std::string doc;
  Name name;
  std::vector<EnumMember> members;
};

struct JobDecl {
  Span span;
  std::string doc;
  Name name;
  std::optional<Name> base;
  Block body;
};

// `import "path" [as name]`
struct ImportDecl {
  Span span;
  std::string path;
  std::optional<Name> alias;
};

// `let name [: type] = value`
struct LetDecl {
  Span span;
  std::string doc;
  Name name;
  std::optional<TypeRef> type;
  ExprPtr value;
};

// One parsed file. `source` is the file the spans point into; it must outlive the File.
struct File {
  const source::SourceFile* source = nullptr;
  std::vector<ImportDecl> imports;
  std::vector<LetDecl> lets;
  std::vector<EnumDecl> enums;
  std::vector<RecordDecl> records;
  std::vector<RuleDecl> rules;
  std::vector<JobDecl> jobs;
};

// Renders `file` as an indented outline, one node per line, for golden tests and
// `accelc dump-ast`. Deterministic.
std::string Dump(const File& file);

}  // namespace accel::ast

#endif  // ACCEL_COMPILER_AST_AST_H_
