#include "runtime/train/save_faults.h"

#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <set>
#include <stdexcept>
#include <string_view>
#include <thread>

#include "runtime/support/progress.h"

namespace accel::rt::train {

void KillIfAsked(const char* point, int rank) {
  static int saves = 0;
  const char* value = std::getenv("ACCEL_TEST_SAVE_KILL");
  if (value == nullptr || *value == 0) return;
  // Each save passes `slices` first, on every rank.
  if (std::string_view(point) == "slices") ++saves;
  char name[16] = {};
  int kill_rank = -1;
  int kill_save = -1;
  if (std::sscanf(value, "%15[a-z]:%d:%d", name, &kill_rank, &kill_save) != 3 ||
      std::set<std::string_view>{"slices", "written", "finish", "finished"}.count(name) == 0) {
    throw std::invalid_argument(
        "ACCEL_TEST_SAVE_KILL must be POINT:RANK:SAVE with POINT slices, written, finish or finished (a test "
        "hook)");
  }
  if (std::string_view(name) == point && kill_rank == rank && kill_save == saves) std::raise(SIGKILL);
}

void DelayIfAsked(int rank) {
  const char* value = std::getenv("ACCEL_TEST_SAVE_DELAY");
  if (value == nullptr || *value == 0) return;
  char mode[16] = {};
  int delay_rank = -1;
  double seconds = -1;
  if (std::sscanf(value, "%d:%lf:%15[a-z]", &delay_rank, &seconds, mode) != 3 || seconds < 0 ||
      seconds > 3600 || (std::string_view(mode) != "working" && std::string_view(mode) != "silent")) {
    throw std::invalid_argument(
        "ACCEL_TEST_SAVE_DELAY must be RANK:SECONDS:MODE with SECONDS up to 3600 and MODE working or silent (a "
        "test hook)");
  }
  if (delay_rank != rank) return;
  const bool working = std::string_view(mode) == "working";
  const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (std::chrono::steady_clock::now() < until) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    if (working) progress::StillWorking();
  }
}

}  // namespace accel::rt::train
