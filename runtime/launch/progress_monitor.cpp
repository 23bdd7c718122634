#include "runtime/launch/progress_monitor.h"

#include <fmt/format.h>

#include "runtime/support/progress.h"

namespace accel::rt::launch {

void ProgressMonitor::Started(int rank, Clock::time_point now) { ranks_[rank] = State{now}; }

void ProgressMonitor::Add(int rank, std::string_view bytes, Clock::time_point now) {
  auto it = ranks_.find(rank);
  if (it == ranks_.end()) return;
  State& state = it->second;
  state.partial.append(bytes);
  size_t end;
  while ((end = state.partial.find('\n')) != std::string::npos) {
    std::string line = state.partial.substr(0, end);
    state.partial.erase(0, end + 1);
    if (line.size() < 2 || line[1] != ' ') continue;  // not a progress line: ignored
    state.last_word = now;
    state.spoke = true;
    state.waiting = line[0] == progress::kWaitingTag;
    state.last = line.substr(2);
  }
  if (state.partial.size() > 4096) state.partial.clear();  // a writer that never ends a line
}

void ProgressMonitor::Ended(int rank) { ranks_.erase(rank); }

ProgressMonitor::Silence ProgressMonitor::SilenceOf(int rank, const State& state,
                                                    Clock::time_point now) const {
  return Silence{rank, now - state.last_word, state.waiting, state.last};
}

std::optional<ProgressMonitor::Silence> ProgressMonitor::Of(int rank, Clock::time_point now) const {
  auto it = ranks_.find(rank);
  if (it == ranks_.end()) return std::nullopt;
  return SilenceOf(rank, it->second, now);
}

void ProgressMonitor::Tick(Clock::time_point now) {
  constexpr Clock::duration kLongestTurn = std::chrono::seconds(1);
  if (last_tick_ && now - *last_tick_ > kLongestTurn) {
    const Clock::duration missed = now - *last_tick_;
    for (auto& [rank, state] : ranks_) state.last_word += missed;
  }
  last_tick_ = now;
}

std::optional<ProgressMonitor::Silence> ProgressMonitor::Stalled(Clock::time_point now,
                                                                 const Limits& limits) const {
  std::optional<Silence> blamed;
  for (const auto& [rank, state] : ranks_) {
    Silence silence = SilenceOf(rank, state, now);
    const Clock::duration limit = !state.spoke     ? limits.first_word
                                  : state.waiting ? limits.waiting
                                                  : limits.working;
    if (silence.silent_for <= limit) continue;
    bool better = !blamed || (blamed->waiting && !silence.waiting) ||
                  (blamed->waiting == silence.waiting && silence.silent_for > blamed->silent_for);
    if (better) blamed = silence;
  }
  return blamed;
}

std::optional<ProgressMonitor::Silence> ProgressMonitor::SilentWorker(Clock::time_point now,
                                                                      Clock::duration at_least) const {
  std::optional<Silence> longest;
  for (const auto& [rank, state] : ranks_) {
    Silence silence = SilenceOf(rank, state, now);
    if (silence.waiting || silence.silent_for < at_least) continue;
    if (!longest || silence.silent_for > longest->silent_for) longest = silence;
  }
  return longest;
}

std::string ProgressMonitor::Describe(const Silence& silence) {
  double seconds = std::chrono::duration<double>(silence.silent_for).count();
  std::string last = silence.last.empty() ? "nothing yet, still starting"
                     : silence.waiting    ? "waiting for its peers in " + silence.last
                                          : silence.last;
  return fmt::format("{:.0f} s (last: {})", seconds, last);
}

}  // namespace accel::rt::launch
