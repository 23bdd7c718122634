#include "compiler/lsp/position.h"

#include <algorithm>

namespace accel::lsp {

void Utf8Sequence(unsigned char lead, uint32_t* bytes, uint32_t* units) {
  // Four-byte sequences are code points above U+FFFF: a surrogate pair in UTF-16.
  *units = 1;
  if (lead >= 0xF0 && lead <= 0xF4) {
    *bytes = 4;
    *units = 2;
  } else if (lead >= 0xE0 && lead < 0xF0) {
    *bytes = 3;
  } else if (lead >= 0xC2 && lead < 0xE0) {
    *bytes = 2;
  } else {
    *bytes = 1;
  }
}

LineIndex::LineIndex(std::string_view text) : text_(text) {
  line_starts_.push_back(0);
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '\n') line_starts_.push_back(static_cast<uint32_t>(i + 1));
  }
}

std::string_view LineIndex::LineContent(uint32_t line, uint32_t* begin) const {
  *begin = line_starts_[line];
  uint32_t end =
      line + 1 < line_starts_.size() ? line_starts_[line + 1] - 1 : static_cast<uint32_t>(text_.size());
  if (end > *begin && text_[end - 1] == '\r') --end;
  return text_.substr(*begin, end - *begin);
}

uint32_t LineIndex::Offset(Position position) const {
  if (position.line >= line_starts_.size()) return static_cast<uint32_t>(text_.size());
  uint32_t begin = 0;
  std::string_view line = LineContent(position.line, &begin);
  uint32_t units = 0;
  size_t i = 0;
  while (i < line.size()) {
    uint32_t bytes = 0, width = 0;
    Utf8Sequence(static_cast<unsigned char>(line[i]), &bytes, &width);
    // A truncated sequence at the end of the line is as many invalid bytes.
    if (i + bytes > line.size()) bytes = 1, width = 1;
    if (units + width > position.character) break;
    units += width;
    i += bytes;
  }
  return begin + static_cast<uint32_t>(i);
}

Position LineIndex::PositionOf(uint32_t offset) const {
  offset = std::min<uint32_t>(offset, static_cast<uint32_t>(text_.size()));
  auto after = std::upper_bound(line_starts_.begin(), line_starts_.end(), offset);
  uint32_t line = static_cast<uint32_t>(after - line_starts_.begin() - 1);
  uint32_t begin = 0;
  std::string_view content = LineContent(line, &begin);
  uint32_t units = 0;
  size_t i = 0;
  while (i < content.size() && begin + i < offset) {
    uint32_t bytes = 0, width = 0;
    Utf8Sequence(static_cast<unsigned char>(content[i]), &bytes, &width);
    if (i + bytes > content.size()) bytes = 1, width = 1;
    // An offset inside this sequence is the sequence's start.
    if (begin + i + bytes > offset) break;
    units += width;
    i += bytes;
  }
  return {line, units};
}

}  // namespace accel::lsp
