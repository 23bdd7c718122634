#ifndef ACCEL_RUNTIME_OBSERVE_PROGRESS_H_
#define ACCEL_RUNTIME_OBSERVE_PROGRESS_H_

#include <cstdint>
#include <cstdio>
#include <functional>
#include <string>

namespace accel::rt::observe {

// Training progress for the main process (rank 0 only; not collective). Two forms:
//  - `tty`: one line redrawn in place with '\r',
//      [########------------]  80/200  40%  loss 0.123456  lr 0.003  12.34 it/s  elapsed 0:00:06  ETA 0:00:09
//    (elapsed time and rate count this run's steps only, on resume too)
//    at most about 10 times a second, and always at the first step, every `log_every` steps
//    and the last step; Finish() ends it with a newline.
//  - otherwise (a log file, a pipe): a plain line at the first step, every `log_every` steps
//    and the last step,
//      step  20/200  loss 0.123456  lr 0.003  1234 samples/s
//    with the step right-aligned to the width of `total_steps` (scripts grep for the
//    `step N/T  loss X` prefix).
// Output goes to `out` (not owned; must outlive the reporter) and is flushed after each line.
class ProgressReporter {
 public:
  // Seconds on a monotonic clock; the default is std::chrono::steady_clock.
  using Clock = std::function<double()>;

  // Steps are numbered 1..`total_steps`; `first_step` is the first one this run reports (above
  // 1 on resume). `log_every` <= 0 means only the first and last steps are logged.
  ProgressReporter(int64_t total_steps, int64_t first_step, int64_t log_every, bool tty, std::FILE* out,
                   Clock clock = {});
  // Calls Finish().
  ~ProgressReporter();
  ProgressReporter(const ProgressReporter&) = delete;
  ProgressReporter& operator=(const ProgressReporter&) = delete;

  // Reports that `step` is done with this `loss` and learning rate `lr`. A
  // `samples_per_second` that is not positive is left out of the plain line.
  void Update(int64_t step, double loss, double lr, double samples_per_second);

  // Prints `line` on a line of its own (an evaluation result): on a terminal it replaces the
  // bar, which the next Update() draws again below it.
  void Message(const std::string& line);

  // Ends the TTY line (drawing the last update if it was throttled) with a newline. Further
  // calls, and Update() after it, do nothing.
  void Finish();

 private:
  bool IsLogStep(int64_t step) const;
  void Draw(double now);

  int64_t total_steps_;
  int64_t first_step_;
  int64_t log_every_;
  bool tty_;
  std::FILE* out_;
  Clock clock_;
  double started_;
  // The most recent Update(), and whether the TTY line shows it.
  int64_t step_ = 0;
  double loss_ = 0;
  double lr_ = 0;
  bool drawn_ = true;
  bool any_update_ = false;
  double last_draw_ = 0;
  size_t last_width_ = 0;
  bool finished_ = false;
};

}  // namespace accel::rt::observe

#endif  // ACCEL_RUNTIME_OBSERVE_PROGRESS_H_
