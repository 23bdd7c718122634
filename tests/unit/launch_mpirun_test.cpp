// The mpirun command line accelrun builds for a plan with `mpirun_config`, as accelerate launch
// builds it for each MPI flavour (runtime/launch/mpirun.h).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "runtime/launch/mpirun.h"

namespace accel::rt::launch {
namespace {

using Args = std::vector<std::string>;

TEST(Mpirun, TellsOpenMpiFromItsVersionBannerAndElseUsesHydraFlags) {
  EXPECT_EQ(MpiFlavorFromVersion("mpirun (Open MPI) 4.1.4\n\nReport bugs to http://www.open-mpi.org/"),
            MpiFlavor::kOpenMpi);
  // Open MPI's banner when started as `mpiexec` or `mpirun.openmpi`.
  EXPECT_EQ(MpiFlavorFromVersion("mpiexec (OpenRTE) 4.1.4\n"), MpiFlavor::kOpenMpi);
  EXPECT_EQ(MpiFlavorFromVersion("Intel(R) MPI Library for Linux* OS, Version 2021.10"), MpiFlavor::kHydra);
  EXPECT_EQ(MpiFlavorFromVersion("HYDRA build details:\n    Version: 4.0.2"), MpiFlavor::kHydra);
  EXPECT_EQ(MpiFlavorFromVersion(""), MpiFlavor::kHydra);
}

TEST(Mpirun, CommandCarriesHostfileProcessesPerMachineAndInAll) {
  Args task = {"/opt/accel/bin/accelrun", "plan.json", "--launcher", "mpi"};
  EXPECT_EQ(MpirunCommand("/usr/bin/mpirun", MpiFlavor::kOpenMpi, "/home/user/hostfile", 4, 16, task),
            (Args{"/usr/bin/mpirun", "--hostfile", "/home/user/hostfile", "--npernode", "4", "-n", "16",
                  "--bind-to", "socket", "/opt/accel/bin/accelrun", "plan.json", "--launcher", "mpi"}));
  EXPECT_EQ(MpirunCommand("/usr/bin/mpiexec", MpiFlavor::kHydra, "hosts", 2, 4, task),
            (Args{"/usr/bin/mpiexec", "-f", "hosts", "-ppn", "2", "-n", "4", "/opt/accel/bin/accelrun",
                  "plan.json", "--launcher", "mpi"}));
}

TEST(Mpirun, TaskRunsTheSameArgumentsPlacedByMpi) {
  EXPECT_EQ(MpirunTask("/bin/accelrun", {"plan.json", "--output-dir", "out"}),
            (Args{"/bin/accelrun", "plan.json", "--output-dir", "out", "--launcher", "mpi"}));
  // The launcher's own choice is replaced, in either spelling.
  EXPECT_EQ(MpirunTask("/bin/accelrun", {"--launcher", "auto", "plan.json", "--launcher=auto"}),
            (Args{"/bin/accelrun", "plan.json", "--launcher", "mpi"}));
}

}  // namespace
}  // namespace accel::rt::launch
