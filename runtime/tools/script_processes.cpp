// The processes of a script launch: where the scheduler (Slurm, mpirun) places them, each one's
// command and environment (the launch's variables and torchrun's per worker), how --dry-run
// prints them, and the `.deepspeed_env` DeepSpeed's runner exports. Starting and supervising
// them is script_command.cpp's.
#include <fstream>

#include <fmt/format.h>

#include "compiler/cli/shell_word.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/Program.h"
#include "runtime/launch/launch_id.h"
#include "runtime/tools/script_command_internal.h"

namespace accel::tools {
namespace {

namespace launch = rt::launch;
namespace acc = rt::launch::accelerate;

// A path (`./a.out`) is kept as written: the process starts in this directory, and the program
// sees its argv[0] as `accelerate launch` passes it. A bare name is looked up on PATH, which the
// spawner does not search.
std::string Resolve(const std::string& program) {
  if (program.find('/') != std::string::npos) return program;
  llvm::ErrorOr<std::string> found = llvm::sys::findProgramByName(program);
  return found ? *found : program;
}

}  // namespace

llvm::Expected<std::vector<acc::WorkerPlace>> Places(acc::ScriptLaunch& plan, const acc::LaunchNamespace& ns,
                                                     const launch::Environment& env,
                                                     std::vector<std::string>& notes) {
  if (plan.runner != acc::Runner::kTorchrun) return std::vector<acc::WorkerPlace>{};
  llvm::Expected<std::optional<launch::ClusterTask>> cluster =
      launch::DetectCluster(env, launch::LauncherKind::kAuto);
  if (!cluster) return cluster.takeError();
  if (!*cluster) return acc::LocalPlaces(plan);
  const launch::ClusterTask& task = **cluster;
  if (ns.Get("main_process_ip").IsNone() && !task.master_addr.empty()) {
    plan.master_addr = task.master_addr;
    notes.push_back(fmt::format("rendezvous host {} from {}", task.master_addr, task.master_addr_from));
  }
  if (task.local_world_size == 1) {
    if (task.nnodes != plan.nnodes)
      notes.push_back(fmt::format("{} placed {} machines; the config says {}: {} machines of {} processes",
                                  task.scheduler, task.nnodes, plan.nnodes, task.nnodes,
                                  plan.nproc_per_node));
    plan.nnodes = task.nnodes;
    if (!ns.given.count("machine_rank")) plan.node_rank = task.node_rank;
    notes.push_back(fmt::format("launched by {}: machine {} of {}, {} processes on it", task.scheduler,
                                plan.node_rank, plan.nnodes, plan.nproc_per_node));
    return acc::LocalPlaces(plan);
  }
  int planned = plan.nproc_per_node * plan.nnodes;
  if (task.world_size != planned)
    notes.push_back(fmt::format("{} started {} tasks; the config asks for {} processes: one process per task",
                                task.scheduler, task.world_size, planned));
  plan.nnodes = task.nnodes;
  plan.node_rank = task.node_rank;
  plan.nproc_per_node = task.local_world_size;
  notes.push_back(fmt::format("launched by {}: rank {} of {} (local rank {} of {}, machine {} of {})",
                              task.scheduler, task.rank, task.world_size, task.local_rank,
                              task.local_world_size, task.node_rank, task.nnodes));
  return std::vector<acc::WorkerPlace>{
      {task.rank, task.local_rank, task.local_world_size, task.world_size, task.node_rank, task.nnodes}};
}

std::string ErrorFile(const std::string& root, int attempt, int local_rank) {
  return fmt::format("{}/attempt_{}/{}/error.json", root, attempt, local_rank);
}

std::vector<Process> Processes(const acc::ScriptLaunch& plan, const std::vector<acc::WorkerPlace>& places,
                               const launch::Environment& env, int restart, const std::string& launch_id,
                               const std::string& error_root) {
  std::vector<Process> processes;
  auto add = [&](int rank, int local_rank, std::map<std::string, std::string> vars) {
    Process process{rank, local_rank, {}};
    process.spec.rank = rank;
    process.spec.argv = plan.command;
    process.spec.argv[0] = Resolve(process.spec.argv[0]);
    process.spec.env = std::move(vars);
    if (!launch_id.empty()) process.spec.env[launch::kEnvLaunchId] = launch_id;
    processes.push_back(std::move(process));
  };
  if (plan.runner == acc::Runner::kProcess) {
    add(0, 0, plan.env);
    return processes;
  }
  for (const acc::WorkerPlace& place : places) {
    std::map<std::string, std::string> vars = plan.env;
    for (auto& [name, value] : acc::TorchrunWorkerEnvironment(
             plan, place, restart, ErrorFile(error_root, restart, place.local_rank), env))
      vars[name] = value;
    add(place.rank, place.local_rank, std::move(vars));
  }
  return processes;
}

void PrintDryRunText(const std::vector<Process>& processes) {
  for (const Process& process : processes) {
    fmt::print("rank {} (local rank {})\n", process.rank, process.local_rank);
    std::string command;
    for (const std::string& arg : process.spec.argv)
      command += (command.empty() ? "" : " ") + cli::ShellWord(arg);
    fmt::print("  command: {}\n", command);
    for (const auto& [name, value] : process.spec.env)
      fmt::print("  env: {}={}\n", name, cli::ShellWord(value));
  }
}

void PrintDryRunJson(const acc::ScriptLaunch& plan, const std::vector<Process>& processes) {
  llvm::json::Array list;
  for (const Process& process : processes) {
    llvm::json::Array argv;
    for (const std::string& arg : process.spec.argv) argv.push_back(arg);
    llvm::json::Object env;
    for (const auto& [name, value] : process.spec.env) env[name] = value;
    list.push_back(llvm::json::Object{{"rank", process.rank},
                                      {"local_rank", process.local_rank},
                                      {"command", std::move(argv)},
                                      {"env", std::move(env)}});
  }
  llvm::json::Array warnings;
  for (const std::string& warning : plan.warnings) warnings.push_back(warning);
  llvm::json::Object out{{"launcher", plan.launcher},
                         {"distributed_type", plan.distributed_type},
                         {"processes", std::move(list)},
                         {"warnings", std::move(warnings)}};
  fmt::print("{}\n", llvm::formatv("{0:2}", llvm::json::Value(std::move(out))).str());
}

std::string Summary(const acc::ScriptLaunch& plan, size_t processes, const std::string& script,
                    const std::string& config) {
  std::string how = plan.runner == acc::Runner::kProcess
                        ? fmt::format("one process ({} launcher)", plan.launcher)
                        : fmt::format("{} process{} here (machine {} of {}), rendezvous {}:{}", processes,
                                      processes == 1 ? "" : "es", plan.node_rank, plan.nnodes,
                                      plan.master_addr, plan.master_port);
  return fmt::format("`{}` as `accelerate launch` starts it{}: {}, {}", script,
                     config.empty() ? "" : fmt::format(" with `{}`", config), plan.distributed_type, how);
}

void WriteDeepSpeedEnv(const std::map<std::string, std::string>& vars) {
  std::ofstream out(".deepspeed_env", std::ios::app);
  for (const auto& [name, value] : vars) {
    std::string both = name + value;
    if (name.empty() || value.empty() || both.find_first_of(";\n<> ") != std::string::npos) continue;
    out << name << '=' << value << '\n';
  }
}

}  // namespace accel::tools
