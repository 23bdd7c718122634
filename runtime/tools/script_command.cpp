// `accelrun [cfg.yaml] [launch options] train.py [args]`: a user's Python script launched as
// `accelerate launch` launches it (the same processes, commands and environment, computed by
// runtime/launch/accelerate), with accelrun's supervision around it: rank-labelled output, the
// first failing rank named with its last lines, every process stopped on a failure, a rank that
// leaves early named, and whole-job restarts.
#include "runtime/tools/script_command.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <thread>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "compiler/cli/arguments.h"
#include "compiler/cli/shell_word.h"
#include "compiler/diagnostics/render.h"
#include "compiler/pipeline/compile.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/Program.h"
#include "runtime/launch/accelerate/launch_flags.h"
#include "runtime/launch/accelerate/launch_plan.h"
#include "runtime/launch/async_printer.h"
#include "runtime/launch/cluster.h"
#include "runtime/launch/launch_id.h"
#include "runtime/launch/launcher.h"
#include "runtime/launch/mpirun.h"
#include "runtime/launch/plan_env.h"
#include "runtime/launch/restarts.h"

namespace accel::tools {
namespace {

namespace fs = std::filesystem;
namespace launch = rt::launch;
namespace acc = rt::launch::accelerate;

constexpr int kExitFailed = 1;
constexpr int kExitUsage = 2;

std::atomic<int> g_script_interrupted{0};

// accelrun's own options in script mode, beside Accelerate's.
struct ScriptOptions {
  bool dry_run = false;
  bool json = false;
  bool help = false;
  std::optional<std::string> rdzv_id;
  // --device cpu: a GPU config's processes join one Gloo group on CPUs (ACCELERATE_USE_CPU).
  bool rehearse_on_cpu = false;
  // How long the other ranks may run on after one finished (0: no limit).
  std::chrono::milliseconds early_exit_limit{std::chrono::minutes(30)};
  // The watchdog for ranks that speak the progress protocol (ACCEL_PROGRESS_FD).
  std::chrono::milliseconds progress_timeout{std::chrono::minutes(30)};
};

cli::Option Seconds(std::string name, std::string help, std::chrono::milliseconds& out) {
  return cli::Option{.names = {std::move(name)},
                     .value_name = "<seconds>",
                     .help = std::move(help),
                     .apply = [&out](std::string_view flag, std::string_view text) -> std::string {
                       std::optional<long> value = cli::ParseInteger(text, 0, 7 * 24 * 3600);
                       if (!value) return fmt::format("`{}` needs a number of seconds (0-604800)", flag);
                       out = std::chrono::seconds(*value);
                       return "";
                     },
                     .needs = "a number of seconds",
                     .allow_empty = false};
}

std::vector<cli::Option> OwnOptions(ScriptOptions& o) {
  return {
      cli::Option{.names = {"--dry-run"},
                  .help = "print each process's command and the environment it is given; start nothing",
                  .apply = cli::SetFlag(o.dry_run)},
      cli::Option{.names = {"--format"},
                  .value_name = "text|json",
                  .help = "how --dry-run prints (default text)",
                  .apply = [&o](std::string_view, std::string_view value) -> std::string {
                    if (value != "text" && value != "json")
                      return fmt::format("`--format {}` is unknown; expected text or json", value);
                    o.json = value == "json";
                    return "";
                  },
                  .needs = "text or json",
                  .allow_empty = false},
      Seconds("--early-exit-timeout",
              "when one rank has finished and the others still run after this\n"
              "long, stop the job and name that rank (default 1800; 0: never)",
              o.early_exit_limit),
      Seconds("--progress-timeout",
              "stop the job when a rank that reports progress (ACCEL_PROGRESS_FD)\n"
              "goes silent this long (default 1800; 0: off)",
              o.progress_timeout),
      cli::Option{.names = {"--device"},
                  .value_name = "cpu",
                  .help = "cpu: rehearse a GPU config on CPU processes: each gets\n"
                          "ACCELERATE_USE_CPU=True, so Accelerate joins them in one Gloo group",
                  .apply = [&o](std::string_view, std::string_view value) -> std::string {
                    if (value != "cpu")
                      return fmt::format("`--device {}` is unknown here; expected cpu", value);
                    o.rehearse_on_cpu = true;
                    return "";
                  },
                  .needs = "cpu",
                  .allow_empty = false},
      cli::Option{.names = {"--rdzv-id"},
                  .value_name = "<id>",
                  .help = "the launch id the processes get in ACCEL_LAUNCH_ID",
                  .apply = [&o](std::string_view, std::string_view value) -> std::string {
                    o.rdzv_id = std::string(value);
                    return "";
                  },
                  .needs = "an id",
                  .allow_empty = false},
      cli::Option{
          .names = {"-h", "--help"}, .help = "print this help", .apply = cli::SetFlag(o.help), .exits = true},
  };
}

bool IsOwnOption(const std::string& name, bool& takes_value) {
  ScriptOptions unused;
  for (const cli::Option& option : OwnOptions(unused))
    for (const std::string& spelling : option.names)
      if (spelling == name) {
        takes_value = !option.value_name.empty();
        return true;
      }
  return false;
}

bool EndsWith(const std::string& text, const std::string& suffix) {
  return text.size() >= suffix.size() &&
         text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

bool LooksLikeConfig(const std::string& path) {
  return EndsWith(path, ".yaml") || EndsWith(path, ".yml") || EndsWith(path, ".json");
}

// The command line cut where argparse cuts it: launch options, then the script and everything
// after it, which belongs to the script.
struct CommandLine {
  std::vector<std::string> options;
  std::string config;  // a config file given as the first argument that is not an option
  std::string script;
  std::vector<std::string> script_args;
  bool has_script = false;
};

// The option name of `arg` (`--num_processes` of `--num_processes=2`), or "" for a positional.
std::string OptionName(const std::string& arg) {
  if (arg.size() < 2 || arg[0] != '-') return "";
  return arg.substr(0, arg.find('='));
}

std::string Split(const std::vector<std::string>& args, CommandLine& line) {
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (arg == "--") {
      if (i + 1 >= args.size()) return "`--` must be followed by the script to run";
      line.script = args[i + 1];
      line.script_args.assign(args.begin() + i + 2, args.end());
      line.has_script = true;
      return "";
    }
    std::string name = OptionName(arg);
    if (name.empty()) {
      if (line.config.empty() && LooksLikeConfig(arg) && i + 1 < args.size()) {
        line.config = arg;
        continue;
      }
      line.script = arg;
      line.script_args.assign(args.begin() + i + 1, args.end());
      line.has_script = true;
      return "";
    }
    line.options.push_back(arg);
    bool own_takes_value = false;
    bool known = acc::IsLaunchOption(name) || IsOwnOption(name, own_takes_value);
    if (!known) {
      std::vector<std::string> names = acc::LaunchOptionNames();
      ScriptOptions unused;
      for (const cli::Option& option : OwnOptions(unused)) names.push_back(option.names.back());
      std::string guess = diag::ClosestMatch(name, names);
      return fmt::format("unknown option `{}`{}", name,
                         guess.empty() ? "" : fmt::format("; did you mean `{}`?", guess));
    }
    bool takes_value = acc::LaunchOptionTakesValue(name) || own_takes_value;
    if (takes_value && arg.find('=') == std::string::npos && i + 1 < args.size())
      line.options.push_back(args[++i]);
  }
  return "";
}

// Accelerate's default config file: $HF_HOME/accelerate/default_config.yaml, HF_HOME defaulting
// to $XDG_CACHE_HOME/huggingface, XDG_CACHE_HOME to ~/.cache.
std::string DefaultConfigFile(const launch::Environment& env) {
  auto get = [&env](const char* name) -> std::string {
    auto it = env.find(name);
    return it == env.end() ? "" : it->second;
  };
  std::string home = get("HF_HOME");
  if (home.empty()) {
    std::string cache = get("XDG_CACHE_HOME");
    if (cache.empty()) cache = get("HOME") + "/.cache";
    home = cache + "/huggingface";
  }
  if (!home.empty() && home[0] == '~') home = get("HOME") + home.substr(1);
  return home + "/accelerate/default_config.yaml";
}

acc::PyValue ToPython(const ast::Expr& expr);

acc::PyDict ToPython(const ast::Block& block) {
  acc::PyDict dict;
  for (const ast::Statement& statement : block.statements) {
    if (statement.path.empty()) continue;
    acc::PyValue value = statement.value   ? ToPython(*statement.value)
                         : statement.block ? acc::PyValue{ToPython(*statement.block)}
                                           : acc::PyValue{};
    dict.emplace_back(statement.path.front().text, std::move(value));
  }
  return dict;
}

// A config file's value as yaml.safe_load gave it to Accelerate (the reader types scalars as
// PyYAML does).
acc::PyValue ToPython(const ast::Expr& expr) {
  switch (expr.kind) {
    case ast::ExprKind::Int:
      return {expr.int_value};
    case ast::ExprKind::Float:
      return {expr.float_value};
    case ast::ExprKind::Bool:
      return {expr.bool_value};
    case ast::ExprKind::None:
      return {};
    case ast::ExprKind::List: {
      acc::PyList list;
      for (const ast::ExprPtr& item : expr.operands) list.push_back(ToPython(*item));
      return {list};
    }
    case ast::ExprKind::Record:
      return {expr.block ? ToPython(*expr.block) : acc::PyDict{}};
    case ast::ExprKind::Map: {
      acc::PyDict dict;
      for (size_t i = 0; i < expr.path.size() && i < expr.operands.size(); ++i)
        dict.emplace_back(expr.path[i].text, ToPython(*expr.operands[i]));
      return {dict};
    }
    default:
      return {expr.text};
  }
}

// Checks `path` as `accelc check` does and reads it as Accelerate would. Prints the findings;
// fails on an error (what Accelerate raises on or misreads) and on a file that is not an
// Accelerate config.
std::optional<acc::ConfigFile> CheckConfig(const std::string& path) {
  diag::DiagnosticEngine stdlib_diagnostics;
  auto stdlib = pipeline::Stdlib::Load(stdlib_diagnostics);
  sema::ProcessEnvironment environment;
  pipeline::CompileOptions options;
  options.lower = false;
  options.tool = "accelerate";
  pipeline::Compilation compilation = pipeline::CompileFile(path, *stdlib, environment, options);
  bool color = isatty(STDERR_FILENO) && std::getenv("NO_COLOR") == nullptr;
  fmt::print(stderr, "{}", diag::RenderText(compilation.diagnostics.diagnostics(), {color}));
  if (compilation.diagnostics.has_errors()) {
    fmt::print(stderr,
               "accelrun: error: `{}` has errors (above) that `accelerate launch` fails on or misreads\n",
               path);
    return std::nullopt;
  }
  if (compilation.root_record != "ClusterConfig" && compilation.root_record != "SageMakerConfig") {
    fmt::print(stderr,
               "accelrun: error: `{}` is {}, not an Accelerate config file (`accelerate config` writes one); "
               "a script is launched with an Accelerate config, or with launch options alone\n",
               path,
               compilation.root_record == "DeepSpeedConfig"
                   ? "a DeepSpeed config (name it with "
                     "`deepspeed_config_file` in an Accelerate config)"
                   : "a job spec");
    return std::nullopt;
  }
  acc::ConfigFile config{path, {}};
  if (compilation.tree && !compilation.tree->jobs.empty())
    config.values = ToPython(compilation.tree->jobs.front().body);
  // Accelerate's loader keeps a null key as None, which is not always its absence: a null
  // `distributed_type` is not NO, so no `num_processes` of 1 is filled in.
  for (const std::string& name : compilation.null_keys) {
    std::erase_if(config.values, [&name](const auto& entry) { return entry.first == name; });
    config.values.emplace_back(name, acc::PyValue{});
  }
  return config;
}

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

std::string RandomHex(int bytes) {
  std::random_device random;
  std::string out;
  for (int i = 0; i < bytes; ++i) out += fmt::format("{:02x}", random() & 0xff);
  return out;
}

// A random UUID (version 4), as torchrun names a standalone launch.
std::string NewRunId() {
  std::string hex = RandomHex(16);
  hex[12] = '4';
  hex[16] = "89ab"[std::stoi(hex.substr(16, 1), nullptr, 16) & 3];
  return fmt::format("{}-{}-{}-{}-{}", hex.substr(0, 8), hex.substr(8, 4), hex.substr(12, 4),
                     hex.substr(16, 4), hex.substr(20));
}

acc::Host ThisHost(const launch::Environment& env) {
  acc::Host host;
  host.env = env;
  host.cuda_devices = CudaDeviceCount(env);
  host.physical_cores = launch::PhysicalCoreCount();
  host.python = FindOnPath({"python3", "python"});
  std::error_code ec;
  host.cwd = fs::current_path(ec).string();
  host.port_in_use = PortInUse;
  host.free_port = launch::PickFreePort;
  host.new_run_id = NewRunId;
  host.find_mpirun = FindMpirun;
  return host;
}

// A path (`./a.out`) is kept as written: the process starts in this directory, and the program
// sees its argv[0] as `accelerate launch` passes it. A bare name is looked up on PATH, which the
// spawner does not search.
std::string Resolve(const std::string& program) {
  if (program.find('/') != std::string::npos) return program;
  llvm::ErrorOr<std::string> found = llvm::sys::findProgramByName(program);
  return found ? *found : program;
}

struct Process {
  int rank = 0;
  int local_rank = 0;
  launch::WorkerSpec spec;
};

// The torchrun workers this launcher starts. Under srun or mpirun, the scheduler's placement
// wins, as it does for plans: with one task per machine each task is that machine's launcher
// (its machine rank from the scheduler unless `--machine_rank` was given); with one task per
// rank each task starts its own rank. The rendezvous host is then the scheduler's first node
// unless `main_process_ip` was given. `notes` says what the scheduler decided.
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

// Where torch's `@record` writes a failing worker's error, as torchrun lays it out: one file per
// attempt and local rank under `root`.
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

// What Accelerate appends to `.deepspeed_env` for DeepSpeed's runner to export on every machine:
// each variable whose name and value are non-empty and free of `;`, newlines, `<`, `>` and
// spaces. Only the launch's variables: Accelerate writes its whole environment, the user's
// tokens included, into a file in the working directory.
void WriteDeepSpeedEnv(const std::map<std::string, std::string>& vars) {
  std::ofstream out(".deepspeed_env", std::ios::app);
  for (const auto& [name, value] : vars) {
    std::string both = name + value;
    if (name.empty() || value.empty() || both.find_first_of(";\n<> ") != std::string::npos) continue;
    out << name << '=' << value << '\n';
  }
}

void InstallSignalHandlers() {
  struct sigaction action {};
  action.sa_handler = [](int signal) { g_script_interrupted = signal; };
  for (int signal : {SIGINT, SIGTERM, SIGHUP, SIGQUIT}) sigaction(signal, &action, nullptr);
}

}  // namespace

bool IsScriptLaunch(const std::vector<std::string>& args) {
  // Options of the native launcher that take a value, so that their values are not read as
  // the script.
  static const std::vector<std::string> plan_values = {
      "--set",         "--output-dir",  "--launcher", "--nnodes", "--node-rank", "--nproc-per-node",
      "--master-addr", "--master-port", "--device",   "--resume", "--program",   "--rdzv-id"};
  std::vector<std::string> positionals;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (arg == "--") return true;
    std::string name = OptionName(arg);
    if (name.empty()) {
      positionals.push_back(arg);
      if (EndsWith(arg, ".py") || positionals.size() == 2) return true;
      continue;
    }
    if (name == "-m" || name == "--module" || name == "--no_python" || name == "--no-python" ||
        name == "--config_file" || name == "--config-file")
      return true;
    bool takes = acc::LaunchOptionTakesValue(name) ||
                 std::find(plan_values.begin(), plan_values.end(), name) != plan_values.end();
    if (takes && arg.find('=') == std::string::npos) ++i;
  }
  return false;
}

