#ifndef ACCEL_COMPILER_DOCS_DESCRIBE_H_
#define ACCEL_COMPILER_DOCS_DESCRIBE_H_

// What the three renderers (Markdown, HTML, JSON Schema) say alike about a schema: a field's
// key and default, a doc's first sentence, the rules and diagnostics in reference order.
// Internal to compiler/docs/.

#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "compiler/diagnostics/diagnostic.h"
#include "compiler/sema/schema.h"

namespace accel::docs {

// The field's key in Accelerate's config files: its `key "..."`, else its name.
const std::string& FileKey(const sema::FieldSchema& field);

// The field's default as written in the schema (`29500`, `LOCAL_MACHINE`), `none` for an
// optional field without one, `required` for a field that must be set.
std::string DefaultText(const sema::FieldSchema& field);

// `doc` on one line: doc comments are wrapped source lines, not paragraphs.
std::string OneLine(std::string_view doc);

// The first sentence of `doc`, on one line: what an index shows.
std::string Summary(std::string_view doc);

// `stdlib/launch.accel` for a stdlib file (diagnostics name it `<stdlib>/launch.accel`); empty
// when `file` is null.
std::string SourceName(const source::SourceFile* file);

// Every enum and record name `type` refers to, once each, in order of appearance.
std::vector<std::string> NamedTypes(const sema::Type& type);

// `type` written as Type::Describe() writes it, with each enum and record name passed through
// `name` and everything else (builtin names, `<`, `|`, `?`) through `text`: lets HTML link the
// names and escape the rest.
std::string RenderType(const sema::Type& type, const std::function<std::string(const std::string&)>& name,
                       const std::function<std::string(std::string_view)>& text);

// One rule declaration with the record that declares it.
struct RuleEntry {
  const sema::RecordSchema* record;
  const sema::RuleSchema* rule;
};

// Every rule declaration of `schema`, by id, then record, then declaration order. Several
// declarations may share an id (`DS-019`): each is its own entry.
std::vector<RuleEntry> AllRules(const sema::Schema& schema);

// Every kinds.def row, sorted by code.
std::vector<diag::KindInfo> SortedKinds();

// A kinds.def format as a reader sees it: fmt's escaped braces `{{` and `}}` written once.
std::string FormatText(std::string_view format);

// The `accelc explain-code` text of a kinds.def code, or empty.
std::string Explanation(std::string_view code);

// Where each record and enum is used: type name -> `Record.field` for every field whose type
// names it, sorted.
std::map<std::string, std::vector<std::string>> UsedBy(const sema::Schema& schema);

}  // namespace accel::docs

#endif  // ACCEL_COMPILER_DOCS_DESCRIBE_H_
