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

void AsyncPrinter::Print(OutputStream stream, std::string_view text) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (queued_bytes_ + text.size() > max_queued_bytes_) {
      ++dropped_lines_;
      return;
    }
    if (dropped_lines_ > 0) {
      // The reader is back: say what it missed, where the gap is.
      std::string note = fmt::format(
          "accelrun: note: {} line{} of output dropped: the launcher's output was not being read\n",
          dropped_lines_, dropped_lines_ == 1 ? "" : "s");
      queued_bytes_ += note.size();
      queue_.emplace_back(OutputStream::kStderr, std::move(note));
      dropped_lines_ = 0;
    }
    queued_bytes_ += text.size();
    queue_.emplace_back(stream, std::string(text));
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
    lock.unlock();
    sink_(item.first, item.second);  // may block: only this thread waits
    lock.lock();
    writing_ = false;
    queued_bytes_ -= item.second.size();
    if (queue_.empty()) drained_.notify_all();
  }
}

}  // namespace accel::rt::launch
