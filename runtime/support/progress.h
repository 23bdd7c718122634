#ifndef ACCEL_RUNTIME_SUPPORT_PROGRESS_H_
#define ACCEL_RUNTIME_SUPPORT_PROGRESS_H_

#include <chrono>
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

// How long StillWorking keeps quiet after it spoke: a second unless set. A test that counts
// where long work says so sets 0, so that every call speaks.
void SetStillWorkingInterval(std::chrono::milliseconds interval);

}  // namespace accel::rt::progress

#endif  // ACCEL_RUNTIME_SUPPORT_PROGRESS_H_
