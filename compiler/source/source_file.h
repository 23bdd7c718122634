#ifndef ACCEL_COMPILER_SOURCE_SOURCE_FILE_H_
#define ACCEL_COMPILER_SOURCE_SOURCE_FILE_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "llvm/Support/Error.h"

namespace accel::source {

// A half-open byte range [begin, end) within one SourceFile.
struct Span {
  uint32_t begin = 0;
  uint32_t end = 0;

  // Returns the smallest span covering both `a` and `b`.
  static Span Join(Span a, Span b) {
    return {a.begin < b.begin ? a.begin : b.begin, a.end > b.end ? a.end : b.end};
  }
};

// 1-based line and column (column counted in bytes).
struct LineColumn {
  uint32_t line = 1;
  uint32_t column = 1;
};

// Read stopped because the input is larger than the limit it was given.
class FileTooLargeError : public llvm::ErrorInfo<FileTooLargeError> {
 public:
  inline static char ID = 0;
  FileTooLargeError(std::string path, size_t limit) : path_(std::move(path)), limit_(limit) {}
  const std::string& path() const { return path_; }
  size_t limit() const { return limit_; }
  void log(llvm::raw_ostream& os) const override;
  std::error_code convertToErrorCode() const override { return llvm::inconvertibleErrorCode(); }

 private:
  std::string path_;
  size_t limit_;
};

// The text of one input file with a line index. Immutable after construction; every AST node
// and diagnostic refers to its file by pointer, so a SourceFile must outlive both.
class SourceFile {
 public:
  // Wraps in-memory text. `name` is what diagnostics print (a path or `<stdlib>/x.accel`).
  SourceFile(std::string name, std::string text);

  // Reads `path` from disk, or standard input when `path` is `-` (named `<stdin>`). Fails
  // with an error naming the path when it cannot be read, and with FileTooLargeError as soon as
  // more than `max_bytes` arrive: the limit holds while reading, so a device (`/dev/zero`), a
  // pipe or a symlink to one cannot grow memory without bound. A FIFO that no one writes to
  // reads as empty instead of blocking.
  static llvm::Expected<SourceFile> Read(const std::string& path, size_t max_bytes = kMaxBytes);

  // What Read takes by default: 16 MiB, far above any spec or config file.
  static constexpr size_t kMaxBytes = 16u << 20;

  const std::string& name() const { return name_; }
  const std::string& text() const { return text_; }
  std::string_view Slice(Span span) const;

  // Line and column of byte `offset` (clamped to the end of the file).
  LineColumn Locate(uint32_t offset) const;
  // Text of 1-based `line` without its line terminator.
  std::string_view LineText(uint32_t line) const;
  uint32_t line_count() const { return static_cast<uint32_t>(line_starts_.size()); }

 private:
  std::string name_;
  std::string text_;
  std::vector<uint32_t> line_starts_;
};

}  // namespace accel::source

#endif  // ACCEL_COMPILER_SOURCE_SOURCE_FILE_H_
