#ifndef ACCEL_RUNTIME_TOOLS_ENV_COMMAND_H_
#define ACCEL_RUNTIME_TOOLS_ENV_COMMAND_H_

#include <string>
#include <vector>

namespace accel::tools {

// `accelrun env [--format text|json]`: versions, compiler, OS, CPU, memory, BLAS, threads and
// devices, like `accelerate env`. LibTorch's facts come from asking `worker` (accelrun-worker).
// Returns the exit code (2 for bad arguments).
int RunEnvCommand(const std::vector<std::string>& args, const std::string& worker);

}  // namespace accel::tools

#endif  // ACCEL_RUNTIME_TOOLS_ENV_COMMAND_H_
