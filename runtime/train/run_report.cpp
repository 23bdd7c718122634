#include "runtime/train/run_report.h"

#include <chrono>

#include <fmt/format.h>

namespace accel::rt::train {
namespace {

double UnixSeconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

}  // namespace

llvm::Expected<std::unique_ptr<RunReport>> RunReport::Open(const plan::Plan& plan,
                                                            const plan::TrainLoop& loop,
                                                            const std::filesystem::path& output_dir,
                                                            int64_t first_step, bool resumed, bool tty) {
  llvm::Expected<observe::MetricsLog> metrics =
      observe::MetricsLog::Open((output_dir / "metrics.jsonl").string(), resumed);
  if (!metrics) return metrics.takeError();
  std::unique_ptr<RunReport> report(new RunReport(loop, first_step, tty, std::move(*metrics)));
  for (plan::Tracker tracker : loop.trackers) {
    switch (tracker) {
      case plan::Tracker::tensorboard: {
        std::filesystem::path root =
            loop.logging_dir.empty() ? output_dir : std::filesystem::path(loop.logging_dir);
        llvm::Expected<observe::TensorBoardWriter> writer =
            observe::TensorBoardWriter::Open((root / plan.job).string());
        if (!writer) return writer.takeError();
        report->tensorboard_.emplace(std::move(*writer));
        break;
      }
    }
  }
  return report;
}

bool IsReportedStep(const plan::TrainLoop& loop, int64_t first_step, int64_t step) {
  return step == first_step || step % loop.log_every == 0 || step == loop.steps;
}

llvm::Error RunReport::Log(int64_t step, const observe::Scalars& scalars, double loss) {
  last_loss_ = loss;
  double now = UnixSeconds();
  if (llvm::Error error = metrics_->Write(step, scalars, now)) return error;
  if (tensorboard_) {
    for (const auto& [name, value] : scalars) {
      if (llvm::Error error = tensorboard_->AddScalar(name, value, step, now)) return error;
    }
  }
  return llvm::Error::success();
}

llvm::Error RunReport::LogEval(int64_t step, const observe::Scalars& scalars) {
  double now = UnixSeconds();
  if (llvm::Error error = metrics_->Write(step, scalars, now)) return error;
  if (tensorboard_) {
    for (const auto& [name, value] : scalars) {
      if (llvm::Error error = tensorboard_->AddScalar(name, value, step, now)) return error;
    }
  }
  std::string line = fmt::format("eval at step {}:", step);
  for (const auto& [name, value] : scalars) line += fmt::format("  {} {:.6f}", name, value);
  progress_.Message(line);
  return llvm::Error::success();
}

llvm::Error RunReport::LogEvent(int64_t step, const std::string& event, const observe::Labels& labels,
                                const observe::Scalars& scalars) {
  return metrics_->WriteEvent(step, event, labels, scalars, UnixSeconds());
}

void RunReport::Update(int64_t step, double lr, double samples_per_second) {
  progress_.Update(step, last_loss_, lr, samples_per_second);
}

llvm::Error RunReport::Finish() {
  progress_.Finish();
  return tensorboard_ ? tensorboard_->Flush() : llvm::Error::success();
}

}  // namespace accel::rt::train
