#include "compiler/lsp/transport.h"

#include <errno.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>

namespace accel::lsp {
namespace {

constexpr size_t kChunkBytes = 64 * 1024;

bool EqualsIgnoringCase(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
         });
}

std::string_view Trim(std::string_view text) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
  while (!text.empty() && (text.back() == ' ' || text.back() == '\t' || text.back() == '\r'))
    text.remove_suffix(1);
  return text;
}

// Where the header block in `buffer` ends: the index after its empty line, and the length of
// the block without it. npos when no empty line has arrived yet.
size_t HeaderEnd(const std::string& buffer, size_t& block_length) {
  for (size_t newline = buffer.find('\n'); newline != std::string::npos;
       newline = buffer.find('\n', newline + 1)) {
    size_t next = newline + 1;
    if (next < buffer.size() && buffer[next] == '\n') {
      block_length = newline;
      return next + 1;
    }
    if (next + 1 < buffer.size() && buffer[next] == '\r' && buffer[next + 1] == '\n') {
      block_length = newline;
      return next + 2;
    }
  }
  return std::string::npos;
}

}  // namespace

size_t FdSource::Read(char* buffer, size_t size) {
  for (;;) {
    ssize_t n = ::read(fd_, buffer, size);
    if (n >= 0) return static_cast<size_t>(n);
    if (errno != EINTR) return 0;
  }
}

bool FdSink::Write(std::string_view bytes) {
  while (!bytes.empty()) {
    ssize_t n = ::write(fd_, bytes.data(), bytes.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    bytes.remove_prefix(static_cast<size_t>(n));
  }
  return true;
}

bool ParseContentLength(std::string_view headers, size_t& length, std::string& problem) {
  bool found = false;
  while (!headers.empty()) {
    size_t end = headers.find('\n');
    std::string_view line = headers.substr(0, end);
    headers = end == std::string_view::npos ? std::string_view() : headers.substr(end + 1);
    line = Trim(line);
    if (line.empty()) continue;
    size_t colon = line.find(':');
    if (colon == std::string_view::npos) {
      problem = "header line without `:`";
      return false;
    }
    if (!EqualsIgnoringCase(Trim(line.substr(0, colon)), "Content-Length")) continue;
    std::string_view value = Trim(line.substr(colon + 1));
    // Digits only, and no more than fit: `-1`, `1e3` and 30-digit numbers are all refused.
    if (value.empty() || value.size() > 18 ||
        !std::all_of(value.begin(), value.end(), [](char c) { return c >= '0' && c <= '9'; })) {
      problem = "Content-Length is not a decimal byte count";
      return false;
    }
    size_t parsed = 0;
    for (char c : value) parsed = parsed * 10 + static_cast<size_t>(c - '0');
    if (found && parsed != length) {
      problem = "two different Content-Length headers";
      return false;
    }
    length = parsed;
    found = true;
  }
  if (!found) problem = "no Content-Length header";
  return found;
}

bool MessageReader::Fill() {
  if (ended_) return false;
  char chunk[kChunkBytes];
  size_t n = source_.Read(chunk, sizeof chunk);
  if (n == 0) {
    ended_ = true;
    return false;
  }
  buffer_.append(chunk, n);
  return true;
}

bool MessageReader::Skip(size_t count) {
  size_t buffered = std::min(count, buffer_.size());
  buffer_.erase(0, buffered);
  count -= buffered;
  char chunk[kChunkBytes];
  while (count > 0) {
    size_t n = source_.Read(chunk, std::min(count, sizeof chunk));
    if (n == 0) {
      ended_ = true;
      return false;
    }
    count -= n;
  }
  return true;
}

Frame MessageReader::Next() {
  if (skip_ > 0) {
    size_t count = skip_;
    skip_ = 0;
    if (!Skip(count)) return {};
  }
  // Blank lines between messages are tolerated (some clients end bodies with a newline).
  for (;;) {
    size_t blank = buffer_.find_first_not_of("\r\n");
    buffer_.erase(0, blank == std::string::npos ? buffer_.size() : blank);
    if (!buffer_.empty()) break;
    if (!Fill()) return {};
  }
  size_t block_length = 0;
  size_t header_end;
  while ((header_end = HeaderEnd(buffer_, block_length)) == std::string::npos) {
    if (buffer_.size() > kMaxHeaderBytes) {
      // No end of headers in sight: drop what came, so garbage cannot grow memory.
      buffer_.clear();
      return {Frame::Status::kBadFrame, "", "header block longer than 8 KiB"};
    }
    if (!Fill()) return {};
  }
  if (block_length > kMaxHeaderBytes) {
    buffer_.erase(0, header_end);
    return {Frame::Status::kBadFrame, "", "header block longer than 8 KiB"};
  }
  size_t length = 0;
  std::string problem;
  bool ok = ParseContentLength(std::string_view(buffer_).substr(0, block_length), length, problem);
  buffer_.erase(0, header_end);
  if (!ok) return {Frame::Status::kBadFrame, "", problem};
  if (length > kMaxMessageBytes) {
    skip_ = length;
    return {Frame::Status::kBadFrame, "", "Content-Length over the 64 MiB limit"};
  }
  while (buffer_.size() < length) {
    if (!Fill()) return {};  // truncated: the body never arrives
  }
  Frame frame{Frame::Status::kMessage, buffer_.substr(0, length), ""};
  buffer_.erase(0, length);
  return frame;
}

std::string FrameMessage(std::string_view body) {
  std::string out = "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n";
  out.append(body);
  return out;
}

}  // namespace accel::lsp
