#ifndef ACCEL_RUNTIME_LAUNCH_WORKER_OUTPUT_H_
#define ACCEL_RUNTIME_LAUNCH_WORKER_OUTPUT_H_

#include <deque>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "runtime/launch/process.h"

namespace accel::rt::launch {

// How a worker's error line starts (`accelrun: error: rank N: ...`): the launcher relays it as
// it comes and does not repeat it in its verdict.
inline constexpr std::string_view kWorkerErrorPrefix = "accelrun: error: ";

// The last `capacity` lines of one worker, oldest first.
class LogTail {
 public:
  explicit LogTail(size_t capacity) : capacity_(capacity) {}
  void Add(std::string line);
  const std::deque<std::string>& lines() const { return lines_; }

 private:
  size_t capacity_;
  std::deque<std::string> lines_;
};

// Turns the byte streams of the workers into whole lines: prints each line on the launcher's
// stream of the same kind, with a `[rank N] ` prefix when `prefix` is set and N is not 0
// (rank 0's lines stay as written), and keeps each rank's last lines (both streams, in arrival
// order) for the failure report.
//
// A line that starts with '\r' is a progress line redrawn in place (rank 0's on a terminal,
// observe::ProgressReporter): what follows the '\r' is relayed as soon as it arrives, without
// waiting for a newline, so the terminal shows each redraw. A whole line printed while such a
// line is on the screen starts on a line of its own. Only a redrawn line's last state (or the
// message that replaced it) is kept in the tail.
//
// A worker's error line (`accelrun: error: rank N: TEXT`) is printed once: when another rank
// prints the same TEXT, its line is kept in its tail but not printed, and the lines indented
// below it (a traceback, `  ...`) neither; the verdict names every rank that printed it
// (RanksWithError). With 16 ranks failing alike, the console shows one error, not 16.
class WorkerOutput {
 public:
  // Receives complete lines, newline included.
  using Printer = std::function<void(OutputStream, std::string_view)>;

  WorkerOutput(bool prefix, size_t tail_lines, Printer print)
      : prefix_(prefix), tail_lines_(tail_lines), print_(std::move(print)) {}

  // Feeds bytes `rank` wrote to `stream`; prints every line they complete. A line longer than
  // 64 KiB is cut there and printed in pieces.
  void Add(int rank, OutputStream stream, std::string_view bytes);
  // Prints what is left of `rank`'s unfinished line on `stream` (its stream ended without a
  // final newline), as a line.
  void Finish(int rank, OutputStream stream);
  // The last lines `rank` wrote, oldest first, without prefix or newline; empty for a rank
  // that wrote nothing.
  std::vector<std::string> Tail(int rank) const;
  // The rank that printed in full the error text `rank` printed last (`rank` itself, or the one
  // whose identical error came first), or nullopt when `rank` printed no error line.
  std::optional<int> ErrorPrintedBy(int rank) const;
  // The TEXT of `rank`'s last error line, or nullopt.
  std::optional<std::string> ErrorOf(int rank) const;
  // Every rank whose last error line has the same TEXT as `rank`'s, ascending; empty when
  // `rank` printed no error line.
  std::vector<int> RanksWithError(int rank) const;
  // `rank`'s last error as it was relayed: the error line (without `[rank N] `) and the lines
  // indented below it (a traceback), at most kMaxErrorLines; empty when it printed none.
  std::vector<std::string> ErrorAsPrinted(int rank) const;
  static constexpr size_t kMaxErrorLines = 200;

 private:
  void EmitLine(int rank, OutputStream stream, std::string_view line);
  // Relays the part of a redrawn line that arrived so far.
  void EmitRedraw(int rank, OutputStream stream, std::string_view text);

  bool prefix_;
  size_t tail_lines_;
  Printer print_;
  std::map<std::pair<int, OutputStream>, std::string> partial_;
  // The (rank, stream)s whose unfinished line began with '\r'.
  std::set<std::pair<int, OutputStream>> redrawing_;
  // The text of each worker error line printed so far, and the rank that printed it first.
  std::map<std::string, int> errors_;
  // Each error TEXT as it was relayed, by the rank that printed it first: its line, then the
  // lines indented below it.
  std::map<std::string, std::vector<std::string>> printed_errors_;
  // The (rank, stream)s whose last line not indented was an error line: the indented lines below
  // it continue that error. True where another rank had printed the error, so they are not shown.
  std::map<std::pair<int, OutputStream>, bool> errors_below_;
  // Each rank's last error line, as the key of `errors_`.
  std::map<int, std::string> last_error_;
  // A redrawn line is on the terminal and the cursor is at its end.
  bool redraw_shown_ = false;
  std::map<int, LogTail> tails_;
};

// Writes `text` to the launcher's stdout or stderr and flushes, so lines from the workers and
// the launcher's own messages reach a pipe or file in the order they were printed.
void PrintToStandardStream(OutputStream stream, std::string_view text);

}  // namespace accel::rt::launch

#endif  // ACCEL_RUNTIME_LAUNCH_WORKER_OUTPUT_H_
