#include "runtime/launch/plan_env.h"

#include <fstream>
#include <initializer_list>
#include <set>
#include <thread>

#include <fmt/format.h>

namespace accel::rt::launch {
namespace {

// The resolved value at `path` of the plan's configuration (`{"value": ..., "from": ...}`
// leaves), or null.
const llvm::json::Value* ConfigValue(const plan::Plan& plan, std::initializer_list<llvm::StringRef> path) {
  const llvm::json::Value* node = &plan.config;
  for (llvm::StringRef key : path) {
    const llvm::json::Object* object = node->getAsObject();
    if (object == nullptr || (node = object->get(key)) == nullptr) return nullptr;
  }
  const llvm::json::Object* leaf = node->getAsObject();
  return leaf ? leaf->get("value") : nullptr;
}

bool ConfigFlag(const plan::Plan& plan, std::initializer_list<llvm::StringRef> path) {
  const llvm::json::Value* value = ConfigValue(plan, path);
  return value && value->getAsBoolean().getValueOr(false);
}

}  // namespace

std::map<std::string, std::string> AccelerateEnvironment(const plan::Plan& plan) {
  std::map<std::string, std::string> env;
  const auto* loop = plan.Find<plan::TrainLoop>();
  env["ACCELERATE_MIXED_PRECISION"] = loop ? std::string(plan::EnumName(loop->mixed_precision)) : "no";
  // Accelerate's simple launcher writes Python's str() of a bool here; a rehearsal is a CPU run.
  const auto* init = plan.Find<plan::InitProcessGroup>();
  bool use_cpu = ConfigFlag(plan, {"compute", "use_cpu"}) || ConfigFlag(plan, {"accelerator", "cpu"}) ||
                 (init != nullptr && init->rehearsal);
  env["ACCELERATE_USE_CPU"] = use_cpu ? "True" : "False";
  if (ConfigFlag(plan, {"compute", "debug"})) env["ACCELERATE_DEBUG_MODE"] = "true";
  if (ConfigFlag(plan, {"compute", "enable_cpu_affinity"})) env["ACCELERATE_CPU_AFFINITY"] = "1";
  return env;
}

bool PortChosenBySpec(const plan::Plan& plan) {
  const llvm::json::Value* port = ConfigValue(plan, {"compute", "main_process_port"});
  return port == nullptr || port->kind() != llvm::json::Value::Null;
}

bool IsCpuRun(const plan::Plan& plan) {
  const auto* init = plan.Find<plan::InitProcessGroup>();
  return (init && init->backend == plan::Backend::gloo) || ConfigFlag(plan, {"compute", "use_cpu"}) ||
         ConfigFlag(plan, {"accelerator", "cpu"});
}

ThreadChoice ChooseThreads(std::optional<int> threads_flag, const std::optional<std::string>& inherited,
                           int cpus_per_worker, bool cpu_run, int physical_cores, int local_processes) {
  auto set = [](int threads, std::string from) {
    return ThreadChoice{std::to_string(threads), std::to_string(threads), std::move(from)};
  };
  if (threads_flag) return set(*threads_flag, "--num-cpu-threads-per-process");
  if (inherited) return {std::nullopt, *inherited, "the inherited OMP_NUM_THREADS"};
  // The scheduler reserved these CPUs for the task, and the task runs one worker: more threads
  // would compete with other jobs' tasks on the node, fewer would leave the reservation idle.
  if (cpus_per_worker > 0) return set(cpus_per_worker, "SLURM_CPUS_PER_TASK");
  if (!cpu_run) return set(1, "not a CPU run");
  // Without a limit each of N workers would start one thread per core: N-fold oversubscription.
  int share = local_processes > 0 ? physical_cores / local_processes : physical_cores;
  return set(std::max(share, 1), fmt::format("{} physical cores for {} local worker{}", physical_cores,
                                             local_processes, local_processes == 1 ? "" : "s"));
}

int PhysicalCoreCount() {
  std::ifstream in("/proc/cpuinfo");
  std::set<std::pair<std::string, std::string>> cores;  // (physical id, core id)
  std::string line, package;
  while (std::getline(in, line)) {
    std::string value = line.substr(line.find(':') == std::string::npos ? line.size() : line.find(':') + 1);
    if (line.rfind("physical id", 0) == 0) package = value;
    if (line.rfind("core id", 0) == 0) cores.insert({package, value});
  }
  if (!cores.empty()) return static_cast<int>(cores.size());
  unsigned logical = std::thread::hardware_concurrency();
  return logical > 0 ? static_cast<int>(logical) : 1;
}

}  // namespace accel::rt::launch
