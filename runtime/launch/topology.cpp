#include "runtime/launch/topology.h"

#include <fmt/format.h>

#include "runtime/launch/launch_id.h"
#include "runtime/support/error.h"

namespace accel::rt::launch {
namespace {

std::string Plural(int count, const char* noun, const char* plural) {
  return fmt::format("{} {}", count, count == 1 ? noun : plural);
}

bool IsLoopback(const std::string& address) {
  return address == "localhost" || address.rfind("127.", 0) == 0 || address == "::1";
}

// A scheduler placed this task: one worker, the scheduler's rank.
llvm::Expected<Placement> FromCluster(const ClusterTask& task, const PlanPlacement& plan,
                                      const PlacementFlags& flags, const Environment& env) {
  for (auto [set, name] : {std::pair{flags.nnodes.has_value(), "--nnodes"},
                           std::pair{flags.node_rank.has_value(), "--node-rank"},
                           std::pair{flags.nproc_per_node.has_value(), "--nproc-per-node"}}) {
    if (set) {
      return Fail(
          fmt::format("`{}` conflicts with {}'s placement of this task; pass `--launcher local` to "
                      "ignore {}",
                      name, task.scheduler, task.scheduler));
    }
  }
  Placement placement;
  Topology& topology = placement.topology;
  topology.launched_by = task.scheduler;
  topology.world_size = task.world_size;
  topology.nnodes = task.nnodes;
  topology.node_rank = task.node_rank;
  topology.local_world_size = task.local_world_size;
  topology.slots = {{task.rank, task.local_rank}};
  topology.cpus_per_worker = task.cpus_per_task;
  placement.summary = fmt::format("launched by {}: rank {} of {} (local rank {} of {}, node {} of {})",
                                  task.scheduler, task.rank, task.world_size, task.local_rank,
                                  task.local_world_size, task.node_rank, task.nnodes);
  int planned = plan.num_machines * plan.processes_per_machine;
  if (planned != task.world_size) {
    placement.notes.push_back(fmt::format("{} started {}; the plan asks for {}: {} wins", task.scheduler,
                                          Plural(task.world_size, "task", "tasks"),
                                          Plural(planned, "process", "processes"), task.scheduler));
  }

  std::string addr_from;
  auto env_value = [&env](const char* name) -> std::optional<std::string> {
    auto it = env.find(name);
    if (it == env.end() || it->second.empty()) return std::nullopt;
    return it->second;
  };
  if (flags.master_addr) {
    topology.master_addr = *flags.master_addr;
    addr_from = "--master-addr";
  } else if (std::optional<std::string> addr = env_value("MASTER_ADDR")) {
    topology.master_addr = *addr;
    addr_from = "MASTER_ADDR";
  } else if (!task.master_addr.empty()) {
    topology.master_addr = task.master_addr;
    addr_from = task.master_addr_from;
  } else if (task.nnodes == 1) {
    topology.master_addr = "127.0.0.1";
    addr_from = "all tasks on one node";
  } else if (!IsLoopback(plan.main_process_ip)) {
    topology.master_addr = plan.main_process_ip;
    addr_from = "the plan";
  } else {
    return Fail(fmt::format("{} spans {} and names no rendezvous host; set MASTER_ADDR or pass --master-addr",
                            task.scheduler, Plural(task.nnodes, "node", "nodes")));
  }

  std::string port_from;
  if (flags.master_port) {
    if (*flags.master_port == 0) {
      return Fail(fmt::format("`--master-port 0` cannot work under {}: every task would pick its own port",
                              task.scheduler));
    }
    topology.master_port = *flags.master_port;
    port_from = "--master-port";
  } else if (std::optional<std::string> port = env_value("MASTER_PORT")) {
    char* end = nullptr;
    long value = std::strtol(port->c_str(), &end, 10);
    if (*end != '\0' || value < 1 || value > 65535)
      return Fail(fmt::format("MASTER_PORT=`{}` is not a port number (1-65535)", *port));
    topology.master_port = static_cast<int>(value);
    port_from = "MASTER_PORT";
  } else if (std::optional<LaunchId> launch = SchedulerLaunchId(env); launch && !plan.main_process_port_set) {
    // Two jobs sharing a node must not meet at the plan's default port.
    topology.master_port = DerivedPort(launch->id);
    port_from = "the launch id";
  } else {
    topology.master_port = plan.main_process_port;
    port_from = "the plan";
  }
  placement.rendezvous_from = fmt::format("address from {}, port from {}", addr_from, port_from);
  return placement;
}

llvm::Expected<Placement> Local(const PlanPlacement& plan, const PlacementFlags& flags,
                                const std::function<int()>& pick_port) {
  Placement placement;
  Topology& topology = placement.topology;
  topology.nnodes = flags.nnodes.value_or(plan.num_machines);
  topology.local_world_size = flags.nproc_per_node.value_or(plan.processes_per_machine);
  topology.node_rank = flags.node_rank.value_or(0);
  if (topology.nnodes < 1) return Fail("`--nnodes` must be at least 1");
  if (topology.local_world_size < 1) return Fail("`--nproc-per-node` must be at least 1");
  if (topology.node_rank >= topology.nnodes) {
    if (flags.nnodes)
      return Fail(fmt::format("`--node-rank {}` is out of range for `--nnodes {}`", topology.node_rank,
                              topology.nnodes));
    return Fail(
        fmt::format("`--node-rank {}` is out of range: the plan runs on {}; pass --nnodes to change it",
                    topology.node_rank, Plural(topology.nnodes, "machine", "machines")));
  }
  topology.world_size = topology.nnodes * topology.local_world_size;
  for (int local = 0; local < topology.local_world_size; ++local)
    topology.slots.push_back({topology.node_rank * topology.local_world_size + local, local});
  placement.summary = fmt::format("local launch: {} on this machine (node {} of {}), world size {}",
                                  Plural(topology.local_world_size, "process", "processes"),
                                  topology.node_rank, topology.nnodes, topology.world_size);
  if (flags.nnodes && *flags.nnodes != plan.num_machines)
    placement.notes.push_back(
        fmt::format("--nnodes {} overrides the plan's {}", *flags.nnodes, plan.num_machines));
  if (flags.nproc_per_node && *flags.nproc_per_node != plan.processes_per_machine) {
    placement.notes.push_back(fmt::format("--nproc-per-node {} overrides the plan's {} per machine",
                                          *flags.nproc_per_node, plan.processes_per_machine));
  }
  int planned = plan.num_machines * plan.processes_per_machine;
  if (topology.world_size != planned) {
    placement.notes.push_back(
        fmt::format("running {} in all instead of the plan's {}; the batch size per "
                    "process stays as planned",
                    Plural(topology.world_size, "process", "processes"), planned));
  }

  topology.master_addr = flags.master_addr.value_or(plan.main_process_ip);
  std::string addr_from = flags.master_addr ? "--master-addr" : "the plan";
  std::string port_from;
  if (flags.master_port && *flags.master_port != 0) {
    topology.master_port = *flags.master_port;
    port_from = "--master-port";
  } else if (topology.nnodes == 1) {
    topology.master_port = pick_port();
    port_from = "a free port";
    if (topology.master_port <= 0) return Fail("found no free port for the rendezvous; pass --master-port");
  } else {
    if (flags.master_port)
      return Fail("`--master-port 0` works on one machine only: every machine must agree");
    topology.master_port = plan.main_process_port;
    port_from = "the plan";
  }
  if (topology.nnodes > 1 && !flags.master_addr && IsLoopback(topology.master_addr)) {
    placement.notes.push_back(
        fmt::format("{} machines meet at the plan's {}, which works only if they are all "
                    "this host; pass --master-addr with rank 0's host",
                    topology.nnodes, topology.master_addr));
  }
  placement.rendezvous_from = fmt::format("address from {}, port from {}", addr_from, port_from);
  return placement;
}

}  // namespace

std::map<std::string, std::string> RankEnvironment(const Topology& topology, const Slot& slot) {
  std::map<std::string, std::string> env;
  env[kEnvRank] = env["RANK"] = std::to_string(slot.rank);
  env[kEnvLocalRank] = env["LOCAL_RANK"] = std::to_string(slot.local_rank);
  env[kEnvWorldSize] = env["WORLD_SIZE"] = std::to_string(topology.world_size);
  env["LOCAL_WORLD_SIZE"] = std::to_string(topology.local_world_size);
  env[kEnvMasterAddr] = env["MASTER_ADDR"] = topology.master_addr;
  env[kEnvMasterPort] = env["MASTER_PORT"] = std::to_string(topology.master_port);
  return env;
}

std::string LauncherPrefix(const Topology& topology) {
  for (const Slot& slot : topology.slots)
    if (slot.rank == 0) return "";
  if (topology.slots.size() == 1) return fmt::format("[rank {}] ", topology.slots.front().rank);
  return fmt::format("[node {}] ", topology.node_rank);
}

llvm::Expected<Placement> ResolvePlacement(const PlanPlacement& plan, const PlacementFlags& flags,
                                           const Environment& env, const std::function<int()>& pick_port) {
  llvm::Expected<std::optional<ClusterTask>> task = DetectCluster(env, flags.launcher);
  if (!task) return task.takeError();
  if (*task) return FromCluster(**task, plan, flags, env);
  return Local(plan, flags, pick_port);
}

}  // namespace accel::rt::launch
