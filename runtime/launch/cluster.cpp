#include "runtime/launch/cluster.h"

#include <charconv>
#include <initializer_list>
#include <string>

#include <fmt/format.h>

#include "runtime/support/error.h"

extern char** environ;

namespace accel::rt::launch {
namespace {

constexpr size_t kMaxHosts = 100000;

std::optional<long> ParseNumber(std::string_view text) {
  long value = 0;
  auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size() || text.empty()) return std::nullopt;
  return value;
}

// 1 to 9 decimal digits, nothing else (no sign, no space).
bool ParseDigits(std::string_view text, long& out) {
  if (text.empty() || text.size() > 9 || text.find_first_not_of("0123456789") != std::string_view::npos)
    return false;
  out = std::stol(std::string(text));
  return true;
}

// Reads variables of one scheduler, remembering the first problem.
class Reader {
 public:
  Reader(const Environment& env, std::string scheduler) : env_(env), scheduler_(std::move(scheduler)) {}

  bool Has(const std::string& name) const { return env_.count(name) != 0; }
  // The first of `names` that is set, or empty.
  std::string FirstSet(std::initializer_list<const char*> names) const {
    for (const char* name : names)
      if (Has(name)) return name;
    return "";
  }
  // The integer in `name`; `fallback` when unset, or an error when unset and no fallback.
  int Int(const std::string& name, std::optional<int> fallback = std::nullopt) {
    auto it = env_.find(name);
    if (it == env_.end()) {
      if (!fallback) NoteError(fmt::format("{} is missing", name));
      return fallback.value_or(0);
    }
    std::optional<long> value = ParseNumber(it->second);
    if (!value || *value < 0 || *value > 1000000) {
      NoteError(fmt::format("{}=`{}` is not a non-negative integer", name, it->second));
      return 0;
    }
    return static_cast<int>(*value);
  }
  std::string Text(const std::string& name) const {
    auto it = env_.find(name);
    return it == env_.end() ? "" : it->second;
  }
  void NoteError(std::string message) {
    if (error_.empty()) error_ = std::move(message);
  }
  llvm::Expected<std::optional<ClusterTask>> Finish(ClusterTask task) {
    if (error_.empty() && task.world_size < 1) NoteError("the world size is 0");
    if (error_.empty() && task.rank >= task.world_size)
      NoteError(fmt::format("rank {} is not below the world size {}", task.rank, task.world_size));
    if (error_.empty() && task.local_world_size < 1) NoteError("the local world size is 0");
    if (error_.empty() && task.local_rank >= task.local_world_size)
      NoteError(fmt::format("local rank {} is not below the local world size {}", task.local_rank,
                            task.local_world_size));
    if (error_.empty() && task.node_rank >= task.nnodes)
      NoteError(fmt::format("node {} is not below the node count {}", task.node_rank, task.nnodes));
    if (!error_.empty()) return Fail(fmt::format("cannot read {}'s placement: {}", scheduler_, error_));
    task.scheduler = scheduler_;
    return std::optional<ClusterTask>(std::move(task));
  }

