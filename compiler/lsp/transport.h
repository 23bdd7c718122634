#ifndef ACCEL_COMPILER_LSP_TRANSPORT_H_
#define ACCEL_COMPILER_LSP_TRANSPORT_H_

// The base protocol of LSP: messages framed by `Content-Length` headers over a byte stream.
// Knows nothing of JSON; server.h reads the bodies.

#include <cstddef>
#include <string>
#include <string_view>

namespace accel::lsp {

// A body larger than this is refused and skipped without being stored: memory stays bounded
// whatever a client sends. Real messages are a document's text, far below it.
inline constexpr size_t kMaxMessageBytes = size_t{64} << 20;
// A header block longer than this is garbage, not headers.
inline constexpr size_t kMaxHeaderBytes = size_t{8} << 10;

// Where bytes come from: standard input in accelc, a string in tests. Read returns the count
// read (at most `size`), 0 at end of input; errors count as end of input.
class ByteSource {
 public:
  virtual ~ByteSource() = default;
  virtual size_t Read(char* buffer, size_t size) = 0;
};

// Where bytes go. Write returns false when the peer is gone.
class ByteSink {
 public:
  virtual ~ByteSink() = default;
  virtual bool Write(std::string_view bytes) = 0;
};

// A file descriptor as either end; reads and writes retry on EINTR and short writes.
class FdSource : public ByteSource {
 public:
  explicit FdSource(int fd) : fd_(fd) {}
  size_t Read(char* buffer, size_t size) override;

 private:
  int fd_;
};

class FdSink : public ByteSink {
 public:
  explicit FdSink(int fd) : fd_(fd) {}
  bool Write(std::string_view bytes) override;

 private:
  int fd_;
};

// One step of reading: a message body, a frame that was refused (and skipped), or the end.
struct Frame {
  enum class Status { kMessage, kBadFrame, kEnd };
  Status status = Status::kEnd;
  std::string body;     // kMessage: the body, exactly Content-Length bytes
  std::string problem;  // kBadFrame: what was wrong, for the error response
};

// Splits a byte stream into message bodies. A malformed header block is reported as kBadFrame
// and reading resumes after it; an oversized body is reported and its bytes are skipped; input
// that ends inside a frame ends the stream. Every read is bounded by the limits above.
class MessageReader {
 public:
  explicit MessageReader(ByteSource& source) : source_(source) {}

  // Blocks until the next frame or the end of input.
  Frame Next();

 private:
  // Appends up to one chunk from the source to `buffer_`; false at end of input.
  bool Fill();
  // Drops `count` bytes of input, buffered or not; false if input ended first.
  bool Skip(size_t count);

  ByteSource& source_;
  std::string buffer_;
  bool ended_ = false;
  // Bytes of a refused body still to drop: the refusal is reported first, so the client hears
  // of it before the server reads on.
  size_t skip_ = 0;
};

// Parses one header block (without its terminating empty line) and returns the Content-Length,
// or sets `problem`. Lines end in `\r\n` (a bare `\n` is accepted); names are case-insensitive;
// other headers (Content-Type) are ignored.
bool ParseContentLength(std::string_view headers, size_t& length, std::string& problem);

// `body` framed for the wire.
std::string FrameMessage(std::string_view body);

}  // namespace accel::lsp

#endif  // ACCEL_COMPILER_LSP_TRANSPORT_H_
