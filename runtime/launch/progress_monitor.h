#ifndef ACCEL_RUNTIME_LAUNCH_PROGRESS_MONITOR_H_
#define ACCEL_RUNTIME_LAUNCH_PROGRESS_MONITOR_H_

#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <string_view>

namespace accel::rt::launch {

// What each running rank last said on its progress pipe (runtime/support/progress.h), and when:
// the launcher's watchdog reads it to find a rank that stopped making progress, and to tell the
// rank stuck in its own work from those waiting for it in a collective.
class ProgressMonitor {
 public:
  using Clock = std::chrono::steady_clock;

  // A rank that has said nothing for `silent_for`.
  struct Silence {
    int rank = -1;
    Clock::duration silent_for{};
    bool waiting = false;  // its last word was that it waits for its peers
    std::string last;      // `step 12`, `all_reduce`; empty before its first word
    bool stopped = false;  // the process is stopped (set by the launcher, which can see it)
  };

  // What `rank` last said and how long ago; empty for a rank that is not running.
  std::optional<Silence> Of(int rank, Clock::time_point now) const;

  // Called on every turn of the launcher's loop (about every 50 ms). A turn that comes more
  // than a second after the last one means the launcher itself did not run (stopped with
  // SIGSTOP, starved): that time is not the ranks' silence, so their clocks skip it too.
  void Tick(Clock::time_point now);

  void Started(int rank, Clock::time_point now);
  // Bytes from `rank`'s progress pipe; complete lines update it.
  void Add(int rank, std::string_view bytes, Clock::time_point now);
  void Ended(int rank);

  // How long a rank may stay silent, by what it last said.
  struct Limits {
    Clock::duration waiting{};     // waiting for its peers in a collective or the rendezvous
    Clock::duration working{};     // in its own work (which says so again while it runs)
    Clock::duration first_word{};  // before its first word (starting a worker loads LibTorch)
  };

  // The rank to blame once some rank has been silent past its limit in `limits`. Among the
  // ranks past their limit, one working alone is named before one waiting for its peers (they
  // wait for it), then the longest silent. Empty while every rank is within its limit.
  std::optional<Silence> Stalled(Clock::time_point now, const Limits& limits) const;

  // The running rank that works alone and has been silent for at least `at_least`, the longest:
  // when its peers fail waiting in a collective, this is the rank they waited for.
  std::optional<Silence> SilentWorker(Clock::time_point now, Clock::duration at_least) const;

  // `rank 1 ... made no progress for 65 s (last: step 12, working)`-style detail: `65 s (last
  // word: step 12)`.
  static std::string Describe(const Silence& silence);

 private:
  struct State {
    Clock::time_point last_word;
    bool spoke = false;
    bool waiting = false;
    std::string last;
    std::string partial;  // a line not yet ended
  };
  Silence SilenceOf(int rank, const State& state, Clock::time_point now) const;

  std::map<int, State> ranks_;  // running ranks only
  std::optional<Clock::time_point> last_tick_;
};

}  // namespace accel::rt::launch

#endif  // ACCEL_RUNTIME_LAUNCH_PROGRESS_MONITOR_H_
