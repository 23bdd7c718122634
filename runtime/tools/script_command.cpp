// `accelrun [cfg.yaml] [launch options] train.py [args]`: a user's Python script launched as
// `accelerate launch` launches it (the same processes, commands and environment, computed by
// runtime/launch/accelerate), with accelrun's supervision around it: rank-labelled output, the
// first failing rank named with its last lines, every process stopped on a failure, a rank that
// leaves early named, and whole-job restarts.
//
// This file runs the steps in order and supervises the processes; the steps are the
// script_*.cpp files beside it (script_command_internal.h).
#include "runtime/tools/script_command.h"

#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <thread>

#include <fmt/format.h>

#include "llvm/Support/Program.h"
#include "runtime/launch/accelerate/launch_flags.h"
#include "runtime/launch/accelerate/launch_plan.h"
#include "runtime/launch/async_printer.h"
#include "runtime/launch/cluster.h"
#include "runtime/launch/launch_id.h"
#include "runtime/launch/launcher.h"
#include "runtime/launch/process.h"
#include "runtime/launch/restarts.h"
#include "runtime/tools/script_command_internal.h"

namespace accel::tools {
namespace {

namespace fs = std::filesystem;
namespace launch = rt::launch;
namespace acc = rt::launch::accelerate;

constexpr int kExitFailed = 1;
constexpr int kExitUsage = 2;

std::atomic<int> g_script_interrupted{0};

void InstallSignalHandlers() {
  struct sigaction action {};
  action.sa_handler = [](int signal) { g_script_interrupted = signal; };
  for (int signal : {SIGINT, SIGTERM, SIGHUP, SIGQUIT}) sigaction(signal, &action, nullptr);
}

}  // namespace

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
    options.work_limit = own.progress_timeout + options.watchdog_margin;
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
