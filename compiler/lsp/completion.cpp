// textDocument/completion: the fields a block may still set, enum members and record types
// after `=`, and the keys of a YAML config's mapping.
#include <cctype>

#include <fmt/format.h>

#include "compiler/lsp/features.h"
#include "compiler/lsp/protocol.h"
#include "compiler/lsp/schema_docs.h"

namespace accel::lsp {
namespace {

llvm::json::Object Markdown(std::string text) {
  return llvm::json::Object{{"kind", "markdown"}, {"value", std::move(text)}};
}

bool IsWord(const std::string& text) {
  if (text.empty() || std::isdigit(static_cast<unsigned char>(text[0]))) return false;
  for (char c : text) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') return false;
  }
  return true;
}

bool IsSet(const Cursor& cursor, const std::string& name) {
  for (const std::string& set : cursor.set_fields) {
    if (set == name) return true;
  }
  return false;
}

void AddFields(const Cursor& cursor, bool yaml, llvm::json::Array& items) {
  for (const sema::FieldSchema& field : cursor.record->fields) {
    std::string name = yaml && field.file_key ? *field.file_key : field.name;
    // The field being typed is in set_fields too (its partial name); anything else set is out.
    if (IsSet(cursor, name) && name != cursor.word) continue;
    if (field.deprecated) continue;
    llvm::json::Object item{{"label", name},
                            {"kind", static_cast<int>(CompletionItemKind::kField)},
                            {"detail", field.type.Describe()},
                            {"documentation", Markdown(FieldMarkdown(*cursor.record, field))}};
    if (yaml) item["insertText"] = name + ": ";
    items.push_back(std::move(item));
  }
}

// A record type where a value of `type` goes, with its required fields as snippet stops.
void AddRecord(const sema::RecordSchema& record, llvm::json::Array& items) {
  std::string snippet = record.name + " {";
  int stop = 1;
  for (const sema::FieldSchema* field : RequiredFields(record)) {
    snippet += fmt::format("\n  {} = ${{{}}}", field->name, stop++);
  }
  snippet += stop == 1 ? " $0 }" : "\n}";
  items.push_back(llvm::json::Object{{"label", record.name},
                                     {"kind", static_cast<int>(CompletionItemKind::kStruct)},
                                     {"detail", record.kind},
                                     {"documentation", Markdown(RecordMarkdown(record))},
                                     {"insertText", snippet},
                                     {"insertTextFormat", static_cast<int>(InsertTextFormat::kSnippet)}});
}

void AddValues(const sema::Type& type, const sema::Schema& schema, bool yaml, llvm::json::Array& items) {
  switch (type.kind) {
    case sema::Type::Kind::Optional:
    case sema::Type::Kind::Union:
      for (const sema::Type& inner : type.args) AddValues(inner, schema, yaml, items);
      return;
    case sema::Type::Kind::Enum: {
      auto it = schema.enums.find(type.name);
      if (it == schema.enums.end()) return;
      for (const sema::EnumSchema::Member& member : it->second.members) {
        // Config files hold the serialized value; specs name a member by it too where it is
        // a plain word (`mixed_precision = bf16`), else by the member's name.
        std::string label = yaml || IsWord(member.value) ? member.value : member.name;
        items.push_back(
            llvm::json::Object{{"label", label},
                               {"kind", static_cast<int>(CompletionItemKind::kEnumMember)},
                               {"detail", it->second.name},
                               {"documentation", Markdown(EnumMemberMarkdown(it->second, member))}});
      }
      return;
    }
    case sema::Type::Kind::List:
      AddValues(type.args[0], schema, yaml, items);
      return;
    case sema::Type::Kind::Bool:
      for (const char* word : {"true", "false"}) {
        items.push_back(
            llvm::json::Object{{"label", word}, {"kind", static_cast<int>(CompletionItemKind::kValue)}});
      }
      return;
    case sema::Type::Kind::Record:
      if (yaml) return;
      if (auto it = schema.records.find(type.name); it != schema.records.end()) AddRecord(it->second, items);
      return;
    default:
      return;
  }
}

}  // namespace

llvm::Expected<llvm::json::Value> Completion(const FeatureContext& context,
                                             const llvm::json::Object& params) {
  llvm::Expected<Position> position = GetPosition(params, "position", "params");
  if (!position) return position.takeError();
  Cursor cursor = CursorAt(context, *position);
  bool yaml = FormatOf(context.document) == DocumentFormat::kYaml;
  llvm::json::Array items;
  if (cursor.kind == Cursor::Kind::kFieldName && cursor.record != nullptr) {
    AddFields(cursor, yaml, items);
  } else if ((cursor.kind == Cursor::Kind::kValue || cursor.kind == Cursor::Kind::kTypeName) &&
             cursor.field != nullptr) {
    AddValues(cursor.field->type, context.schema, yaml, items);
  }
  return llvm::json::Object{{"isIncomplete", false}, {"items", std::move(items)}};
}

}  // namespace accel::lsp
