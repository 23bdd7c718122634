#include "compiler/source/source_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "llvm/Support/raw_ostream.h"

namespace accel::source {

SourceFile::SourceFile(std::string name, std::string text) : name_(std::move(name)), text_(std::move(text)) {
  line_starts_.push_back(0);
  // memchr, not a loop over every byte: every accelc run indexes the whole embedded stdlib.
  const char* begin = text_.data();
  const char* end = begin + text_.size();
  for (const char* at = begin; (at = static_cast<const char*>(std::memchr(at, '\n', end - at))) != nullptr;) {
    ++at;
    line_starts_.push_back(static_cast<uint32_t>(at - begin));
  }
}

void FileTooLargeError::log(llvm::raw_ostream& os) const {
  os << "`" << path_ << "` is larger than " << (limit_ >> 20) << " MiB, the limit for spec and config files";
}

llvm::Expected<SourceFile> SourceFile::Read(const std::string& path, size_t max_bytes) {
  const bool standard_input = path == "-";
  const std::string shown = standard_input ? "standard input" : "`" + path + "`";
  auto fail = [&shown](int error) {
    return llvm::createStringError(std::error_code(error, std::generic_category()), "cannot read %s: %s",
                                   shown.c_str(), std::strerror(error));
  };
  // O_NONBLOCK only for the open: opening a FIFO with no writer would otherwise wait forever.
  // Reads block as usual, and a FIFO whose writer never came reads as empty.
  int fd = standard_input ? STDIN_FILENO : ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return fail(errno);
  auto close_file = [&] {
    if (!standard_input) ::close(fd);
  };
  struct stat status {};
  if (::fstat(fd, &status) == 0 && S_ISDIR(status.st_mode)) {
    close_file();
    return fail(EISDIR);
  }
  if (!standard_input) ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  std::string text;
  char chunk[1 << 16];
  while (true) {
    ssize_t n = ::read(fd, chunk, sizeof chunk);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      int error = errno;
      close_file();
      return fail(error);
    }
    if (n == 0) break;
    if (text.size() + static_cast<size_t>(n) > max_bytes) {
      close_file();
      return llvm::make_error<FileTooLargeError>(standard_input ? "<stdin>" : path, max_bytes);
    }
    text.append(chunk, static_cast<size_t>(n));
  }
  close_file();
  return SourceFile(standard_input ? "<stdin>" : path, std::move(text));
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
