#ifndef ACCEL_TESTS_UNIT_SCRATCH_DIR_H_
#define ACCEL_TESTS_UNIT_SCRATCH_DIR_H_

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <string>

// Scratch space for tests that write files: one directory per test process under the system
// temp dir, removed after the binary's last test.
namespace accel::testing {

inline std::filesystem::path ScratchDir() {
  std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("accel_test_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  return dir;
}

// A fresh, empty subdirectory `name` of the scratch directory.
inline std::filesystem::path ScratchDir(const std::string& name) {
  std::filesystem::path dir = ScratchDir() / name;
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

namespace internal {
class RemoveScratchDir : public ::testing::Environment {
 public:
  void TearDown() override { std::filesystem::remove_all(ScratchDir()); }
};
// Registered once per binary, however many test files include this header.
inline const ::testing::Environment* const kRemoveScratchDir =
    ::testing::AddGlobalTestEnvironment(new RemoveScratchDir);
}  // namespace internal

}  // namespace accel::testing

#endif  // ACCEL_TESTS_UNIT_SCRATCH_DIR_H_
