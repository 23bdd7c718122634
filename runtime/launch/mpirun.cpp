#include "runtime/launch/mpirun.h"

#include <fstream>
#include <sstream>

#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FileUtilities.h"
#include "llvm/Support/Program.h"

namespace accel::rt::launch {

MpiFlavor MpiFlavorFromVersion(std::string_view version) {
  // Open MPI's launcher says "Open MPI" when started as `mpirun`, and "OpenRTE" under its other
  // names (`mpiexec`, `mpirun.openmpi`), where accelerate launch would take it for Hydra.
  bool open_mpi =
      version.find("Open MPI") != std::string_view::npos || version.find("OpenRTE") != std::string_view::npos;
  return open_mpi ? MpiFlavor::kOpenMpi : MpiFlavor::kHydra;
}

MpiFlavor DetectMpiFlavor(const std::string& path) {
  llvm::SmallString<128> answer;
  std::string version;
  if (!llvm::sys::fs::createTemporaryFile("accelrun-mpirun", "txt", answer)) {
    llvm::FileRemover remove(answer);
    llvm::StringRef out = answer;
    llvm::Optional<llvm::StringRef> redirects[] = {llvm::StringRef(""), out, out};
    llvm::sys::ExecuteAndWait(path, {path, "--version"}, llvm::None, redirects, /*SecondsToWait=*/30);
    std::ifstream in(answer.c_str());
    std::stringstream text;
    text << in.rdbuf();
    version = text.str();
  }
  return MpiFlavorFromVersion(version);
}

std::string_view MpiFlavorName(MpiFlavor flavor) {
  return flavor == MpiFlavor::kOpenMpi ? "Open MPI" : "Intel MPI/MPICH";
}

std::vector<std::string> MpirunCommand(const std::string& mpirun, MpiFlavor flavor,
                                       const std::string& hostfile, int processes_per_machine,
                                       int num_processes, const std::vector<std::string>& task) {
  bool open_mpi = flavor == MpiFlavor::kOpenMpi;
  std::vector<std::string> argv = {mpirun,
                                   open_mpi ? "--hostfile" : "-f",
                                   hostfile,
                                   open_mpi ? "--npernode" : "-ppn",
                                   std::to_string(processes_per_machine),
                                   "-n",
                                   std::to_string(num_processes)};
  // accelerate launch binds Open MPI's tasks to sockets; Hydra's flags have no such switch.
  if (open_mpi) argv.insert(argv.end(), {"--bind-to", "socket"});
  argv.insert(argv.end(), task.begin(), task.end());
  return argv;
}

std::vector<std::string> MpirunTask(const std::string& accelrun, const std::vector<std::string>& args) {
  std::vector<std::string> task = {accelrun};
  for (size_t i = 0; i < args.size(); ++i) {
    // The launcher's own `--launcher` choice is replaced: each task is placed by MPI.
    if (args[i] == "--launcher") {
      ++i;
      continue;
    }
    if (args[i].rfind("--launcher=", 0) == 0) continue;
    task.push_back(args[i]);
  }
  task.insert(task.end(), {"--launcher", "mpi"});
  return task;
}

}  // namespace accel::rt::launch
