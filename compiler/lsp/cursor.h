#ifndef ACCEL_COMPILER_LSP_CURSOR_H_
#define ACCEL_COMPILER_LSP_CURSOR_H_

// What the cursor is on, worked out from the text around it rather than the syntax tree: the
// text being typed rarely parses, and completion is asked for exactly then.

#include <string>
#include <string_view>
#include <vector>

#include "compiler/sema/schema.h"
#include "compiler/source/source_file.h"

namespace accel::lsp {

struct Cursor {
  enum class Kind {
    kNone,
    kFieldName,  // a field name being written or read: `mixed_precision` in `mixed_precision = no`
    kValue,      // the value after `=` (or `:` in YAML) of `field`
    kTypeName,   // a record type name: `AdamW` in `optimizer = AdamW { ... }`
    kCode,       // a diagnostic code or rule id (`A2003`, `DS-019`), say in a suppression comment
    kImport,     // the path of `import "..."`; `target` holds it
    kExtends,    // the base of `job x extends base`; `target` holds its name
  };
  Kind kind = Kind::kNone;
  // The record whose fields are in scope (the enclosing block), or null when unknown.
  const sema::RecordSchema* record = nullptr;
  // kFieldName: the field named, if it exists; kValue: the field whose value this is.
  const sema::FieldSchema* field = nullptr;
  // The word under or just before the cursor, and its bytes (empty at a word boundary).
  std::string word;
  source::Span word_span;
  // The names already set in the enclosing block (completion leaves them out).
  std::vector<std::string> set_fields;
  std::string target;
};

// Looks up `name` in `record` as a spec does (name, old alias, synonym) or, with `file_keys`,
// as a config file does (config-file key). Null when the record has no such field.
const sema::FieldSchema* LookupField(const sema::RecordSchema& record, std::string_view name, bool file_keys);

// The record a value of `type` is written as (through `?`), or null (a union, a scalar).
const sema::RecordSchema* RecordOf(const sema::Type& type, const sema::Schema& schema);

// The cursor at byte `offset` of a `.accel` file's `text`.
Cursor LocateInSpec(std::string_view text, uint32_t offset, const sema::Schema& schema);

// The cursor at byte `offset` of a YAML config file whose top level is the record `root`
// (keys are config-file keys; nesting is by indentation).
Cursor LocateInYaml(std::string_view text, uint32_t offset, const sema::Schema& schema,
                    const std::string& root);

}  // namespace accel::lsp

#endif  // ACCEL_COMPILER_LSP_CURSOR_H_