std::string ScriptUsage() {
  ScriptOptions unused;
  return R"(usage: accelrun [config.yaml] [accelerate launch options] [options] script.py [script args]
       accelrun [config.yaml] [options] -m module [args]
       accelrun [config.yaml] [options] --no_python program [args]

Starts a Python script exactly as `accelerate launch` does: the same processes (one, or one
per GPU through torchrun's topology, or mpirun), the same commands and the same environment
(ACCELERATE_*, FSDP_*, MEGATRON_LM_*, RANK, WORLD_SIZE, ...), from the config file (given
first, with --config_file, or Accelerate's default config) and the options of `accelerate
launch` (`--num_processes 4`, `--mixed_precision bf16`, `--use_fsdp`, ...), which override the
file as in Accelerate. The config file is checked first, as `accelc check` checks it; its
errors stop the launch. Output is relayed with `[rank N]` prefixes; when a process fails the
others are stopped and the first failure is named with its last lines. `--max_restarts N`
starts the whole job again, with TORCHELASTIC_RESTART_COUNT counting up.

options (besides `accelerate launch`'s):
)" + cli::FormatOptions(OwnOptions(unused), 27) +
         R"(
progress (optional): a rank that writes `S <what>\n` to the descriptor in ACCEL_PROGRESS_FD
(for instance each step) is watched: silent past --progress-timeout, the job is stopped and
it is named. A rank that never writes is never stopped for silence.
)";
}

int RunScriptCommand(const std::vector<std::string>& args) {
  CommandLine line;
  if (std::string error = Split(args, line); !error.empty()) {
    fmt::print(stderr, "accelrun: error: {}\n", error);
    return kExitUsage;
  }
  acc::LaunchNamespace ns = acc::DefaultNamespace();
  ScriptOptions own;
  std::vector<cli::Option> table = acc::LaunchOptions(ns);
  for (cli::Option& option : OwnOptions(own)) table.push_back(std::move(option));
  std::string error = cli::Parse(line.options, table, [](const std::string& arg) {
    return fmt::format("unexpected argument `{}`", arg);
  });
  if (own.help) {
    fmt::print("{}", ScriptUsage());
    return 0;
  }
  if (error.empty() && !line.has_script)
    error = "missing the script to run (`accelrun [config.yaml] train.py`)";
  if (!error.empty()) {
    fmt::print(stderr, "accelrun: error: {}\n", error);
    return kExitUsage;
  }
  // The script's own name is argparse's too: Accelerate records it as given.
  ns.given.insert("training_script");
  ns.given.insert("training_script_args");

  launch::Environment env = launch::CurrentEnvironment();
  std::string config_path = line.config;
  if (const std::string* flag = ns.Get("config_file").String()) {
    if (!config_path.empty() && *flag != config_path) {
      fmt::print(stderr, "accelrun: error: two config files: `{}` and `--config_file {}`; give one\n",
                 config_path, *flag);
      return kExitUsage;
    }
    config_path = *flag;
  }
  if (config_path.empty() && !acc::Truthy(ns.Get("cpu"))) {
    std::string fallback = DefaultConfigFile(env);
    std::error_code ec;
    if (fs::is_regular_file(fallback, ec)) config_path = fallback;
  }
  if (!config_path.empty()) ns.Set("config_file", {config_path});
  std::optional<acc::ConfigFile> config;
  if (!config_path.empty()) {
    std::error_code ec;
    if (!fs::is_regular_file(config_path, ec)) {
      fmt::print(stderr, "accelrun: error: the config file `{}` does not exist\n", config_path);
      return kExitUsage;
    }
    config = CheckConfig(config_path);
    if (!config) return kExitUsage;
  }

  acc::Host host = ThisHost(env);
  if (host.python.empty() && !acc::Truthy(ns.Get("no_python"))) {
    fmt::print(stderr,
               "accelrun: error: no python3 or python on PATH to run `{}` with; activate the environment "
               "that has Accelerate, or pass `--no_python` for a program\n",
               line.script);
    return kExitUsage;
  }
  llvm::Expected<acc::ScriptLaunch> planned =
      acc::PlanScriptLaunch(ns, config, line.script, line.script_args, host);
  if (!planned) {
    fmt::print(stderr, "accelrun: error: {}\n", llvm::toString(planned.takeError()));
    return kExitUsage;
  }
  acc::ScriptLaunch& plan = *planned;
  std::vector<std::string> notes;
  if (own.rehearse_on_cpu) {
    // Without it, Accelerate's workers on a machine without CUDA each train alone.
    plan.env["ACCELERATE_USE_CPU"] = "True";
    notes.push_back(
        "rehearsal on CPU (--device cpu): ACCELERATE_USE_CPU=True, one Gloo group; an FSDP or "
        "DeepSpeed config runs as MULTI_CPU there, without its plugin");
  }
  llvm::Expected<std::vector<acc::WorkerPlace>> places = Places(plan, ns, env, notes);
  if (!places) {
    fmt::print(stderr, "accelrun: error: {}\n", llvm::toString(places.takeError()));
    return kExitUsage;
  }
  bool starts_every_rank = places->size() == static_cast<size_t>(plan.nproc_per_node * plan.nnodes);
  if (llvm::Error error = acc::CheckPort(plan, host, starts_every_rank)) {
    fmt::print(stderr, "accelrun: error: {}\n", llvm::toString(std::move(error)));
    return kExitUsage;
  }
  int max_restarts = plan.max_restarts;
  if (max_restarts > 0 && plan.nnodes > 1) {
    fmt::print(
        stderr,
        "accelrun: error: `--max_restarts {}` restarts the processes this machine started, which could not "
        "rejoin the other machines' ranks; restart multi-machine jobs from the scheduler (Slurm: `sbatch "
        "--requeue`)\n",
        max_restarts);
    return kExitUsage;
  }
  launch::LaunchId launch_id = launch::ResolveLaunchId(own.rdzv_id, env, plan.nnodes == 1);
  auto tmpdir = env.find("TMPDIR");
  std::string error_root = fmt::format("{}/accelrun-{}-{}", tmpdir != env.end() ? tmpdir->second : "/tmp",
                                       ::getpid(), RandomHex(8));
  if (own.dry_run && launch_id.generated) launch_id.id = "<new for each launch>";
  std::vector<Process> processes = Processes(plan, *places, env, 0, launch_id.id, error_root);
  if (own.dry_run && own.json) {
    PrintDryRunJson(plan, processes);
    return 0;
  }
  fmt::print("accelrun: {}{}\n", Summary(plan, processes.size(), line.script, config_path),
             own.dry_run ? "; dry run" : "");
  for (const std::string& note : notes) fmt::print("accelrun: {}\n", note);
  for (const std::string& warning : plan.warnings) fmt::print("accelrun: note: {}\n", warning);
  if (own.dry_run) {
    PrintDryRunText(processes);
    return 0;
  }
  if (plan.launcher == "deepspeed") {
    if (!llvm::sys::findProgramByName("deepspeed")) {
      fmt::print(
          stderr,
          "accelrun: error: a multi-machine DeepSpeed launch that is not `deepspeed_multinode_launcher: "
          "standard` starts every machine's processes through DeepSpeed's `deepspeed` runner, which is not "
          "on PATH; install DeepSpeed (and the launcher it uses: pdsh, Open MPI, MVAPICH), or set "
          "`deepspeed_multinode_launcher: standard` and run accelrun on each machine\n");
      return kExitUsage;
    }
    WriteDeepSpeedEnv(plan.env);
  }
  std::fflush(stdout);

  auto interrupted = [] { return g_script_interrupted.load() != 0; };
  constexpr size_t kMaxQueuedOutput = 64 << 20;
  launch::AsyncPrinter printer(launch::PrintToStandardStream, kMaxQueuedOutput);
  int world_size = plan.runner == acc::Runner::kProcess || places->empty() ? 1 : places->front().world_size;
  launch::RestartHooks hooks;
  hooks.resume_note = "the script resumes from what it saved, if it loads it";
  hooks.prepare = [&](int attempt) -> llvm::Expected<launch::LaunchOptions> {
    launch::LaunchOptions options;
    std::error_code ec;
    for (const acc::WorkerPlace& place : *places)
      fs::create_directories(fs::path(ErrorFile(error_root, attempt, place.local_rank)).parent_path(), ec);
    for (Process& process : Processes(plan, *places, env, attempt, launch_id.id, error_root))
      options.workers.push_back(process.spec);
    options.world_size = world_size;
    options.prefix_output = world_size > 1;
    options.workers_speak_exit_codes = false;
    options.early_exit_limit = own.early_exit_limit;
    // Only a rank that reports progress is watched for silence: a script that never does is
    // never stopped for it.
    options.collective_timeout = own.progress_timeout;
    options.first_word_limit = std::chrono::hours(24 * 365);
    options.interrupted = interrupted;
    options.print = printer.AsPrinter();
    return options;
  };
  hooks.wait = [](std::chrono::milliseconds delay) {
    auto end = std::chrono::steady_clock::now() + delay;
    while (g_script_interrupted.load() == 0 && std::chrono::steady_clock::now() < end)
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    return g_script_interrupted.load() == 0;
  };
  hooks.say = [&printer](const std::string& message) {
    printer.Print(launch::OutputStream::kStderr, "accelrun: " + message + "\n");
  };
  InstallSignalHandlers();
  launch::PosixSpawner spawner;
  launch::LaunchResult result = launch::RunWithRestarts({.max_restarts = max_restarts}, hooks, spawner);
  printer.Flush();
  std::error_code ec;
  fs::remove_all(error_root, ec);
  if (!result.success) {
    fmt::print(stderr, "accelrun: error: {}\n", result.message);
    if (int signal = g_script_interrupted.load()) return 128 + signal;
    return kExitFailed;
  }
  return 0;
}

}  // namespace accel::tools
