#ifndef ACCEL_RUNTIME_OBSERVE_METRICS_HISTORY_H_
#define ACCEL_RUNTIME_OBSERVE_METRICS_HISTORY_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "llvm/Support/Error.h"

namespace accel::rt::observe {

// One metric over a run: (step, value) in increasing step order, one point per step. A value
// logged as `null` (NaN or an infinity when written) is NaN here.
struct Series {
  std::string name;
  std::vector<std::pair<int64_t, double>> points;
};

// Where a run was resumed: `step` is the step it resumed at, the last one its checkpoint had
// trained (as the console and metrics.json say it: `resumed at step 100`), `line` the
// metrics.jsonl line (from 1) that shows the resume, `checkpoint` the checkpoint it continued
// from when the line names it.
struct ResumePoint {
  int64_t step = 0;
  size_t line = 0;
  std::string checkpoint;
};

// What a run's metrics.jsonl (MetricsLog's format) says, read back for reports.
struct MetricsHistory {
  // Every numeric field but `step` and `time`, by name.
  std::vector<Series> series;
  std::vector<ResumePoint> resumes;
  // How many lines held a record.
  size_t records = 0;
  // Whether the file ended in a line cut short (a run killed mid-write), which was left out.
  bool dropped_partial_last_line = false;

  // The series called `name`, or null.
  const Series* Find(std::string_view name) const;
};

// Reads metrics.jsonl text; `name` (the file's path) starts every error message. Each line is a
// JSON object with an integer `step` >= 0; blank lines are skipped, and fields that are neither
// numbers nor null (text, lists) are ignored, so records of newer runs still read.
//  - A later record for the same step replaces that step's earlier values, field by field.
//  - A marker line (one with an `event` field) carries no values. `"event":"resume"` at step S
//    (the checkpoint the run continued from) drops the values logged after S, which belong to
//    the attempt the resume abandoned, and records a resume at step S + 1. Other events
//    (`checkpoint`) are skipped.
//  - A step lower than one already read, with no marker before it (a run from before markers
//    existed), is a resume too: the values at that step and after are dropped, and the resume
//    is recorded at that step.
// A last line without its newline that does not parse is a write cut short by a kill and is
// dropped. Any other line that is not such a record fails with
// `name:LINE:COL: what was found; what was expected`.
llvm::Expected<MetricsHistory> ParseMetricsHistory(std::string_view text, std::string_view name);

// ParseMetricsHistory over the file at `path`; errors name the path (a missing file too).
llvm::Expected<MetricsHistory> ReadMetricsHistory(const std::string& path);

// The values of `series` without their steps, in step order.
std::vector<double> Values(const Series& series);

}  // namespace accel::rt::observe

#endif  // ACCEL_RUNTIME_OBSERVE_METRICS_HISTORY_H_
