#ifndef ACCEL_COMPILER_LSP_SCHEMA_DOCS_H_
#define ACCEL_COMPILER_LSP_SCHEMA_DOCS_H_

// Markdown for hovers and completion items, from the schema declarations (the same facts the
// generated reference shows, docs/reference/).

#include <string>
#include <vector>

#include "compiler/sema/schema.h"

namespace accel::lsp {

// A field: its type and default, doc, environment variables, config-file key, old names and
// deprecation, and the rules of its record that read it.
std::string FieldMarkdown(const sema::RecordSchema& record, const sema::FieldSchema& field);

// A record: its kind, doc, and required fields.
std::string RecordMarkdown(const sema::RecordSchema& record);

// An enum member: the enum, the member's serialized value and doc.
std::string EnumMemberMarkdown(const sema::EnumSchema& enumeration, const sema::EnumSchema::Member& member);

// What `accelc explain-code CODE` prints, as a Markdown code block; empty for an unknown code.
std::string CodeMarkdown(const std::string& code, const sema::Schema& schema);

// The rules of `record` whose condition reads `field`.
std::vector<const sema::RuleSchema*> RulesReading(const sema::RecordSchema& record,
                                                  const sema::FieldSchema& field);

// The fields of `record` a value must set: no default, not optional.
std::vector<const sema::FieldSchema*> RequiredFields(const sema::RecordSchema& record);

}  // namespace accel::lsp

#endif  // ACCEL_COMPILER_LSP_SCHEMA_DOCS_H_
