#ifndef ACCEL_RUNTIME_SUPPORT_PROGRESS_H_
#define ACCEL_RUNTIME_SUPPORT_PROGRESS_H_

#include <chrono>
#include <functional>
#include <string>
#include <string_view>

// What a worker tells its launcher about its progress, one short line at a time, through a pipe
// the launcher gave it (ACCEL_PROGRESS_FD). The launcher's watchdog stops a job whose rank has
// said nothing for too long, and names that rank, telling a rank stuck in its own work from the
// ranks waiting for it in a collective: a wait is held to the plan's timeout, own work (which
// says so again while it runs, StillWorking) to a longer limit (docs/launch.md). Without the
// variable (a worker run by hand) nothing is sent. A full pipe drops the line: progress never
// blocks training.
namespace accel::rt::progress {

inline constexpr const char* kEnvFd = "ACCEL_PROGRESS_FD";

// The line format: `W <what>` while waiting for peers, `S <what>` while working alone.
inline constexpr char kWaitingTag = 'W';
inline constexpr char kWorkingTag = 'S';

// This rank does its own work: `step 12`, `saving a checkpoint`.
void Working(std::string_view what);

// This rank waits for its peers in `what`: `the rendezvous`, `all_reduce`.
void Waiting(std::string_view what);

// The wait is over: this rank is back at the work it last named with Working.
void Resumed();

// Called from inside long work of this rank's own (a dataset loader's loop): says the work last
// named again, at most once a second, so that the watchdog sees a rank at work rather than a
// silent one. Work that never calls it (a spinning library) still falls silent.
void StillWorking();

// StillWorking's line to the launcher alone, without the beats a BeatListener hears: for a rank
// whose own part is done and that waits for its peers' (Collectives::MeetAfterWork), so that
// its waiting is never taken for their work.
void StillWaitingForWork();

// Names this rank's waiting for its peers' own work (Collectives::MeetAfterWork) as Working
// names work, for as long as it lives, without the beats of Working; then the work named before
// it is named again (and said, as Resumed says it).
class ScopedWork {
 public:
  explicit ScopedWork(std::string_view what);
  ~ScopedWork();
  ScopedWork(const ScopedWork&) = delete;
  ScopedWork& operator=(const ScopedWork&) = delete;

 private:
  std::string outer_;
};

// While it lives, `beat` also runs each time this rank says it is at work (Working, and
// StillWorking when it speaks), on the thread that says it: how the peers waiting for this
// rank's own work (Collectives::MeetAfterWork) learn that it still works. `beat` must not throw.
class BeatListener {
 public:
  explicit BeatListener(std::function<void()> beat);
  ~BeatListener();
  BeatListener(const BeatListener&) = delete;
  BeatListener& operator=(const BeatListener&) = delete;

 private:
  int id_;
};

// How long StillWorking keeps quiet after it spoke: a second unless set. A test that counts
// where long work says so sets 0, so that every call speaks.
void SetStillWorkingInterval(std::chrono::milliseconds interval);

}  // namespace accel::rt::progress

#endif  // ACCEL_RUNTIME_SUPPORT_PROGRESS_H_
