#ifndef ACCEL_RUNTIME_OBSERVE_METRICS_LOG_H_
#define ACCEL_RUNTIME_OBSERVE_METRICS_LOG_H_

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "llvm/Support/Error.h"

namespace accel::rt::observe {

// Named scalars of one step, written in this order.
using Scalars = std::vector<std::pair<std::string, double>>;

// Named text fields of a marker line, written in this order.
using Labels = std::vector<std::pair<std::string, std::string>>;

// A JSON Lines metrics file: one object per logged step,
//   {"step":20,"time":1718000000.123456,"loss":0.123456,"lr":0.003}
// with `step` and `time` (Unix seconds, microsecond resolution) first and then the scalars in
// the caller's order. A marker line (WriteEvent) has an `event` after `time`,
//   {"step":40,"time":1718000000.5,"event":"resume","checkpoint":"runs/j/checkpoints/checkpoint_1",
//    "elapsed_seconds":12.5}
// and carries no loss (docs/training.md lists the events). Non-finite values (NaN, +-inf) have no JSON
// spelling and are written as `null`. Each line goes to the file in one write(2), so a killed process leaves
// at most one partial last line; `Open(path, /*append=*/true)` removes such a line before appending. A write
// that fails part-way (a full disk) cuts its part off again, so the file ends with a whole line.
// Move-only; the destructor closes the file.
class MetricsLog {
 public:
  // Opens `path` for writing, creating missing parent directories. With `append` (a resumed
  // run) the existing lines are kept, a partial last line is truncated away, and new lines go
  // after them; without it the file is truncated. Errors name the path.
  static llvm::Expected<MetricsLog> Open(const std::string& path, bool append);

  MetricsLog(MetricsLog&& other) noexcept;
  MetricsLog& operator=(MetricsLog&& other) noexcept;
  MetricsLog(const MetricsLog&) = delete;
  MetricsLog& operator=(const MetricsLog&) = delete;
  ~MetricsLog();

  // Appends the line for `step` stamped with the current time. Scalar names must not be
  // `step` or `time` (an error, nothing written). Errors name the path.
  llvm::Error Write(int64_t step, const Scalars& scalars);

  // As above with an explicit `time` in Unix seconds (tests, replays).
  llvm::Error Write(int64_t step, const Scalars& scalars, double time);

  // A marker line for `step`: `event`, then `labels` (text) and `scalars`, stamped `time`.
  // Names must not be `step`, `time` or `event`. Errors name the path.
  llvm::Error WriteEvent(int64_t step, const std::string& event, const Labels& labels, const Scalars& scalars,
                         double time);

  // The line Write(step, scalars, time) writes, with its final newline; with `labels`, they
  // come after `time` as strings.
  static std::string FormatLine(int64_t step, const Scalars& scalars, double time, const Labels& labels = {});

  const std::string& path() const { return path_; }

 private:
  MetricsLog(std::string path, int fd) : path_(std::move(path)), fd_(fd) {}
  llvm::Error Append(const std::string& line);

  std::string path_;
  int fd_ = -1;
};

// What a metrics file says about a run up to `step` (the step a resumed run continues from),
// so that a resumed run's summary covers the whole run: the loss of its first logged line, the
// last logged loss at or before `step`, and the training time up to `step` (the
// `elapsed_seconds` of the last `checkpoint` or `resume` marker at or before it). Each is unset
// when the file does not say (no file, or a run from before markers existed); unreadable lines
// are skipped.
struct RunHistory {
  std::optional<double> first_loss;
  std::optional<double> last_loss;
  std::optional<double> elapsed_seconds;
};
RunHistory ReadRunHistory(const std::string& path, int64_t step);

}  // namespace accel::rt::observe

#endif  // ACCEL_RUNTIME_OBSERVE_METRICS_LOG_H_
