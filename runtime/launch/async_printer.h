#ifndef ACCEL_RUNTIME_LAUNCH_ASYNC_PRINTER_H_
#define ACCEL_RUNTIME_LAUNCH_ASYNC_PRINTER_H_

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <utility>

#include "runtime/launch/worker_output.h"

namespace accel::rt::launch {

// Writes the launcher's output on a thread of its own. When nobody reads the launcher's stdout
// (a stalled pipe, a paused terminal), the write blocks that thread only, and the supervision
// loop waits at most kStuck: it keeps reading the workers' pipes, so a worker never blocks for
// long writing a line, and the watchdog keeps watching. Lines wait in memory up to
// `max_queued_bytes` (one joined chunk of up to 64 KiB more), their bookkeeping counted (a line
// of the same stream joins the one queued before it). A full queue whose sink is still
// writing makes Print wait for room: a reader slower than the workers slows them down and
// loses nothing. Only once one write has been stuck for kStuck is the sink taken for one
// nobody reads: lines are dropped, and a note on stderr says how many once it is back, once
// per such episode.
class AsyncPrinter {
 public:
  AsyncPrinter(WorkerOutput::Printer sink, size_t max_queued_bytes);
  ~AsyncPrinter();  // writes what is queued, then stops the thread
  AsyncPrinter(const AsyncPrinter&) = delete;
  AsyncPrinter& operator=(const AsyncPrinter&) = delete;

  // Queues `text` for `stream`; never waits for the sink.
  void Print(OutputStream stream, std::string_view text);
  // Waits until everything queued so far has been written (the launcher's own last words
  // must come after its workers' lines).
  void Flush();
  // How long one write may take before the sink counts as one nobody reads.
  static constexpr std::chrono::milliseconds kStuck{200};

  // Print, as a WorkerOutput::Printer.
  WorkerOutput::Printer AsPrinter() {
    return [this](OutputStream stream, std::string_view text) { Print(stream, text); };
  }

 private:
  void Run();

  WorkerOutput::Printer sink_;
  size_t max_queued_bytes_;
  std::mutex mutex_;
  std::condition_variable wake_;     // something to write, or stop
  std::condition_variable drained_;  // the queue emptied and the sink returned
  std::condition_variable room_;     // a write returned
  std::deque<std::pair<OutputStream, std::string>> queue_;
  size_t queued_bytes_ = 0;  // the strings' capacity, and each entry's bookkeeping
  size_t dropped_lines_ = 0;
  bool writing_ = false;
  std::chrono::steady_clock::time_point write_started_;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace accel::rt::launch

#endif  // ACCEL_RUNTIME_LAUNCH_ASYNC_PRINTER_H_
