// textDocument/definition: a field or record type to its declaration in the stdlib, `import` to
// the imported file, `extends` to the base job.
#include <filesystem>

#include "compiler/lsp/features.h"
#include "compiler/lsp/protocol.h"

namespace accel::lsp {
namespace {

llvm::json::Value LocationOf(const source::SourceFile& file, source::Span span, Links& links) {
  LineIndex index(file.text());
  return llvm::json::Object{{"uri", links.UriOf(file)}, {"range", ToJson(index.RangeOf(span))}};
}

}  // namespace

llvm::Expected<llvm::json::Value> Definition(const FeatureContext& context,
                                             const llvm::json::Object& params) {
  llvm::Expected<Position> position = GetPosition(params, "position", "params");
  if (!position) return position.takeError();
  Cursor cursor = CursorAt(context, *position);
  switch (cursor.kind) {
    case Cursor::Kind::kFieldName:
      if (cursor.field != nullptr && cursor.field->file != nullptr) {
        return LocationOf(*cursor.field->file, cursor.field->span, context.links);
      }
      break;
    case Cursor::Kind::kTypeName: {
      const sema::RecordSchema& record = context.schema.records.find(cursor.word)->second;
      if (record.file != nullptr) return LocationOf(*record.file, record.span, context.links);
      break;
    }
    case Cursor::Kind::kImport: {
      // As the driver resolves it: relative to the importing file.
      namespace fs = std::filesystem;
      fs::path target = fs::path(context.document.path).parent_path() / cursor.target;
      std::error_code ec;
      if (!fs::is_regular_file(target, ec)) break;
      return llvm::json::Object{{"uri", context.links.UriOfPath(target.string())},
                                {"range", ToJson(Range{})}};
    }
    case Cursor::Kind::kExtends: {
      const pipeline::ComposedSpec* composed = context.analysis.compilation.composed.get();
      if (composed == nullptr) break;
      for (const std::unique_ptr<ast::File>& file : composed->files) {
        for (const ast::JobDecl& job : file->jobs) {
          if (job.name.text == cursor.target && file->source != nullptr) {
            return LocationOf(*file->source, job.name.span, context.links);
          }
        }
      }
      break;
    }
    case Cursor::Kind::kValue:
    case Cursor::Kind::kCode:
    case Cursor::Kind::kNone:
      break;
  }
  return nullptr;
}

}  // namespace accel::lsp
