#ifndef ACCEL_RUNTIME_TOOLS_WORKER_EXECUTABLE_H_
#define ACCEL_RUNTIME_TOOLS_WORKER_EXECUTABLE_H_

#include <string>

namespace accel::tools {

// accelrun-worker beside this accelrun (the build's bin/ or the install's): the executable the
// launcher starts each rank with. `argv0` is the fallback where /proc/self/exe cannot be read.
std::string WorkerExecutable(const char* argv0);

}  // namespace accel::tools

#endif  // ACCEL_RUNTIME_TOOLS_WORKER_EXECUTABLE_H_
