#include "compiler/source/source_file.h"

#include <algorithm>

#include "llvm/Support/MemoryBuffer.h"

namespace accel::source {

SourceFile::SourceFile(std::string name, std::string text) : name_(std::move(name)), text_(std::move(text)) {
  line_starts_.push_back(0);
  for (size_t i = 0; i < text_.size(); ++i) {
    if (text_[i] == '\n') line_starts_.push_back(static_cast<uint32_t>(i + 1));
  }
}

llvm::Expected<SourceFile> SourceFile::Read(const std::string& path) {
  if (path == "-") {
    auto buffer = llvm::MemoryBuffer::getSTDIN();
    if (!buffer) {
      return llvm::createStringError(buffer.getError(), "cannot read standard input: %s",
                                     buffer.getError().message().c_str());
    }
    return SourceFile("<stdin>", (*buffer)->getBuffer().str());
  }
  auto buffer = llvm::MemoryBuffer::getFile(path, /*IsText=*/true);
  if (!buffer) {
    return llvm::createStringError(buffer.getError(), "cannot read `%s`: %s", path.c_str(),
                                   buffer.getError().message().c_str());
  }
  return SourceFile(path, (*buffer)->getBuffer().str());
}

std::string_view SourceFile::Slice(Span span) const {
  uint32_t size = static_cast<uint32_t>(text_.size());
  uint32_t begin = std::min(span.begin, size);
  uint32_t end = std::clamp(span.end, begin, size);
  return std::string_view(text_).substr(begin, end - begin);
}

LineColumn SourceFile::Locate(uint32_t offset) const {
  offset = std::min(offset, static_cast<uint32_t>(text_.size()));
  // The last line start that is <= offset.
  auto it = std::upper_bound(line_starts_.begin(), line_starts_.end(), offset);
  uint32_t line_index = static_cast<uint32_t>(it - line_starts_.begin()) - 1;
  return {line_index + 1, offset - line_starts_[line_index] + 1};
}

std::string_view SourceFile::LineText(uint32_t line) const {
  if (line == 0 || line > line_starts_.size()) return {};
  uint32_t begin = line_starts_[line - 1];
  uint32_t end = line < line_starts_.size() ? line_starts_[line] : text_.size();
  std::string_view text = std::string_view(text_).substr(begin, end - begin);
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.remove_suffix(1);
  return text;
}

}  // namespace accel::source
