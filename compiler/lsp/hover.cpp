// textDocument/hover: what a field, a type, an enum member or a diagnostic code means.
#include "compiler/lsp/features.h"
#include "compiler/lsp/protocol.h"
#include "compiler/lsp/schema_docs.h"

namespace accel::lsp {
namespace {

// The member `word` of the enum `type` is (through `?`), or null.
const sema::EnumSchema::Member* EnumMember(const sema::Type& type, const std::string& word,
                                           const sema::Schema& schema, const sema::EnumSchema** enumeration) {
  const sema::Type* t = type.kind == sema::Type::Kind::Optional ? &type.args[0] : &type;
  if (t->kind != sema::Type::Kind::Enum) return nullptr;
  auto it = schema.enums.find(t->name);
  if (it == schema.enums.end()) return nullptr;
  *enumeration = &it->second;
  return it->second.Find(word);
}

}  // namespace

Cursor CursorAt(const FeatureContext& context, Position position) {
  LineIndex index(context.document.text);
  uint32_t offset = index.Offset(position);
  switch (FormatOf(context.document)) {
    case DocumentFormat::kSpec:
      return LocateInSpec(context.document.text, offset, context.schema);
    case DocumentFormat::kYaml: {
      const std::string& root = context.analysis.compilation.root_record;
      return LocateInYaml(context.document.text, offset, context.schema,
                          root.empty() ? "ClusterConfig" : root);
    }
    case DocumentFormat::kJson:
      break;
  }
  return Cursor{};
}

llvm::Expected<llvm::json::Value> Hover(const FeatureContext& context, const llvm::json::Object& params) {
  llvm::Expected<Position> position = GetPosition(params, "position", "params");
  if (!position) return position.takeError();
  Cursor cursor = CursorAt(context, *position);
  std::string markdown;
  switch (cursor.kind) {
    case Cursor::Kind::kFieldName:
      if (cursor.field != nullptr) markdown = FieldMarkdown(*cursor.record, *cursor.field);
      break;
    case Cursor::Kind::kTypeName:
      markdown = RecordMarkdown(context.schema.records.find(cursor.word)->second);
      break;
    case Cursor::Kind::kValue: {
      const sema::EnumSchema* enumeration = nullptr;
      if (cursor.field == nullptr || cursor.word.empty()) break;
      if (const sema::EnumSchema::Member* member =
              EnumMember(cursor.field->type, cursor.word, context.schema, &enumeration)) {
        markdown = EnumMemberMarkdown(*enumeration, *member);
      }
      break;
    }
    case Cursor::Kind::kCode:
      markdown = CodeMarkdown(cursor.word, context.schema);
      break;
    case Cursor::Kind::kImport:
    case Cursor::Kind::kExtends:
    case Cursor::Kind::kNone:
      break;
  }
  if (markdown.empty()) return nullptr;
  LineIndex index(context.document.text);
  return llvm::json::Object{{"contents", llvm::json::Object{{"kind", "markdown"}, {"value", markdown}}},
                            {"range", ToJson(index.RangeOf(cursor.word_span))}};
}

}  // namespace accel::lsp
