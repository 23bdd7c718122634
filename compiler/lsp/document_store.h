#ifndef ACCEL_COMPILER_LSP_DOCUMENT_STORE_H_
#define ACCEL_COMPILER_LSP_DOCUMENT_STORE_H_

// The text of every document the editor has open, kept in step with its edits.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "compiler/lsp/position.h"

namespace accel::lsp {

struct Document {
  std::string uri;
  std::string path;  // where the compiler says the file is (imports resolve next to it)
  int64_t version = 0;
  std::string text;
};

// One `contentChanges` entry: a range replaced by text, or (without a range) the whole text.
struct TextChange {
  std::optional<Range> range;
  std::string text;
};

class DocumentStore {
 public:
  // didOpen: replaces any document of that URI.
  Document& Open(std::string uri, std::string path, int64_t version, std::string text);

  // didChange: applies `changes` in order (each range is against the text the earlier ones
  // left). Returns null when `uri` is not open.
  Document* Change(const std::string& uri, int64_t version, const std::vector<TextChange>& changes);

  // didClose. Returns false when `uri` was not open.
  bool Close(const std::string& uri);

  // The open document, or null. Valid until the next Open or Close of that URI.
  Document* Find(const std::string& uri);

 private:
  std::map<std::string, Document> documents_;
};

// Replaces `range` of `text` (positions in UTF-16 units) with `replacement`.
void ApplyChange(std::string& text, const Range& range, const std::string& replacement);

}  // namespace accel::lsp

#endif  // ACCEL_COMPILER_LSP_DOCUMENT_STORE_H_
