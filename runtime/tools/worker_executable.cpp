#include "runtime/tools/worker_executable.h"

#include <filesystem>

namespace accel::tools {

std::string WorkerExecutable(const char* argv0) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::path self = fs::canonical("/proc/self/exe", ec);
  if (ec) self = fs::absolute(argv0, ec);
  return (self.parent_path() / "accelrun-worker").string();
}

}  // namespace accel::tools
