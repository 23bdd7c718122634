#ifndef ACCEL_RUNTIME_LAUNCH_DIRECTORY_LOCK_H_
#define ACCEL_RUNTIME_LAUNCH_DIRECTORY_LOCK_H_

#include <string>

#include "llvm/Support/Error.h"

namespace accel::rt::launch {

// An exclusive claim on a directory a job writes into (its output or project directory), so
// that two jobs given the same one cannot interleave metrics.jsonl lines or checkpoints. It is
// a flock on `<dir>/.accelrun.lock`: the kernel drops it when the holder exits, SIGKILL
// included, so a crashed job never leaves a stale lock. The file says who holds it.
class DirectoryLock {
 public:
  // Creates `dir` if needed and locks it for this process. `holder` describes this job (pid,
  // host, launch). Fails without waiting when another process holds it, naming that holder.
  static llvm::Expected<DirectoryLock> Acquire(const std::string& dir, const std::string& holder);

  DirectoryLock(DirectoryLock&& other) noexcept;
  DirectoryLock& operator=(DirectoryLock&&) = delete;
  DirectoryLock(const DirectoryLock&) = delete;
  ~DirectoryLock();

 private:
  explicit DirectoryLock(int fd) : fd_(fd) {}
  int fd_ = -1;
};

// The name of the lock file inside a locked directory.
inline constexpr const char* kLockFileName = ".accelrun.lock";

}  // namespace accel::rt::launch

#endif  // ACCEL_RUNTIME_LAUNCH_DIRECTORY_LOCK_H_
