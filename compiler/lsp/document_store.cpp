#include "compiler/lsp/document_store.h"

#include <algorithm>

namespace accel::lsp {

void ApplyChange(std::string& text, const Range& range, const std::string& replacement) {
  LineIndex index(text);
  uint32_t begin = index.Offset(range.start);
  uint32_t end = index.Offset(range.end);
  // A reversed range from a confused client replaces nothing rather than corrupting the text.
  if (end < begin) end = begin;
  text.replace(begin, end - begin, replacement);
}

Document& DocumentStore::Open(std::string uri, std::string path, int64_t version, std::string text) {
  Document& document = documents_[uri];
  document = Document{uri, std::move(path), version, std::move(text)};
  return document;
}

Document* DocumentStore::Change(const std::string& uri, int64_t version,
                                const std::vector<TextChange>& changes) {
  Document* document = Find(uri);
  if (document == nullptr) return nullptr;
  for (const TextChange& change : changes) {
    if (change.range) {
      ApplyChange(document->text, *change.range, change.text);
    } else {
      document->text = change.text;
    }
  }
  document->version = version;
  return document;
}

bool DocumentStore::Close(const std::string& uri) { return documents_.erase(uri) > 0; }

Document* DocumentStore::Find(const std::string& uri) {
  auto it = documents_.find(uri);
  return it == documents_.end() ? nullptr : &it->second;
}

}  // namespace accel::lsp
