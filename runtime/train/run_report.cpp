#include "runtime/train/run_report.h"

#include <chrono>
#include <stdexcept>

#include <fmt/format.h>

namespace accel::rt::train {
namespace {

template <typename T>
T OrThrow(llvm::Expected<T> value) {
  if (!value) throw std::runtime_error(llvm::toString(value.takeError()));
  return std::move(*value);
}

void OrThrow(llvm::Error error) {
  if (error) throw std::runtime_error(llvm::toString(std::move(error)));
}

double UnixSeconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

}  // namespace

RunReport::RunReport(const plan::Plan& plan, const plan::TrainLoop& loop,
                     const std::filesystem::path& output_dir, int64_t first_step, bool resumed, bool tty)
    : loop_(loop), progress_(loop.steps, first_step, loop.log_every, tty, stdout) {
  metrics_.emplace(OrThrow(observe::MetricsLog::Open((output_dir / "metrics.jsonl").string(), resumed)));
  for (plan::Tracker tracker : loop.trackers) {
    switch (tracker) {
      case plan::Tracker::tensorboard: {
        std::filesystem::path root =
            loop.logging_dir.empty() ? output_dir : std::filesystem::path(loop.logging_dir);
        tensorboard_.emplace(OrThrow(observe::TensorBoardWriter::Open((root / plan.job).string())));
        break;
      }
    }
  }
}

bool IsReportedStep(const plan::TrainLoop& loop, int64_t first_step, int64_t step) {
  return step == first_step || step % loop.log_every == 0 || step == loop.steps;
}

void RunReport::Log(int64_t step, const observe::Scalars& scalars, double loss) {
  last_loss_ = loss;
  double now = UnixSeconds();
  OrThrow(metrics_->Write(step, scalars, now));
  if (tensorboard_) {
    for (const auto& [name, value] : scalars) OrThrow(tensorboard_->AddScalar(name, value, step, now));
  }
}

void RunReport::LogEval(int64_t step, const observe::Scalars& scalars) {
  double now = UnixSeconds();
  OrThrow(metrics_->Write(step, scalars, now));
  if (tensorboard_) {
    for (const auto& [name, value] : scalars) OrThrow(tensorboard_->AddScalar(name, value, step, now));
  }
  std::string line = fmt::format("eval at step {}:", step);
  for (const auto& [name, value] : scalars) line += fmt::format("  {} {:.6f}", name, value);
  progress_.Message(line);
}

void RunReport::LogEvent(int64_t step, const std::string& event, const observe::Labels& labels,
                         const observe::Scalars& scalars) {
  OrThrow(metrics_->WriteEvent(step, event, labels, scalars, UnixSeconds()));
}

void RunReport::Update(int64_t step, double lr, double samples_per_second) {
  progress_.Update(step, last_loss_, lr, samples_per_second);
}

void RunReport::Finish() {
  progress_.Finish();
  if (tensorboard_) OrThrow(tensorboard_->Flush());
}

}  // namespace accel::rt::train
