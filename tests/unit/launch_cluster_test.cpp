// Where workers run: Slurm node lists, scheduler detection, flags against the plan, and the
// environment the plan determines. Every input is a map or a struct; nothing reads getenv.
#include <gtest/gtest.h>

#include "runtime/launch/cluster.h"
#include "runtime/launch/plan_env.h"
#include "runtime/launch/topology.h"

namespace accel::rt::launch {
namespace {

using Hosts = std::vector<std::string>;

Hosts Expand(std::string_view list) {
  llvm::Expected<Hosts> hosts = ExpandNodeList(list);
  if (!hosts) {
    ADD_FAILURE() << llvm::toString(hosts.takeError());
    return {};
  }
  return *hosts;
}

std::string ExpandError(std::string_view list) {
  llvm::Expected<Hosts> hosts = ExpandNodeList(list);
  if (hosts) return "expanded to " + std::to_string(hosts->size()) + " hosts";
  return llvm::toString(hosts.takeError());
}

TEST(NodeList, PlainNames) { EXPECT_EQ(Expand("a,b"), (Hosts{"a", "b"})); }

TEST(NodeList, Range) { EXPECT_EQ(Expand("n[1-3]"), (Hosts{"n1", "n2", "n3"})); }

TEST(NodeList, PaddedRangeAndSingleValue) {
  EXPECT_EQ(Expand("n[01-03,7]"), (Hosts{"n01", "n02", "n03", "n7"}));
  EXPECT_EQ(Expand("node[01-03,07],gpu5"), (Hosts{"node01", "node02", "node03", "node07", "gpu5"}));
  EXPECT_EQ(Expand("n[08-10]"), (Hosts{"n08", "n09", "n10"}));
}

TEST(NodeList, DashInTheNameIsNotARange) {
  EXPECT_EQ(Expand("rack1-n[2-4]"), (Hosts{"rack1-n2", "rack1-n3", "rack1-n4"}));
}

TEST(NodeList, SeveralBracketsMultiply) {
  EXPECT_EQ(Expand("r[1-2]-n[1-2]"), (Hosts{"r1-n1", "r1-n2", "r2-n1", "r2-n2"}));
}

TEST(NodeList, SuffixAfterBracket) { EXPECT_EQ(Expand("n[1-2].ib"), (Hosts{"n1.ib", "n2.ib"})); }

TEST(NodeList, BadInputSaysWhereAndWhy) {
  EXPECT_EQ(ExpandError(""), "the Slurm node list is empty");
  EXPECT_EQ(ExpandError("n[1-3"), "bad Slurm node list `n[1-3` at column 2: `[` without `]`");
  EXPECT_EQ(ExpandError("n1-3]"), "bad Slurm node list `n1-3]` at column 5: `]` without `[`");
  EXPECT_EQ(ExpandError("n[3-1]"), "bad Slurm node list `n[3-1]` at column 3: range `3-1` runs backwards");
  EXPECT_EQ(ExpandError("n[a-b]"),
            "bad Slurm node list `n[a-b]` at column 3: `a-b` is not a number or range a-b");
  EXPECT_EQ(ExpandError("n[]"), "bad Slurm node list `n[]` at column 3: `` is not a number or range a-b");
  EXPECT_EQ(ExpandError("a,,b"), "bad Slurm node list `a,,b` at column 3: empty host name");
  EXPECT_EQ(ExpandError("a,"), "bad Slurm node list `a,` at column 2: empty host name after `,`");
  EXPECT_EQ(ExpandError("n[1-3-5]"),
            "bad Slurm node list `n[1-3-5]` at column 3: `1-3-5` is not a number or range a-b");
  EXPECT_NE(ExpandError("n[0-999999]").find("more than 100000 hosts"), std::string::npos);
}

Environment SlurmStep() {
  return {{"SLURM_JOB_ID", "77"},
          {"SLURM_STEP_ID", "0"},
          {"SLURM_PROCID", "3"},
          {"SLURM_NTASKS", "8"},
          {"SLURM_LOCALID", "1"},
          {"SLURM_NODEID", "1"},
          {"SLURM_NNODES", "2"},
          {"SLURM_TASKS_PER_NODE", "4(x2)"},
          {"SLURM_JOB_NODELIST", "gpu[07-08]"}};
}

ClusterTask Detect(const Environment& env, LauncherKind kind = LauncherKind::kAuto) {
  llvm::Expected<std::optional<ClusterTask>> task = DetectCluster(env, kind);
  if (!task) {
    ADD_FAILURE() << llvm::toString(task.takeError());
    return {};
  }
  if (!*task) {
    ADD_FAILURE() << "no scheduler detected";
    return {};
  }
  return **task;
}

std::string DetectError(const Environment& env, LauncherKind kind = LauncherKind::kAuto) {
  llvm::Expected<std::optional<ClusterTask>> task = DetectCluster(env, kind);
  if (task) return *task ? "detected " + (*task)->scheduler : "nothing detected";
  return llvm::toString(task.takeError());
}

TEST(ClusterDetection, SlurmStepGivesTheTaskAndTheFirstNode) {
  ClusterTask task = Detect(SlurmStep());
  EXPECT_EQ(task.scheduler, "Slurm");
  EXPECT_EQ(task.rank, 3);
  EXPECT_EQ(task.world_size, 8);
  EXPECT_EQ(task.local_rank, 1);
  EXPECT_EQ(task.local_world_size, 4);
  EXPECT_EQ(task.node_rank, 1);
  EXPECT_EQ(task.nnodes, 2);
  EXPECT_EQ(task.master_addr, "gpu07");
  EXPECT_EQ(task.master_addr_from, "the first node of SLURM_JOB_NODELIST");
}

TEST(ClusterDetection, SlurmStepNodeListWinsOverTheJobs) {
  Environment env = SlurmStep();
  env["SLURM_STEP_NODELIST"] = "cpu[3-4]";
  EXPECT_EQ(Detect(env).master_addr, "cpu3");
}

TEST(ClusterDetection, SlurmUnevenTasksPerNode) {
  Environment env = SlurmStep();
  env["SLURM_NTASKS"] = "7";
  env["SLURM_PROCID"] = "6";
  env["SLURM_LOCALID"] = "0";
  env["SLURM_NNODES"] = "3";
  env["SLURM_NODEID"] = "2";
  env["SLURM_TASKS_PER_NODE"] = "3(x2),1";
  EXPECT_EQ(Detect(env).local_world_size, 1);
}

// What Slurm 22.05's srun sets in the step of `salloc -N1 --ntasks-per-node=2 srun -n1 ...`:
// the allocation's SLURM_NTASKS_PER_NODE is inherited, the step's own counts say one task.
Environment RealSrunOneTaskInTwoPerNodeAllocation() {
  return {{"SLURM_JOB_ID", "2"},         {"SLURM_JOBID", "2"},
          {"SLURM_STEP_ID", "0"},        {"SLURM_STEPID", "0"},
          {"SLURM_PROCID", "0"},         {"SLURM_LOCALID", "0"},
          {"SLURM_NODEID", "0"},         {"SLURM_NNODES", "1"},
          {"SLURM_JOB_NUM_NODES", "1"},  {"SLURM_STEP_NUM_NODES", "1"},
          {"SLURM_NTASKS", "1"},         {"SLURM_NPROCS", "1"},
          {"SLURM_STEP_NUM_TASKS", "1"}, {"SLURM_NTASKS_PER_NODE", "2"},
          {"SLURM_TASKS_PER_NODE", "1"}, {"SLURM_STEP_TASKS_PER_NODE", "1"},
          {"SLURM_CPUS_ON_NODE", "2"},   {"SLURM_JOB_CPUS_PER_NODE", "2"},
          {"SLURM_JOB_NODELIST", "vm"},  {"SLURM_STEP_NODELIST", "vm"},
          {"SLURM_NODELIST", "vm"},      {"SLURMD_NODENAME", "vm"}};
}

TEST(ClusterDetection, RealSrunStepTasksPerNodeWinOverTheAllocations) {
  ClusterTask task = Detect(RealSrunOneTaskInTwoPerNodeAllocation());
  EXPECT_EQ(task.world_size, 1);
  EXPECT_EQ(task.local_world_size, 1);
  EXPECT_EQ(task.local_rank, 0);
  EXPECT_EQ(task.master_addr_from, "the first node of SLURM_STEP_NODELIST");
}

TEST(ClusterDetection, RealSrunTwoTasksOnOneNode) {
  // `srun -N1 -n2`, task 1: what Slurm 22.05 sets (no SLURM_NTASKS_PER_NODE without the option).
  ClusterTask task = Detect({{"SLURM_JOB_ID", "1"},
                             {"SLURM_STEP_ID", "0"},
                             {"SLURM_PROCID", "1"},
                             {"SLURM_LOCALID", "1"},
                             {"SLURM_NODEID", "0"},
                             {"SLURM_NNODES", "1"},
                             {"SLURM_STEP_NUM_NODES", "1"},
                             {"SLURM_NTASKS", "2"},
                             {"SLURM_STEP_NUM_TASKS", "2"},
                             {"SLURM_TASKS_PER_NODE", "2"},
                             {"SLURM_STEP_TASKS_PER_NODE", "2"},
                             {"SLURM_STEP_NODELIST", "vm"}});
  EXPECT_EQ(task.rank, 1);
  EXPECT_EQ(task.world_size, 2);
  EXPECT_EQ(task.local_rank, 1);
  EXPECT_EQ(task.local_world_size, 2);
}

TEST(ClusterDetection, StepCountsWinOverEveryAllocationCount) {
  // A step of 3 tasks on nodes of 2 and 1, inside an allocation of 4 tasks per node on 2 nodes;
  // the allocation's counts are what a step would inherit if srun did not set its own.
  Environment env = RealSrunOneTaskInTwoPerNodeAllocation();
  env["SLURM_NTASKS"] = "8";
  env["SLURM_NPROCS"] = "8";
  env["SLURM_NTASKS_PER_NODE"] = "4";
  env["SLURM_TASKS_PER_NODE"] = "4(x2)";
  env["SLURM_NNODES"] = "2";
  env["SLURM_STEP_NUM_TASKS"] = "3";
  env["SLURM_STEP_NUM_NODES"] = "2";
  env["SLURM_STEP_TASKS_PER_NODE"] = "2,1";
  env["SLURM_PROCID"] = "2";
  env["SLURM_NODEID"] = "1";
  ClusterTask task = Detect(env);
  EXPECT_EQ(task.world_size, 3);
  EXPECT_EQ(task.nnodes, 2);
  EXPECT_EQ(task.local_world_size, 1);
  env["SLURM_NODEID"] = "0";
  env["SLURM_PROCID"] = "1";
  env["SLURM_LOCALID"] = "1";
  EXPECT_EQ(Detect(env).local_world_size, 2);
  env["SLURM_STEP_TASKS_PER_NODE"] = "2(x3)";
  env["SLURM_STEP_NUM_NODES"] = "3";
  env["SLURM_STEP_NUM_TASKS"] = "6";
  EXPECT_EQ(Detect(env).local_world_size, 2);
  EXPECT_EQ(Detect(env).world_size, 6);
  EXPECT_EQ(Detect(env).nnodes, 3);
}

TEST(ClusterDetection, AllocationTasksPerNodeStillServeWithoutAStepCount) {
  // Older or hand-made environments: SLURM_NTASKS_PER_NODE when nothing per step says more.
  Environment env = SlurmStep();
  env.erase("SLURM_TASKS_PER_NODE");
  env["SLURM_NTASKS_PER_NODE"] = "4";
  EXPECT_EQ(Detect(env).local_world_size, 4);
}

TEST(ClusterDetection, BadStepTasksPerNodeIsNamed) {
  Environment env = RealSrunOneTaskInTwoPerNodeAllocation();
  env["SLURM_STEP_TASKS_PER_NODE"] = "two";
  EXPECT_EQ(DetectError(env),
            "cannot read Slurm's placement: SLURM_STEP_TASKS_PER_NODE=`two` does not give a task count "
            "for node 0");
}

TEST(ClusterDetection, BatchScriptWithoutStepIsNotATask) {
  Environment env = SlurmStep();
  env.erase("SLURM_STEP_ID");
  EXPECT_EQ(DetectError(env), "nothing detected");
  EXPECT_EQ(DetectError(env, LauncherKind::kSlurm), "detected Slurm");
}

TEST(ClusterDetection, LocalIgnoresTheScheduler) {
  EXPECT_EQ(DetectError(SlurmStep(), LauncherKind::kLocal), "nothing detected");
}

TEST(ClusterDetection, NothingInAPlainShell) {
  EXPECT_EQ(DetectError({{"HOME", "/root"}}), "nothing detected");
}

TEST(ClusterDetection, ForcedSchedulerMustBeThere) {
  EXPECT_EQ(DetectError({}, LauncherKind::kSlurm),
            "`--launcher slurm` but SLURM_PROCID is not set; start accelrun with srun");
  EXPECT_NE(DetectError({}, LauncherKind::kMpi).find("no MPI placement"), std::string::npos);
}

TEST(ClusterDetection, BadSlurmValuesAreNamed) {
  Environment env = SlurmStep();
  env["SLURM_NTASKS"] = "eight";
  EXPECT_EQ(DetectError(env),
            "cannot read Slurm's placement: SLURM_NTASKS=`eight` is not a non-negative integer");
  env = SlurmStep();
  env["SLURM_PROCID"] = "8";
  EXPECT_EQ(DetectError(env), "cannot read Slurm's placement: rank 8 is not below the world size 8");
  env = SlurmStep();
  env.erase("SLURM_LOCALID");
  EXPECT_EQ(DetectError(env), "cannot read Slurm's placement: SLURM_LOCALID is missing");
  env = SlurmStep();
  env["SLURM_JOB_NODELIST"] = "gpu[07-08";
  EXPECT_NE(DetectError(env).find("SLURM_JOB_NODELIST: bad Slurm node list"), std::string::npos);
}

TEST(ClusterDetection, OpenMpi) {
  ClusterTask task = Detect({{"OMPI_COMM_WORLD_RANK", "5"},
                             {"OMPI_COMM_WORLD_SIZE", "8"},
                             {"OMPI_COMM_WORLD_LOCAL_RANK", "1"},
                             {"OMPI_COMM_WORLD_LOCAL_SIZE", "4"}});
  EXPECT_EQ(task.scheduler, "OpenMPI");
  EXPECT_EQ(task.rank, 5);
  EXPECT_EQ(task.world_size, 8);
  EXPECT_EQ(task.local_rank, 1);
  EXPECT_EQ(task.local_world_size, 4);
  EXPECT_EQ(task.nnodes, 2);
  EXPECT_EQ(task.node_rank, 1);
  EXPECT_EQ(task.master_addr, "");
}

TEST(ClusterDetection, MpiWinsOverTheSlurmAllocationAroundIt) {
  Environment env = SlurmStep();
  env["OMPI_COMM_WORLD_RANK"] = "0";
  env["OMPI_COMM_WORLD_SIZE"] = "2";
  EXPECT_EQ(Detect(env).scheduler, "OpenMPI");
  EXPECT_EQ(Detect(env, LauncherKind::kSlurm).scheduler, "Slurm");
}

TEST(ClusterDetection, Mvapich2AndPmi) {
  ClusterTask mv2 = Detect({{"MV2_COMM_WORLD_RANK", "1"},
                            {"MV2_COMM_WORLD_SIZE", "2"},
                            {"MV2_COMM_WORLD_LOCAL_RANK", "1"},
                            {"MV2_COMM_WORLD_LOCAL_SIZE", "2"}},
                           LauncherKind::kMpi);
  EXPECT_EQ(mv2.scheduler, "MVAPICH2");
  EXPECT_EQ(mv2.local_rank, 1);
  ClusterTask pmi = Detect({{"PMI_RANK", "2"}, {"PMI_SIZE", "4"}});
  EXPECT_EQ(pmi.scheduler, "MPI (PMI)");
  EXPECT_EQ(pmi.rank, 2);
  // Without MPI_LOCALRANKID: one task per node.
  EXPECT_EQ(pmi.local_world_size, 1);
  EXPECT_EQ(pmi.nnodes, 4);
  EXPECT_EQ(pmi.node_rank, 2);
}

PlanPlacement TwoProcesses() { return {1, 2, "127.0.0.1", 29500}; }

Placement Resolve(const PlanPlacement& plan, const PlacementFlags& flags, const Environment& env = {}) {
  llvm::Expected<Placement> placement = ResolvePlacement(plan, flags, env, [] { return 41000; });
  if (!placement) {
    ADD_FAILURE() << llvm::toString(placement.takeError());
    return {};
  }
  return *placement;
}

std::string ResolveError(const PlanPlacement& plan, const PlacementFlags& flags,
                         const Environment& env = {}) {
  llvm::Expected<Placement> placement = ResolvePlacement(plan, flags, env, [] { return 41000; });
  if (placement) return "resolved";
  return llvm::toString(placement.takeError());
}

TEST(Placement, LocalFollowsThePlanWithAFreePort) {
  Placement placement = Resolve(TwoProcesses(), {});
  const Topology& topology = placement.topology;
  EXPECT_EQ(topology.world_size, 2);
  ASSERT_EQ(topology.slots.size(), 2u);
  EXPECT_EQ(topology.slots[1].rank, 1);
  EXPECT_EQ(topology.master_addr, "127.0.0.1");
  EXPECT_EQ(topology.master_port, 41000);
  EXPECT_EQ(placement.summary, "local launch: 2 processes on this machine (node 0 of 1), world size 2");
  EXPECT_EQ(placement.rendezvous_from, "address from the plan, port from a free port");
  EXPECT_TRUE(placement.notes.empty());
}

TEST(Placement, FlagsOverrideThePlanAndSaySo) {
  PlacementFlags flags;
  flags.nnodes = 2;
  flags.node_rank = 1;
  flags.nproc_per_node = 3;
  flags.master_addr = "10.0.0.1";
  Placement placement = Resolve(TwoProcesses(), flags);
  const Topology& topology = placement.topology;
  EXPECT_EQ(topology.world_size, 6);
  ASSERT_EQ(topology.slots.size(), 3u);
  EXPECT_EQ(topology.slots[0].rank, 3);
  EXPECT_EQ(topology.slots[2].local_rank, 2);
  EXPECT_EQ(topology.master_port, 29500);  // several machines must agree: the plan's port
  EXPECT_EQ(placement.notes,
            (std::vector<std::string>{
                "--nnodes 2 overrides the plan's 1", "--nproc-per-node 3 overrides the plan's 2 per machine",
                "running 6 processes in all instead of the plan's 2; the batch size per process "
                "stays as planned"}));
}

TEST(Placement, LocalErrors) {
  PlacementFlags flags;
  flags.node_rank = 1;
  EXPECT_EQ(ResolveError(TwoProcesses(), flags),
            "`--node-rank 1` is out of range: the plan runs on 1 machine; pass --nnodes to change it");
  flags.nnodes = 2;
  flags.master_port = 0;
  flags.master_addr = "10.0.0.1";
  EXPECT_EQ(ResolveError(TwoProcesses(), flags),
            "`--master-port 0` works on one machine only: every machine must agree");
}

TEST(Placement, SchedulerWinsOverThePlanAndSaysSo) {
  Placement placement = Resolve(TwoProcesses(), {}, SlurmStep());
  const Topology& topology = placement.topology;
  EXPECT_EQ(topology.launched_by, "Slurm");
  EXPECT_EQ(topology.world_size, 8);
  ASSERT_EQ(topology.slots.size(), 1u);
  EXPECT_EQ(topology.slots[0].rank, 3);
  EXPECT_EQ(topology.slots[0].local_rank, 1);
  EXPECT_EQ(topology.master_addr, "gpu07");
  EXPECT_EQ(topology.master_port, 29500);
  EXPECT_EQ(placement.summary, "launched by Slurm: rank 3 of 8 (local rank 1 of 4, node 1 of 2)");
  EXPECT_EQ(placement.notes,
            (std::vector<std::string>{"Slurm started 8 tasks; the plan asks for 2 processes: Slurm wins"}));
}

TEST(Placement, RendezvousAddressOrderUnderAScheduler) {
  Environment env = SlurmStep();
  env["MASTER_ADDR"] = "head";
  env["MASTER_PORT"] = "1234";
  Placement from_env = Resolve(TwoProcesses(), {}, env);
  EXPECT_EQ(from_env.topology.master_addr, "head");
  EXPECT_EQ(from_env.topology.master_port, 1234);
  PlacementFlags flags;
  flags.master_addr = "cli";
  flags.master_port = 999;
  Placement from_flags = Resolve(TwoProcesses(), flags, env);
  EXPECT_EQ(from_flags.topology.master_addr, "cli");
  EXPECT_EQ(from_flags.topology.master_port, 999);
  EXPECT_EQ(from_flags.rendezvous_from, "address from --master-addr, port from --master-port");
}

TEST(Placement, SchedulerErrors) {
  PlacementFlags flags;
  flags.nproc_per_node = 4;
  EXPECT_EQ(ResolveError(TwoProcesses(), flags, SlurmStep()),
            "`--nproc-per-node` conflicts with Slurm's placement of this task; pass `--launcher local` to "
            "ignore Slurm");
  flags = {};
  flags.master_port = 0;
  EXPECT_EQ(ResolveError(TwoProcesses(), flags, SlurmStep()),
            "`--master-port 0` cannot work under Slurm: every task would pick its own port");
  Environment mpi = {{"OMPI_COMM_WORLD_RANK", "0"},
                     {"OMPI_COMM_WORLD_SIZE", "4"},
                     {"OMPI_COMM_WORLD_LOCAL_RANK", "0"},
                     {"OMPI_COMM_WORLD_LOCAL_SIZE", "2"}};
  EXPECT_EQ(ResolveError(TwoProcesses(), {}, mpi),
            "OpenMPI spans 2 nodes and names no rendezvous host; set MASTER_ADDR or pass --master-addr");
  mpi["MASTER_ADDR"] = "n1";
  EXPECT_EQ(Resolve(TwoProcesses(), {}, mpi).topology.master_addr, "n1");
  Environment bad_port = SlurmStep();
  bad_port["MASTER_PORT"] = "http";
  EXPECT_EQ(ResolveError(TwoProcesses(), {}, bad_port), "MASTER_PORT=`http` is not a port number (1-65535)");
}

TEST(Placement, OneNodeMpiMeetsOnLoopback) {
  Environment mpi = {{"OMPI_COMM_WORLD_RANK", "1"},
                     {"OMPI_COMM_WORLD_SIZE", "2"},
                     {"OMPI_COMM_WORLD_LOCAL_RANK", "1"},
                     {"OMPI_COMM_WORLD_LOCAL_SIZE", "2"}};
  Placement placement = Resolve(TwoProcesses(), {}, mpi);
  EXPECT_EQ(placement.topology.master_addr, "127.0.0.1");
  EXPECT_EQ(placement.summary, "launched by OpenMPI: rank 1 of 2 (local rank 1 of 2, node 0 of 1)");
  EXPECT_TRUE(placement.notes.empty());
}

TEST(Placement, OnlyTheLauncherOfRankZeroSpeaksUnmarked) {
  Environment env = SlurmStep();
  EXPECT_EQ(LauncherPrefix(Resolve(TwoProcesses(), {}, env).topology), "[rank 3] ");
  env["SLURM_PROCID"] = "0";
  env["SLURM_LOCALID"] = "0";
  env["SLURM_NODEID"] = "0";
  EXPECT_EQ(LauncherPrefix(Resolve(TwoProcesses(), {}, env).topology), "");
  EXPECT_EQ(LauncherPrefix(Resolve(TwoProcesses(), {}).topology), "");
  PlacementFlags second_machine;
  second_machine.nnodes = 2;
  second_machine.node_rank = 1;
  second_machine.master_addr = "10.0.0.1";
  EXPECT_EQ(LauncherPrefix(Resolve(TwoProcesses(), second_machine).topology), "[node 1] ");
  second_machine.nproc_per_node = 1;
  EXPECT_EQ(LauncherPrefix(Resolve(TwoProcesses(), second_machine).topology), "[rank 1] ");
}

TEST(RankEnvironment, TorchrunAndAccelNames) {
  Topology topology;
  topology.world_size = 8;
  topology.local_world_size = 4;
  topology.master_addr = "gpu07";
  topology.master_port = 29500;
  std::map<std::string, std::string> env = RankEnvironment(topology, {5, 1});
  EXPECT_EQ(env, (std::map<std::string, std::string>{{"ACCEL_LOCAL_RANK", "1"},
                                                     {"ACCEL_MASTER_ADDR", "gpu07"},
                                                     {"ACCEL_MASTER_PORT", "29500"},
                                                     {"ACCEL_RANK", "5"},
                                                     {"ACCEL_WORLD_SIZE", "8"},
                                                     {"LOCAL_RANK", "1"},
                                                     {"LOCAL_WORLD_SIZE", "4"},
                                                     {"MASTER_ADDR", "gpu07"},
                                                     {"MASTER_PORT", "29500"},
                                                     {"RANK", "5"},
                                                     {"WORLD_SIZE", "8"}}));
}

plan::Plan PlanWith(llvm::json::Object config, plan::MixedPrecision precision,
                    plan::Backend backend = plan::Backend::gloo) {
  plan::Plan plan;
  plan.config = std::move(config);
  plan::InitProcessGroup init;
  init.backend = backend;
  plan::TrainLoop loop;
  loop.mixed_precision = precision;
  plan.steps = {init, loop};
  return plan;
}

llvm::json::Object Leaf(llvm::json::Value value) {
  return llvm::json::Object{{"value", std::move(value)}, {"from", "test"}};
}

TEST(PlanEnvironment, DefaultsLikeAccelerate) {
  std::map<std::string, std::string> env = AccelerateEnvironment(PlanWith({}, plan::MixedPrecision::no));
  EXPECT_EQ(env, (std::map<std::string, std::string>{{"ACCELERATE_MIXED_PRECISION", "no"},
                                                     {"ACCELERATE_USE_CPU", "False"}}));
}

TEST(PlanEnvironment, FlagsFromTheConfiguration) {
  llvm::json::Object config{
      {"compute", llvm::json::Object{
                      {"use_cpu", Leaf(true)}, {"debug", Leaf(true)}, {"enable_cpu_affinity", Leaf(true)}}}};
  std::map<std::string, std::string> env =
      AccelerateEnvironment(PlanWith(std::move(config), plan::MixedPrecision::bf16));
  EXPECT_EQ(env, (std::map<std::string, std::string>{{"ACCELERATE_CPU_AFFINITY", "1"},
                                                     {"ACCELERATE_DEBUG_MODE", "true"},
                                                     {"ACCELERATE_MIXED_PRECISION", "bf16"},
                                                     {"ACCELERATE_USE_CPU", "True"}}));
  llvm::json::Object accelerator_cpu{{"accelerator", llvm::json::Object{{"cpu", Leaf(true)}}}};
  EXPECT_EQ(AccelerateEnvironment(PlanWith(std::move(accelerator_cpu), plan::MixedPrecision::no))
                .at("ACCELERATE_USE_CPU"),
            "True");
}

TEST(PlanEnvironment, CpuRun) {
  EXPECT_TRUE(IsCpuRun(PlanWith({}, plan::MixedPrecision::no, plan::Backend::gloo)));
  EXPECT_FALSE(IsCpuRun(PlanWith({}, plan::MixedPrecision::no, plan::Backend::nccl)));
}

std::string Threads(const ThreadChoice& choice) {
  return choice.value + " from " + choice.from + (choice.set ? "" : " (not set)");
}

TEST(PlanEnvironment, ThreadsFollowLch013AndSaySo) {
  EXPECT_EQ(Threads(ChooseThreads(3, std::string("8"), 4, true, 16, 2)),
            "3 from --num-cpu-threads-per-process");
  EXPECT_EQ(Threads(ChooseThreads(std::nullopt, std::string("8"), 4, true, 16, 2)),
            "8 from the inherited OMP_NUM_THREADS (not set)");
  EXPECT_EQ(Threads(ChooseThreads(std::nullopt, std::nullopt, 0, true, 16, 2)),
            "8 from 16 physical cores for 2 local workers");
  EXPECT_EQ(Threads(ChooseThreads(std::nullopt, std::nullopt, 0, true, 2, 4)),
            "1 from 2 physical cores for 4 local workers");  // never below 1
  EXPECT_EQ(Threads(ChooseThreads(std::nullopt, std::nullopt, 0, false, 16, 2)), "1 from not a CPU run");
}

TEST(PlanEnvironment, SlurmCpusPerTaskSetTheThreadsWhenNothingExplicitDoes) {
  EXPECT_EQ(Threads(ChooseThreads(std::nullopt, std::nullopt, 3, true, 16, 1)), "3 from SLURM_CPUS_PER_TASK");
  // The reservation holds on GPU runs too: the worker's CPU threads are what Slurm gave it.
  EXPECT_EQ(Threads(ChooseThreads(std::nullopt, std::nullopt, 3, false, 16, 1)),
            "3 from SLURM_CPUS_PER_TASK");
}

TEST(ClusterDetection, SlurmCpusPerTaskReachesTheTopology) {
  // `srun -n1 -c2`: Slurm 22.05 sets SLURM_CPUS_PER_TASK only when -c was given.
  Environment env = RealSrunOneTaskInTwoPerNodeAllocation();
  EXPECT_EQ(Detect(env).cpus_per_task, 0);
  env["SLURM_CPUS_PER_TASK"] = "2";
  EXPECT_EQ(Detect(env).cpus_per_task, 2);
  EXPECT_EQ(Resolve(TwoProcesses(), {}, env).topology.cpus_per_worker, 2);
  env["SLURM_CPUS_PER_TASK"] = "-2";
  EXPECT_EQ(DetectError(env),
            "cannot read Slurm's placement: SLURM_CPUS_PER_TASK=`-2` is not a non-negative integer");
  // A local launch inside an allocation splits the machine its own way.
  PlacementFlags local;
  local.launcher = LauncherKind::kLocal;
  EXPECT_EQ(Resolve(TwoProcesses(), local, env).topology.cpus_per_worker, 0);
}

TEST(PlanEnvironment, PhysicalCoresArePositive) { EXPECT_GE(PhysicalCoreCount(), 1); }

}  // namespace
}  // namespace accel::rt::launch
