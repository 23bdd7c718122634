// The claim a job takes on its output directory: a second job is refused, naming the first;
// the claim ends with the process that held it, however it ended.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>

#include "runtime/launch/directory_lock.h"
#include "tests/unit/scratch_dir.h"

namespace accel::rt::launch {
namespace {

// Forks a process that takes the lock on `dir` and then waits to be killed; returns its pid
// once it holds the lock.
pid_t HoldInAnotherProcess(const std::string& dir, const std::string& holder) {
  int ready[2];
  if (::pipe(ready) != 0) return -1;
  pid_t child = ::fork();
  if (child == 0) {
    llvm::Expected<DirectoryLock> lock = DirectoryLock::Acquire(dir, holder);
    char byte = lock ? 1 : 0;
    if (!lock) llvm::consumeError(lock.takeError());
    (void)!::write(ready[1], &byte, 1);
    if (!lock) std::_Exit(1);
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);  // never outlive the test
    if (::getppid() == 1) std::_Exit(1);
    ::pause();
    std::_Exit(0);
  }
  char byte = 0;
  (void)!::read(ready[0], &byte, 1);
  ::close(ready[0]);
  ::close(ready[1]);
  if (byte == 1) return child;
  ::waitpid(child, nullptr, 0);
  return -1;
}

TEST(DirectoryLock, ASecondJobIsRefusedNamingTheHolderUntilTheHolderDies) {
  std::string dir = (accel::testing::ScratchDir("lock") / "runs" / "job").string();  // created on demand
  pid_t holder = HoldInAnotherProcess(dir, "accelrun pid 4242 on node7, launch slurm-12.0");
  ASSERT_GT(holder, 0) << "the first process could not take the lock";

  llvm::Expected<DirectoryLock> second = DirectoryLock::Acquire(dir, "accelrun pid 99 on node7");
  ASSERT_FALSE(static_cast<bool>(second));
  EXPECT_EQ(llvm::toString(second.takeError()),
            "`" + dir +
                "` is in use by another job (accelrun pid 4242 on node7, launch slurm-12.0); give this job "
                "another directory, or wait for that one to end");

  // SIGKILL leaves no chance to clean up: the kernel still drops the lock.
  ::kill(holder, SIGKILL);
  ::waitpid(holder, nullptr, 0);
  llvm::Expected<DirectoryLock> after = DirectoryLock::Acquire(dir, "accelrun pid 99 on node7");
  ASSERT_TRUE(static_cast<bool>(after)) << llvm::toString(after.takeError());
  std::ifstream file(dir + "/" + kLockFileName);
  std::string line;
  std::getline(file, line);
  EXPECT_EQ(line, "accelrun pid 99 on node7");  // the new holder, not a mix of both
}

TEST(DirectoryLock, TheLockEndsWithItsOwnerInThisProcess) {
  std::string dir = accel::testing::ScratchDir("lock_scope").string();
  {
    llvm::Expected<DirectoryLock> first = DirectoryLock::Acquire(dir, "first");
    ASSERT_TRUE(static_cast<bool>(first)) << llvm::toString(first.takeError());
    DirectoryLock moved = std::move(*first);  // moving keeps the claim
    EXPECT_EQ(HoldInAnotherProcess(dir, "other"), -1);
  }
  llvm::Expected<DirectoryLock> again = DirectoryLock::Acquire(dir, "again");
  EXPECT_TRUE(static_cast<bool>(again)) << llvm::toString(again.takeError());
}

}  // namespace
}  // namespace accel::rt::launch
