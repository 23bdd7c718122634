// The launch id that tells two jobs at one rendezvous apart, and the port derived from it.
#include <gtest/gtest.h>

#include <set>

#include "runtime/launch/launch_id.h"
#include "runtime/launch/topology.h"

namespace accel::rt::launch {
namespace {

// What real `srun -n2` sets in a job step (among many others).
Environment SlurmStep(const std::string& job, const std::string& step) {
  return {{"SLURM_JOB_ID", job},        {"SLURM_STEP_ID", step},          {"SLURM_PROCID", "0"},
          {"SLURM_NTASKS", "2"},        {"SLURM_LOCALID", "0"},           {"SLURM_NODEID", "0"},
          {"SLURM_NNODES", "1"},        {"SLURM_STEP_NODELIST", "node1"}, {"SLURM_STEP_TASKS_PER_NODE", "2"},
          {"SLURM_TASKS_PER_NODE", "2"}};
}

TEST(LaunchId, EachSchedulerNamesItsOwnLaunch) {
  std::optional<LaunchId> slurm = SchedulerLaunchId(SlurmStep("4711", "0"));
  ASSERT_TRUE(slurm.has_value());
  EXPECT_EQ(slurm->id, "slurm-4711.0");
  // Another step of the same job is another launch.
  EXPECT_EQ(SchedulerLaunchId(SlurmStep("4711", "1"))->id, "slurm-4711.1");
  // A batch script (no step) is not one launch of tasks.
  EXPECT_FALSE(SchedulerLaunchId({{"SLURM_JOB_ID", "4711"}}).has_value());
  // mpirun inside a Slurm step: mpirun's job id, as OpenMPI 4.1 exports it, wins.
  Environment mpi_in_slurm = SlurmStep("4711", "0");
  mpi_in_slurm["OMPI_MCA_ess_base_jobid"] = "1914961921";
  mpi_in_slurm["PMIX_NAMESPACE"] = "1914961921";
  EXPECT_EQ(SchedulerLaunchId(mpi_in_slurm)->id, "openmpi-1914961921");
  EXPECT_EQ(SchedulerLaunchId({{"PMIX_NAMESPACE", "prterun-n1-77@1"}})->id, "pmix-prterun-n1-77@1");
  // MPICH's hydra sets only PMI_RANK/PMI_SIZE/PMI_FD: nothing identifies the launch.
  EXPECT_FALSE(SchedulerLaunchId({{"PMI_RANK", "0"}, {"PMI_SIZE", "2"}, {"PMI_FD", "6"}}).has_value());
}

TEST(LaunchId, TheFlagWinsThenTheSchedulerThenANewOneForOneLauncher) {
  EXPECT_EQ(ResolveLaunchId(std::string("nightly-7"), SlurmStep("4711", "0"), false).id, "nightly-7");
  EXPECT_EQ(ResolveLaunchId(std::nullopt, SlurmStep("4711", "0"), false).id, "slurm-4711.0");
  LaunchId first = ResolveLaunchId(std::nullopt, {}, /*one_launcher=*/true);
  LaunchId second = ResolveLaunchId(std::nullopt, {}, /*one_launcher=*/true);
  EXPECT_TRUE(first.generated);
  EXPECT_EQ(first.id.rfind("local-", 0), 0u) << first.id;
  EXPECT_NE(first.id, second.id);  // two local jobs never share one
  // Launchers placed by hand on several machines cannot agree on a random id.
  LaunchId by_hand = ResolveLaunchId(std::nullopt, {}, /*one_launcher=*/false);
  EXPECT_TRUE(by_hand.id.empty());
  EXPECT_FALSE(by_hand.generated);
}

TEST(LaunchId, DerivedPortsAreStableBelowTheEphemeralRangeAndSpreadOut) {
  EXPECT_EQ(DerivedPort("slurm-4711.0"), DerivedPort("slurm-4711.0"));
  std::set<int> ports;
  for (int job = 1000; job < 1100; ++job) {
    int port = DerivedPort("slurm-" + std::to_string(job) + ".0");
    EXPECT_GE(port, 10000);
    EXPECT_LT(port, 30000);
    ports.insert(port);
  }
  // Consecutive job ids, as one scheduler hands out, must not pile onto a few ports.
  EXPECT_GE(ports.size(), 95u);
}

PlanPlacement DefaultPort() {
  PlanPlacement plan{1, 2, "127.0.0.1", 29500};
  plan.main_process_port_set = false;
  return plan;
}

Placement Resolve(const PlanPlacement& plan, const PlacementFlags& flags, const Environment& env) {
  llvm::Expected<Placement> placement = ResolvePlacement(plan, flags, env, [] { return 41000; });
  if (!placement) {
    ADD_FAILURE() << llvm::toString(placement.takeError());
    return {};
  }
  return *placement;
}

// Two srun jobs on one node used to meet at the plan's default 29500.
TEST(LaunchId, SchedulerJobsWithTheDefaultPortEachDeriveTheirOwn) {
  Placement a = Resolve(DefaultPort(), {}, SlurmStep("4711", "0"));
  Placement b = Resolve(DefaultPort(), {}, SlurmStep("4712", "0"));
  EXPECT_EQ(a.topology.master_port, DerivedPort("slurm-4711.0"));
  EXPECT_NE(a.topology.master_port, b.topology.master_port);
  EXPECT_NE(a.rendezvous_from.find("port from the launch id"), std::string::npos) << a.rendezvous_from;

  // A port the spec chose, MASTER_PORT and --master-port still win.
  PlanPlacement chosen = DefaultPort();
  chosen.main_process_port_set = true;
  EXPECT_EQ(Resolve(chosen, {}, SlurmStep("4711", "0")).topology.master_port, 29500);
  Environment with_port = SlurmStep("4711", "0");
  with_port["MASTER_PORT"] = "23456";
  EXPECT_EQ(Resolve(DefaultPort(), {}, with_port).topology.master_port, 23456);
  PlacementFlags flag;
  flag.master_port = 24680;
  EXPECT_EQ(Resolve(DefaultPort(), flag, SlurmStep("4711", "0")).topology.master_port, 24680);
  // Without a scheduler, one machine picks a free port as before.
  EXPECT_EQ(Resolve(DefaultPort(), {}, {}).topology.master_port, 41000);
}

}  // namespace
}  // namespace accel::rt::launch
