// This machine as `accelerate launch` would ask about it: the GPUs torch would count, the
// physical cores, the python on PATH, whether a port is taken, a free port, mpirun, and a new
// run id. Kept apart so that the launch's decisions (runtime/launch/accelerate) see only the
// answers, which tests supply themselves.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <random>

#include <fmt/format.h>

#include "llvm/Support/Program.h"
#include "runtime/launch/mpirun.h"
#include "runtime/launch/plan_env.h"
#include "runtime/launch/rendezvous_port.h"
#include "runtime/tools/script_command_internal.h"

namespace accel::tools {
namespace {

namespace fs = std::filesystem;
namespace launch = rt::launch;
namespace acc = rt::launch::accelerate;

int CudaDeviceCount(const launch::Environment& env) {
  int count = 0;
  std::error_code ec;
  for (auto it = fs::directory_iterator("/proc/driver/nvidia/gpus", ec);
       !ec && it != fs::directory_iterator(); it.increment(ec))
    ++count;
  auto visible = env.find("CUDA_VISIBLE_DEVICES");
  if (visible == env.end()) return count;
  if (visible->second.empty()) return 0;
  int listed = 1 + static_cast<int>(std::count(visible->second.begin(), visible->second.end(), ','));
  return std::min(count, listed);
}

// Accelerate's is_port_in_use: something accepts connections on localhost:port.
bool PortInUse(int port) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  address.sin_port = htons(static_cast<uint16_t>(port));
  bool in_use = ::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) == 0;
  ::close(fd);
  return in_use;
}

std::string FindOnPath(const std::vector<const char*>& names) {
  for (const char* name : names)
    if (llvm::ErrorOr<std::string> found = llvm::sys::findProgramByName(name)) return *found;
  return "";
}

llvm::Expected<acc::Mpirun> FindMpirun() {
  std::string path = FindOnPath({"mpirun", "mpiexec"});
  if (path.empty())
    return llvm::createStringError(
        llvm::inconvertibleErrorCode(),
        "mpirun or mpiexec were not found. Ensure that Intel MPI, Open MPI, or MVAPICH "
        "are installed.");
  return acc::Mpirun{path, launch::DetectMpiFlavor(path)};
}

// A random UUID (version 4), as torchrun names a standalone launch.
std::string NewRunId() {
  std::string hex = RandomHex(16);
  hex[12] = '4';
  hex[16] = "89ab"[std::stoi(hex.substr(16, 1), nullptr, 16) & 3];
  return fmt::format("{}-{}-{}-{}-{}", hex.substr(0, 8), hex.substr(8, 4), hex.substr(12, 4),
                     hex.substr(16, 4), hex.substr(20));
}

}  // namespace

std::string RandomHex(int bytes) {
  std::random_device random;
  std::string out;
  for (int i = 0; i < bytes; ++i) out += fmt::format("{:02x}", random() & 0xff);
  return out;
}

acc::Host ThisHost(const launch::Environment& env) {
  acc::Host host;
  host.env = env;
  host.cuda_devices = CudaDeviceCount(env);
  host.physical_cores = launch::PhysicalCoreCount();
  // Python's os.cpu_count(): the online logical CPUs, whatever the affinity mask.
  host.logical_cpus = static_cast<int>(std::max(1L, ::sysconf(_SC_NPROCESSORS_ONLN)));
  host.python = FindOnPath({"python3", "python"});
  std::error_code ec;
  host.cwd = fs::current_path(ec).string();
  host.port_in_use = PortInUse;
  host.free_port = launch::PickFreePort;
  host.new_run_id = NewRunId;
  host.find_mpirun = FindMpirun;
  return host;
}

}  // namespace accel::tools
