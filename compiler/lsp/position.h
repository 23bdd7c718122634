#ifndef ACCEL_COMPILER_LSP_POSITION_H_
#define ACCEL_COMPILER_LSP_POSITION_H_

// LSP positions: 0-based lines, and columns in UTF-16 code units (what editors count), against
// the compiler's byte offsets into UTF-8 text.

#include <cstdint>
#include <string_view>
#include <vector>

#include "compiler/source/source_file.h"

namespace accel::lsp {

struct Position {
  uint32_t line = 0;
  uint32_t character = 0;  // UTF-16 code units from the start of the line
  bool operator==(const Position& other) const { return line == other.line && character == other.character; }
};

struct Range {
  Position start;
  Position end;
};

// A line index of one text. Holds a view: `text` must outlive the index.
class LineIndex {
 public:
  explicit LineIndex(std::string_view text);

  // The byte offset of `position`. A character past the end of its line clamps to the line's
  // end (before its `\r\n`), a line past the last clamps to the end of the text, and a position
  // inside a character (between the two units of a surrogate pair) to that character's start.
  uint32_t Offset(Position position) const;

  // The position of byte `offset` (clamped to the text). A byte inside a UTF-8 sequence counts
  // as the sequence's start; invalid bytes count one unit each.
  Position PositionOf(uint32_t offset) const;

  Range RangeOf(source::Span span) const { return {PositionOf(span.begin), PositionOf(span.end)}; }

 private:
  // [begin, end) of line `line`'s content, without its terminator.
  std::string_view LineContent(uint32_t line, uint32_t* begin) const;

  std::string_view text_;
  std::vector<uint32_t> line_starts_;
};

// UTF-16 code units of the UTF-8 sequence that starts with `lead` (1 or 2), and its byte length
// (1 for bytes that start no valid sequence).
void Utf8Sequence(unsigned char lead, uint32_t* bytes, uint32_t* units);

}  // namespace accel::lsp

#endif  // ACCEL_COMPILER_LSP_POSITION_H_