 private:
  const Environment& env_;
  std::string scheduler_;
  std::string error_;
};

// `2(x3),1` (SLURM_TASKS_PER_NODE) → the count of node `node`, or empty.
std::optional<int> TasksOnNode(std::string_view spec, int node) {
  int first = 0;
  while (!spec.empty()) {
    size_t comma = spec.find(',');
    std::string_view item = spec.substr(0, comma);
    spec = comma == std::string_view::npos ? std::string_view() : spec.substr(comma + 1);
    long repeat = 1;
    size_t paren = item.find("(x");
    if (paren != std::string_view::npos) {
      if (item.back() != ')') return std::nullopt;
      std::optional<long> times = ParseNumber(item.substr(paren + 2, item.size() - paren - 3));
      if (!times) return std::nullopt;
      repeat = *times;
      item = item.substr(0, paren);
    }
    std::optional<long> count = ParseNumber(item);
    if (!count) return std::nullopt;
    if (node < first + repeat) return static_cast<int>(*count);
    first += static_cast<int>(repeat);
  }
  return std::nullopt;
}

llvm::Expected<std::optional<ClusterTask>> ReadSlurm(const Environment& env) {
  Reader read(env, "Slurm");
  ClusterTask task;
  task.rank = read.Int("SLURM_PROCID");
  task.local_rank = read.Int("SLURM_LOCALID");
  task.node_rank = read.Int("SLURM_NODEID", 0);
  // A step inherits every variable of its allocation, and srun sets the step's own beside
  // them: `srun -n1` inside `--ntasks-per-node=2` keeps SLURM_NTASKS_PER_NODE=2 but sets
  // SLURM_STEP_TASKS_PER_NODE=1. The step's counts describe this task; the allocation's only
  // stand in for them when srun did not set them.
  std::string world = read.FirstSet({"SLURM_STEP_NUM_TASKS", "SLURM_NTASKS", "SLURM_NPROCS"});
  task.world_size = read.Int(world.empty() ? "SLURM_NTASKS" : world);
  std::string nodes = read.FirstSet({"SLURM_STEP_NUM_NODES", "SLURM_NNODES", "SLURM_JOB_NUM_NODES"});
  task.nnodes = nodes.empty() ? 1 : read.Int(nodes);
  // Per-node lists (`2(x3),1`) are exact for uneven steps; SLURM_NTASKS_PER_NODE is the
  // allocation's uniform request.
  std::string per_node = read.FirstSet({"SLURM_STEP_TASKS_PER_NODE", "SLURM_TASKS_PER_NODE"});
  if (!per_node.empty()) {
    std::optional<int> on_node = TasksOnNode(read.Text(per_node), task.node_rank);
    if (on_node) {
      task.local_world_size = *on_node;
    } else {
      read.NoteError(fmt::format("{}=`{}` does not give a task count for node {}", per_node,
                                 read.Text(per_node), task.node_rank));
    }
  } else if (read.Has("SLURM_NTASKS_PER_NODE")) {
    task.local_world_size = read.Int("SLURM_NTASKS_PER_NODE");
  } else {
    task.local_world_size = std::max(1, task.world_size / std::max(1, task.nnodes));
  }
  // Set only when the job or step asked for --cpus-per-task; Slurm's default is one CPU.
  task.cpus_per_task = read.Int("SLURM_CPUS_PER_TASK", 0);
  for (const char* name : {"SLURM_STEP_NODELIST", "SLURM_JOB_NODELIST", "SLURM_NODELIST"}) {
    if (!read.Has(name)) continue;
    llvm::Expected<std::vector<std::string>> hosts = ExpandNodeList(read.Text(name));
    if (!hosts) {
      read.NoteError(fmt::format("{}: {}", name, llvm::toString(hosts.takeError())));
    } else {
      task.master_addr = hosts->front();
      task.master_addr_from = fmt::format("the first node of {}", name);
    }
    break;
  }
  return read.Finish(std::move(task));
}

// OpenMPI and MVAPICH2 name their variables alike: <prefix>RANK, SIZE, LOCAL_RANK, LOCAL_SIZE.
llvm::Expected<std::optional<ClusterTask>> ReadMpiWorld(const Environment& env, const std::string& scheduler,
                                                        const std::string& prefix) {
  Reader read(env, scheduler);
  ClusterTask task;
  task.rank = read.Int(prefix + "RANK");
  task.world_size = read.Int(prefix + "SIZE");
  task.local_rank = read.Int(prefix + "LOCAL_RANK", 0);
  task.local_world_size = read.Int(prefix + "LOCAL_SIZE", 1);
  // MPI does not say which node this is; by-node blocks of LOCAL_SIZE ranks is the default
  // mapping of both. Only reported, never used to compute a rank.
  int local = std::max(1, task.local_world_size);
  task.nnodes = (task.world_size + local - 1) / local;
  task.node_rank = std::min(task.rank / local, std::max(0, task.nnodes - 1));
  return read.Finish(std::move(task));
}

llvm::Expected<std::optional<ClusterTask>> ReadPmi(const Environment& env) {
  Reader read(env, "MPI (PMI)");
  ClusterTask task;
  task.rank = read.Int("PMI_RANK");
  task.world_size = read.Int("PMI_SIZE");
  // MPICH's hydra and Intel MPI add the local placement; without it, one task per node.
  task.local_rank = read.Int("MPI_LOCALRANKID", 0);
  task.local_world_size = read.Int("MPI_LOCALNRANKS", 1);
  int local = std::max(1, task.local_world_size);
  task.nnodes = (task.world_size + local - 1) / local;
  task.node_rank = std::min(task.rank / local, std::max(0, task.nnodes - 1));
  return read.Finish(std::move(task));
}

}  // namespace

Environment CurrentEnvironment() {
  Environment env;
  for (char** entry = environ; *entry != nullptr; ++entry) {
    std::string_view text = *entry;
    size_t equals = text.find('=');
    if (equals == std::string_view::npos) continue;
    env.emplace(std::string(text.substr(0, equals)), std::string(text.substr(equals + 1)));
  }
  return env;
}

std::optional<LauncherKind> ParseLauncherKind(std::string_view text) {
  if (text == "auto") return LauncherKind::kAuto;
  if (text == "local") return LauncherKind::kLocal;
  if (text == "slurm") return LauncherKind::kSlurm;
  if (text == "mpi") return LauncherKind::kMpi;
  return std::nullopt;
}

