#include "runtime/launch/async_printer.h"

#include <fmt/format.h>

namespace accel::rt::launch {

AsyncPrinter::AsyncPrinter(WorkerOutput::Printer sink, size_t max_queued_bytes)
    : sink_(std::move(sink)), max_queued_bytes_(max_queued_bytes), thread_([this] { Run(); }) {}

AsyncPrinter::~AsyncPrinter() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  wake_.notify_one();
  thread_.join();
}

namespace {

// What a queued entry costs besides its text: the pair and the deque's share.
constexpr size_t kEntryBytes = sizeof(std::pair<OutputStream, std::string>) + 16;
// Lines of one stream are joined up to this size: fewer entries, fewer writes.
constexpr size_t kJoinBytes = 64 * 1024;

}  // namespace

void AsyncPrinter::Print(OutputStream stream, std::string_view text) {
  {
    std::unique_lock<std::mutex> lock(mutex_);
    // An empty queue takes any line: nothing else would ever make room for it.
    auto fits = [&] { return queue_.empty() || queued_bytes_ + text.size() + kEntryBytes <= max_queued_bytes_; };
    auto stuck = [&] {
      return writing_ && std::chrono::steady_clock::now() - write_started_ >= kStuck;
    };
    // A sink that keeps writing makes room: wait for it, rather than lose lines to a slow reader.
    while (!fits() && !stuck() && !stop_) room_.wait_for(lock, kStuck);
    if (!fits()) {
      ++dropped_lines_;
      return;
    }
    if (dropped_lines_ > 0) {
      // The reader is back: say what it missed, where the gap is.
      std::string note = fmt::format(
          "accelrun: note: {} line{} of output dropped: the launcher's output was not being read\n",
          dropped_lines_, dropped_lines_ == 1 ? "" : "s");
      queued_bytes_ += note.capacity() + kEntryBytes;
      queue_.emplace_back(OutputStream::kStderr, std::move(note));
      dropped_lines_ = 0;
    }
    if (!queue_.empty() && queue_.back().first == stream && queue_.back().second.size() < kJoinBytes) {
      std::string& joined = queue_.back().second;
      queued_bytes_ -= joined.capacity();
      joined.append(text);
      queued_bytes_ += joined.capacity();
    } else {
      queue_.emplace_back(stream, std::string(text));
      queued_bytes_ += queue_.back().second.capacity() + kEntryBytes;
    }
  }
  wake_.notify_one();
}

void AsyncPrinter::Flush() {
  std::unique_lock<std::mutex> lock(mutex_);
  drained_.wait(lock, [this] { return queue_.empty() && !writing_; });
}

void AsyncPrinter::Run() {
  std::unique_lock<std::mutex> lock(mutex_);
  while (true) {
    wake_.wait(lock, [this] { return stop_ || !queue_.empty(); });
    if (queue_.empty()) {
      if (stop_) return;
      continue;
    }
    std::pair<OutputStream, std::string> item = std::move(queue_.front());
    queue_.pop_front();
    writing_ = true;
    write_started_ = std::chrono::steady_clock::now();
    lock.unlock();
    sink_(item.first, item.second);  // may block: only this thread waits
    lock.lock();
    writing_ = false;
    queued_bytes_ -= item.second.capacity() + kEntryBytes;
    room_.notify_all();
    if (queue_.empty()) drained_.notify_all();
  }
}

}  // namespace accel::rt::launch
