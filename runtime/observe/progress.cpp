#include "runtime/observe/progress.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <utility>

#include <fmt/format.h>

namespace accel::rt::observe {
namespace {

// A terminal redrawn more often than this flickers and costs time in a fast loop.
constexpr double kRedrawSeconds = 0.1;
constexpr int kBarWidth = 20;

double SteadySeconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// H:MM:SS, or --:--:-- when unknown (an ETA before there is a rate).
std::string FormatDuration(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0) return "--:--:--";
  auto total = static_cast<int64_t>(seconds + 0.5);
  return fmt::format("{}:{:02}:{:02}", total / 3600, total / 60 % 60, total % 60);
}

}  // namespace

ProgressReporter::ProgressReporter(int64_t total_steps, int64_t first_step, int64_t log_every, bool tty,
                                   std::FILE* out, Clock clock)
    : total_steps_(total_steps),
      first_step_(first_step),
      log_every_(log_every),
      tty_(tty),
      out_(out),
      clock_(clock ? std::move(clock) : Clock(SteadySeconds)),
      started_(clock_()) {}

ProgressReporter::~ProgressReporter() { Finish(); }

bool ProgressReporter::IsLogStep(int64_t step) const {
  return step == first_step_ || step == total_steps_ || (log_every_ > 0 && step % log_every_ == 0);
}

void ProgressReporter::Update(int64_t step, double loss, double lr, double samples_per_second) {
  if (finished_) return;
  step_ = step;
  loss_ = loss;
  lr_ = lr;
  any_update_ = true;
  if (!tty_) {
    if (!IsLogStep(step)) return;
    std::string line = fmt::format("step {:>{}}/{}  loss {:.6f}  lr {:.4g}", step,
                                   fmt::formatted_size("{}", total_steps_), total_steps_, loss, lr);
    if (samples_per_second > 0) line += fmt::format("  {:.0f} samples/s", samples_per_second);
    fmt::print(out_, "{}\n", line);
    std::fflush(out_);
    return;
  }
  double now = clock_();
  drawn_ = false;
  if (IsLogStep(step) || now - last_draw_ >= kRedrawSeconds) Draw(now);
}

void ProgressReporter::Draw(double now) {
  double fraction = total_steps_ > 0 ? static_cast<double>(step_) / static_cast<double>(total_steps_) : 1.0;
  fraction = std::clamp(fraction, 0.0, 1.0);
  int filled = static_cast<int>(fraction * kBarWidth);
  // The rate counts only this run's steps: on resume the earlier ones took no time here.
  double elapsed = now - started_;
  int64_t done = step_ - first_step_ + 1;
  double rate = elapsed > 0 && done > 0 ? static_cast<double>(done) / elapsed : 0.0;
  std::string rate_text = rate > 0 ? fmt::format("{:.2f} it/s", rate) : "-- it/s";
  double eta = rate > 0 ? static_cast<double>(total_steps_ - step_) / rate : -1.0;
  std::string line = fmt::format("[{}{}] {:>{}}/{} {:3.0f}%  loss {:.6f}  lr {:.4g}  {}  elapsed {}  ETA {}",
                                 std::string(filled, '#'), std::string(kBarWidth - filled, '-'), step_,
                                 fmt::formatted_size("{}", total_steps_), total_steps_, fraction * 100, loss_,
                                 lr_, rate_text, FormatDuration(elapsed), FormatDuration(eta));
  // Spaces over whatever a longer previous line left behind, instead of terminal escapes.
  size_t width = line.size();
  if (width < last_width_) line.append(last_width_ - width, ' ');
  last_width_ = width;
  fmt::print(out_, "\r{}", line);
  std::fflush(out_);
  last_draw_ = now;
  drawn_ = true;
}

void ProgressReporter::Message(const std::string& line) {
  if (finished_) return;
  if (tty_ && last_width_ > 0) {
    // Overwrite the bar, padding over what is left of it.
    std::string padded = line;
    if (padded.size() < last_width_) padded.append(last_width_ - padded.size(), ' ');
    fmt::print(out_, "\r{}\n", padded);
    last_width_ = 0;
    drawn_ = false;
  } else {
    fmt::print(out_, "{}\n", line);
  }
  std::fflush(out_);
}

void ProgressReporter::Finish() {
  if (finished_) return;
  finished_ = true;
  if (tty_ && any_update_) {
    if (!drawn_) Draw(clock_());
    fmt::print(out_, "\n");
  }
  std::fflush(out_);
}

}  // namespace accel::rt::observe
