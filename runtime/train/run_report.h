#ifndef ACCEL_RUNTIME_TRAIN_RUN_REPORT_H_
#define ACCEL_RUNTIME_TRAIN_RUN_REPORT_H_

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>

#include "compiler/plan/plan.h"
#include "runtime/observe/metrics_log.h"
#include "runtime/observe/progress.h"
#include "runtime/observe/tensorboard.h"
#include "llvm/Support/Error.h"

namespace accel::rt::train {

// Whether `step` is one the loop reports (the run's first, every log_every-th, the last): only
// then are the losses averaged across ranks. Every rank asks, since the average is collective.
bool IsReportedStep(const plan::TrainLoop& loop, int64_t first_step, int64_t step);

// What the main process reports while training: the progress line (a redrawn bar on a
// terminal, plain lines otherwise), `metrics.jsonl` in the output directory, and TensorBoard
// event files under `{logging_dir}/{job}` when the plan asks for the tensorboard tracker — the
// directory Accelerate's TensorBoardTracker writes for `init_trackers(job)`. Other ranks
// report nothing. A file that cannot be opened or written is an llvm::Error naming it.
class RunReport {
 public:
  // `resumed` continues metrics.jsonl instead of starting it over; `tty` redraws the progress
  // line in place.
  static llvm::Expected<std::unique_ptr<RunReport>> Open(const plan::Plan& plan, const plan::TrainLoop& loop,
                                                         const std::filesystem::path& output_dir,
                                                         int64_t first_step, bool resumed, bool tty);

  // At a reported step, before Update(): a metrics line and TensorBoard scalars (`scalars`,
  // named as they appear in the files: `loss`, `lr`, ...), and `loss` for the progress line.
  llvm::Error Log(int64_t step, const observe::Scalars& scalars, double loss);

  // An evaluation at `step`: a metrics line and TensorBoard scalars (`eval_loss`, ...), and a
  // plain line on the console.
  llvm::Error LogEval(int64_t step, const observe::Scalars& scalars);

  // A marker line in metrics.jsonl (`checkpoint`, `resume`; docs/training.md), not shown on
  // the console or in TensorBoard.
  llvm::Error LogEvent(int64_t step, const std::string& event, const observe::Labels& labels,
                       const observe::Scalars& scalars);

  // After every optimizer step: the progress line (redrawn on a terminal; a plain line at the
  // reported steps otherwise) with the last logged loss.
  void Update(int64_t step, double lr, double samples_per_second);

  // Ends the progress line and flushes the event file.
  llvm::Error Finish();

 private:
  RunReport(const plan::TrainLoop& loop, int64_t first_step, bool tty, observe::MetricsLog metrics)
      : loop_(loop),
        progress_(loop.steps, first_step, loop.log_every, tty, stdout),
        metrics_(std::move(metrics)) {}

  const plan::TrainLoop& loop_;
  observe::ProgressReporter progress_;
  std::optional<observe::MetricsLog> metrics_;
  std::optional<observe::TensorBoardWriter> tensorboard_;
  double last_loss_ = 0;
};

}  // namespace accel::rt::train

#endif  // ACCEL_RUNTIME_TRAIN_RUN_REPORT_H_
