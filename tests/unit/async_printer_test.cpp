// The launcher's output queue: a sink that blocks holds up only the printer's thread; lines
// beyond the cap are dropped and counted; order is kept.
#include <gtest/gtest.h>

#include <chrono>
#include <future>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "runtime/launch/async_printer.h"

namespace accel::rt::launch {
namespace {

// A sink that blocks on its first line until `Open()`, as a pipe nobody reads does.
class GatedSink {
 public:
  void Open() { gate_.set_value(); }
  WorkerOutput::Printer Printer() {
    return [this](OutputStream stream, std::string_view text) {
      if (!opened_) {
        gate_future_.wait();
        opened_ = true;
      }
      std::lock_guard<std::mutex> lock(mutex_);
      written_.push_back((stream == OutputStream::kStderr ? "err: " : "out: ") + std::string(text));
    };
  }
  std::vector<std::string> written() {
    std::lock_guard<std::mutex> lock(mutex_);
    return written_;
  }

 private:
  std::promise<void> gate_;
  std::shared_future<void> gate_future_ = gate_.get_future().share();
  bool opened_ = false;  // touched by the printer's thread only
  std::mutex mutex_;
  std::vector<std::string> written_;
};

TEST(AsyncPrinter, ABlockedSinkNeverBlocksTheCallerAndDropsPastTheCap) {
  GatedSink sink;
  AsyncPrinter printer(sink.Printer(), /*max_queued_bytes=*/20);
  auto started = std::chrono::steady_clock::now();
  printer.Print(OutputStream::kStdout, "line 1\n");  // taken by the thread, which then blocks
  printer.Print(OutputStream::kStdout, "line 2\n");
  printer.Print(OutputStream::kStdout, "line 3\n");  // 21 bytes queued: over the cap
  printer.Print(OutputStream::kStdout, "line 4\n");
  EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::seconds(1));
  sink.Open();
  printer.Flush();
  printer.Print(OutputStream::kStdout, "line 5\n");  // the reader is back
  printer.Flush();
  std::vector<std::string> written = sink.written();
  ASSERT_GE(written.size(), 3u);
  EXPECT_EQ(written.front(), "out: line 1\n");
  EXPECT_EQ(written.back(), "out: line 5\n");
  // Some lines were dropped, and the note before line 5 says how many: every line is either
  // written or counted.
  std::string note = written[written.size() - 2];
  ASSERT_EQ(note.rfind("err: accelrun: note: ", 0), 0u) << note;
  size_t dropped = std::stoul(note.substr(std::string("err: accelrun: note: ").size()));
  EXPECT_EQ(written.size() - 1 + dropped, 5u);
  EXPECT_NE(note.find("dropped: the launcher's output was not being read"), std::string::npos) << note;
}

// The lines as written, one per line, each marked with its stream (a write may hold several
// lines of one stream: the queue joins them).
std::vector<std::string> Lines(const std::vector<std::pair<OutputStream, std::string>>& writes) {
  std::vector<std::string> lines;
  for (const auto& [stream, text] : writes) {
    size_t start = 0;
    for (size_t end = text.find('\n'); end != std::string::npos; start = end + 1, end = text.find('\n', start))
      lines.push_back((stream == OutputStream::kStderr ? "err: " : "out: ") + text.substr(start, end + 1 - start));
  }
  return lines;
}

TEST(AsyncPrinter, KeepsOrderAcrossStreamsAndWritesEverythingBeforeItEnds) {
  std::vector<std::pair<OutputStream, std::string>> writes;
  {
    AsyncPrinter printer(
        [&writes](OutputStream stream, std::string_view text) { writes.emplace_back(stream, std::string(text)); },
        1 << 20);
    for (int i = 0; i < 100; ++i)
      printer.Print(i % 3 == 0 ? OutputStream::kStderr : OutputStream::kStdout, std::to_string(i) + "\n");
  }  // the destructor writes what is queued
  std::vector<std::string> lines = Lines(writes);
  ASSERT_EQ(lines.size(), 100u);
  for (int i = 0; i < 100; ++i)
    EXPECT_EQ(lines[i], (i % 3 == 0 ? "err: " : "out: ") + std::to_string(i) + "\n");
}

// A reader slower than the workers, but reading, loses nothing: a full queue waits for room.
// A worker writing fast to a launcher whose output went to a file dropped 41 M lines and
// printed 176,174 notes.
TEST(AsyncPrinter, ASlowReaderLosesNoLine) {
  std::vector<std::pair<OutputStream, std::string>> writes;
  {
    AsyncPrinter printer(
        [&writes](OutputStream stream, std::string_view text) {
          std::this_thread::sleep_for(std::chrono::milliseconds(2));
          writes.emplace_back(stream, std::string(text));
        },
        /*max_queued_bytes=*/4096);
    for (int i = 0; i < 2000; ++i) printer.Print(OutputStream::kStdout, "a line of the worker " + std::to_string(i) + "\n");
  }
  std::vector<std::string> lines = Lines(writes);
  ASSERT_EQ(lines.size(), 2000u);
  EXPECT_EQ(lines.back(), "out: a line of the worker 1999\n");
  // Joined, the 2000 lines took far fewer writes.
  EXPECT_LT(writes.size(), 2000u);
}

}  // namespace
}  // namespace accel::rt::launch