llvm::Expected<std::optional<ClusterTask>> DetectCluster(const Environment& env, LauncherKind kind) {
  if (kind == LauncherKind::kLocal) return std::nullopt;
  auto has = [&env](const char* name) { return env.count(name) != 0; };
  if (kind == LauncherKind::kAuto || kind == LauncherKind::kMpi) {
    if (has("OMPI_COMM_WORLD_RANK") || has("OMPI_COMM_WORLD_SIZE"))
      return ReadMpiWorld(env, "OpenMPI", "OMPI_COMM_WORLD_");
    if (has("MV2_COMM_WORLD_RANK") || has("MV2_COMM_WORLD_SIZE"))
      return ReadMpiWorld(env, "MVAPICH2", "MV2_COMM_WORLD_");
    if (has("PMI_RANK") || has("PMI_SIZE")) return ReadPmi(env);
    if (kind == LauncherKind::kMpi) {
      return Fail(
          "`--launcher mpi` but no MPI placement in the environment (OMPI_COMM_WORLD_RANK, "
          "MV2_COMM_WORLD_RANK or PMI_RANK); start accelrun with mpirun");
    }
  }
  // In a batch script (no step) SLURM_PROCID describes the script, not one of many tasks.
  bool in_step = has("SLURM_STEP_ID") || has("SLURM_STEPID");
  if (kind == LauncherKind::kSlurm || (has("SLURM_PROCID") && in_step)) {
    if (kind == LauncherKind::kSlurm && !has("SLURM_PROCID"))
      return Fail("`--launcher slurm` but SLURM_PROCID is not set; start accelrun with srun");
    return ReadSlurm(env);
  }
  return std::nullopt;
}

llvm::Expected<std::vector<std::string>> ExpandNodeList(std::string_view list) {
  auto fail = [list](size_t at, const std::string& what) -> llvm::Error {
    return Fail(fmt::format("bad Slurm node list `{}` at column {}: {}", list, at + 1, what));
  };
  if (list.empty()) return Fail("the Slurm node list is empty");
  std::vector<std::string> hosts;
  size_t i = 0;
  while (i <= list.size()) {
    // One host pattern: literal text and bracket groups, up to a comma outside brackets.
    std::vector<std::string> expanded = {""};
    size_t start = i;
    while (i < list.size() && list[i] != ',') {
      if (list[i] == ']') return fail(i, "`]` without `[`");
      if (list[i] != '[') {
        for (std::string& host : expanded) host += list[i];
        ++i;
        continue;
      }
      size_t close = list.find(']', i);
      size_t nested = list.find('[', i + 1);
      if (close == std::string_view::npos || (nested != std::string_view::npos && nested < close))
        return fail(i, "`[` without `]`");
      std::vector<std::string> values;
      std::string_view body = list.substr(i + 1, close - i - 1);
      size_t item_at = i + 1;
      while (true) {
        size_t comma = body.find(',');
        std::string_view item = body.substr(0, comma);
        size_t dash = item.find('-');
        std::string_view low = item.substr(0, dash);
        std::string_view high = dash == std::string_view::npos ? low : item.substr(dash + 1);
        long from = 0;
        long to = 0;
        if (!ParseDigits(low, from) || !ParseDigits(high, to))
          return fail(item_at, fmt::format("`{}` is not a number or range a-b", item));
        if (from > to) return fail(item_at, fmt::format("range `{}` runs backwards", item));
        if (values.size() + (to - from) >= kMaxHosts)
          return fail(item_at, fmt::format("more than {} hosts", kMaxHosts));
        // Slurm pads every number to the width of the range's first one: n[08-10].
        for (long n = from; n <= to; ++n) values.push_back(fmt::format("{:0{}}", n, low.size()));
        if (comma == std::string_view::npos) break;
        body.remove_prefix(comma + 1);
        item_at += comma + 1;
      }
      if (expanded.size() * values.size() > kMaxHosts)
        return fail(i, fmt::format("more than {} hosts", kMaxHosts));
      std::vector<std::string> product;
      for (const std::string& prefix : expanded)
        for (const std::string& value : values) product.push_back(prefix + value);
      expanded = std::move(product);
      i = close + 1;
    }
    if (i == start) return fail(i, "empty host name");
    for (std::string& host : expanded) hosts.push_back(std::move(host));
    if (hosts.size() > kMaxHosts) return fail(i, fmt::format("more than {} hosts", kMaxHosts));
    if (i == list.size()) break;
    ++i;  // the comma
    if (i == list.size()) return fail(i - 1, "empty host name after `,`");
  }
  return hosts;
}

}  // namespace accel::rt::launch
