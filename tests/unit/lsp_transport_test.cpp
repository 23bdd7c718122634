#include "compiler/lsp/transport.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

namespace accel::lsp {
namespace {

// Hands out `text` at most `chunk` bytes per read: what a pipe does to a client's writes.
class ChunkedSource : public ByteSource {
 public:
  ChunkedSource(std::string text, size_t chunk) : text_(std::move(text)), chunk_(chunk) {}
  size_t Read(char* buffer, size_t size) override {
    size_t n = std::min({size, chunk_, text_.size() - position_});
    std::copy_n(text_.data() + position_, n, buffer);
    position_ += n;
    reads_ += 1;
    return n;
  }
  size_t consumed() const { return position_; }

 private:
  std::string text_;
  size_t chunk_;
  size_t position_ = 0;
  size_t reads_ = 0;
};

std::vector<Frame> ReadAll(const std::string& stream, size_t chunk) {
  ChunkedSource source(stream, chunk);
  MessageReader reader(source);
  std::vector<Frame> frames;
  for (Frame frame = reader.Next(); frame.status != Frame::Status::kEnd; frame = reader.Next()) {
    frames.push_back(frame);
  }
  return frames;
}

TEST(Transport, ReadsMessagesWhateverTheReadSizes) {
  std::string stream = FrameMessage("{\"a\":1}") + FrameMessage("{\"b\":\"\xc3\xa9\"}");
  for (size_t chunk : {1, 2, 3, 7, 19, 4096}) {
    std::vector<Frame> frames = ReadAll(stream, chunk);
    ASSERT_EQ(frames.size(), 2u) << "chunk " << chunk;
    EXPECT_EQ(frames[0].status, Frame::Status::kMessage);
    EXPECT_EQ(frames[0].body, "{\"a\":1}");
    // Content-Length counts bytes: the two-byte é is not cut.
    EXPECT_EQ(frames[1].body, "{\"b\":\"\xc3\xa9\"}");
  }
}

TEST(Transport, AcceptsAnyCaseOtherHeadersAndBareNewlines) {
  std::vector<Frame> frames = ReadAll(
      "content-length: 2\r\nContent-Type: application/vscode-jsonrpc; charset=utf-8\r\n\r\n{}"
      "Content-Length:  3 \n\n[1]",
      5);
  ASSERT_EQ(frames.size(), 2u);
  EXPECT_EQ(frames[0].body, "{}");
  EXPECT_EQ(frames[1].body, "[1]");
}

TEST(Transport, RefusesAHeaderBlockWithoutContentLengthAndReadsOn) {
  std::vector<Frame> frames = ReadAll("Content-Type: x\r\n\r\n" + FrameMessage("{}"), 4);
  ASSERT_EQ(frames.size(), 2u);
  EXPECT_EQ(frames[0].status, Frame::Status::kBadFrame);
  EXPECT_EQ(frames[0].problem, "no Content-Length header");
  EXPECT_EQ(frames[1].status, Frame::Status::kMessage);
  EXPECT_EQ(frames[1].body, "{}");
}

TEST(Transport, RefusesLengthsThatAreNotDecimalCounts) {
  for (const char* value : {"-1", "1e3", "0x10", "", "12345678901234567890", "2 2"}) {
    size_t length = 0;
    std::string problem;
    EXPECT_FALSE(ParseContentLength(std::string("Content-Length: ") + value, length, problem)) << value;
    EXPECT_EQ(problem, "Content-Length is not a decimal byte count") << value;
  }
  size_t length = 0;
  std::string problem;
  ASSERT_TRUE(ParseContentLength("Content-Length: 1234", length, problem));
  EXPECT_EQ(length, 1234u);
  EXPECT_FALSE(ParseContentLength("Content-Length: 1\r\nContent-Length: 2", length, problem));
  EXPECT_FALSE(ParseContentLength("garbage line", length, problem));
}

TEST(Transport, SkipsAnOversizedBodyWithoutKeepingIt) {
  size_t oversized = kMaxMessageBytes + 1;
  std::string stream = "Content-Length: " + std::to_string(oversized) + "\r\n\r\n";
  stream += std::string(oversized, 'x');
  stream += FrameMessage("{}");
  ChunkedSource source(stream, 1 << 16);
  MessageReader reader(source);
  Frame first = reader.Next();
  EXPECT_EQ(first.status, Frame::Status::kBadFrame);
  EXPECT_EQ(first.problem, "Content-Length over the 64 MiB limit");
  EXPECT_TRUE(first.body.empty());
  Frame second = reader.Next();
  EXPECT_EQ(second.status, Frame::Status::kMessage);
  EXPECT_EQ(second.body, "{}");
}

TEST(Transport, DropsGarbageWithoutAHeaderEndInBoundedSteps) {
  std::string garbage(3 * kMaxHeaderBytes, 'g');
  ChunkedSource source(garbage, 1024);
  MessageReader reader(source);
  int bad = 0;
  for (Frame frame = reader.Next(); frame.status != Frame::Status::kEnd; frame = reader.Next()) {
    EXPECT_EQ(frame.status, Frame::Status::kBadFrame);
    EXPECT_EQ(frame.problem, "header block longer than 8 KiB");
    ++bad;
  }
  EXPECT_GE(bad, 2);
  EXPECT_EQ(source.consumed(), garbage.size());
}

TEST(Transport, EndsAtATruncatedBody) {
  std::vector<Frame> frames = ReadAll(FrameMessage("{}") + "Content-Length: 10\r\n\r\n{\"a\"", 3);
  ASSERT_EQ(frames.size(), 1u);
  EXPECT_EQ(frames[0].body, "{}");
  EXPECT_TRUE(ReadAll("Content-Length: 5\r\n", 1).empty());
  EXPECT_TRUE(ReadAll("", 1).empty());
}

TEST(Transport, FramesBodiesWithTheirByteLength) {
  EXPECT_EQ(FrameMessage("{\"\xf0\x9f\x98\x80\"}"), "Content-Length: 8\r\n\r\n{\"\xf0\x9f\x98\x80\"}");
}

}  // namespace
}  // namespace accel::lsp
