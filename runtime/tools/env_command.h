#ifndef ACCEL_RUNTIME_TOOLS_ENV_COMMAND_H_
#define ACCEL_RUNTIME_TOOLS_ENV_COMMAND_H_

#include <string>
#include <utility>
#include <vector>

namespace accel::tools {

// What LibTorch in this process reports (torch_facts.cpp, the one file of accelrun's env
// command that includes ATen).
struct TorchFacts {
  std::string version;       // from TORCH_VERSION_* at build time
  int intra_op_threads = 0;  // at::get_num_threads()
  bool cuda_compiled = false;
  int cuda_devices = 0;
  std::string nccl;  // `yes`, or why not / why unknown
  bool gloo_compiled = false;
};
TorchFacts CollectTorchFacts();

// `accelrun env [--format text|json]`: versions, compiler, OS, CPU, memory, BLAS, threads and
// devices, like `accelerate env`. Returns the exit code (2 for bad arguments).
int RunEnvCommand(const std::vector<std::string>& args);

}  // namespace accel::tools

#endif  // ACCEL_RUNTIME_TOOLS_ENV_COMMAND_H_
