#ifndef ACCEL_RUNTIME_OBSERVE_METRICS_LOG_H_
#define ACCEL_RUNTIME_OBSERVE_METRICS_LOG_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "llvm/Support/Error.h"

namespace accel::rt::observe {

// Named scalars of one step, written in this order.
using Scalars = std::vector<std::pair<std::string, double>>;

// A JSON Lines metrics file: one object per logged step,
//   {"step":20,"time":1718000000.123456,"loss":0.123456,"lr":0.003}
// with `step` and `time` (Unix seconds, microsecond resolution) first and then the scalars in
// the caller's order. Non-finite values (NaN, +-inf) have no JSON spelling and are written as
// `null`. Each line goes to the file in one write(2), so a killed process leaves at most one
// partial last line; `Open(path, /*append=*/true)` removes such a line before appending.
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

  // The line Write(step, scalars, time) writes, with its final newline.
  static std::string FormatLine(int64_t step, const Scalars& scalars, double time);

  const std::string& path() const { return path_; }

 private:
  MetricsLog(std::string path, int fd) : path_(std::move(path)), fd_(fd) {}

  std::string path_;
  int fd_ = -1;
};

}  // namespace accel::rt::observe

#endif  // ACCEL_RUNTIME_OBSERVE_METRICS_LOG_H_
