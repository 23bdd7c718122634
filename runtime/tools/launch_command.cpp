#include "runtime/tools/launch_command.h"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <thread>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "compiler/cli/shell_word.h"
#include "compiler/plan/plan_paths.h"
#include "compiler/plan/runtime_limits.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/Program.h"
#include "runtime/checkpoint/atomic_file.h"
#include "runtime/launch/async_printer.h"
#include "runtime/launch/directory_lock.h"
#include "runtime/launch/rendezvous_port.h"
#include "runtime/launch/launch_id.h"
#include "runtime/launch/launcher.h"
#include "runtime/launch/mpirun.h"
#include "runtime/launch/plan_env.h"
#include "runtime/launch/rehearsal.h"
#include "runtime/launch/restarts.h"
#include "runtime/launch/resume_point.h"
#include "runtime/observe/metrics_history.h"
#include "runtime/observe/sparkline.h"
#include "runtime/tools/plan_input.h"
#include "runtime/tools/torch_facts.h"
#include "runtime/tools/worker_executable.h"

namespace accel::tools {
namespace {

namespace fs = std::filesystem;
namespace launch = rt::launch;

// The run directory keeps the verdict of a failed launch, with the named rank's error as it was
// printed (a TorchScript model's traceback included): a log may be gone, the directory stays.
constexpr const char* kFailureFile = "failure.txt";

void WriteFailure(const std::filesystem::path& path, const launch::LaunchResult& result) {
  std::string text = "accelrun: error: " + result.message + "\n";
  if (!result.failed_error.empty()) {
    text += fmt::format("\nrank {}'s error as it printed it:\n", result.failed_rank);
    for (const std::string& line : result.failed_error) text += line + "\n";
  }
  // Best effort: the verdict is on the console already.
  if (llvm::Error error = rt::checkpoint::WriteFileAtomically(path.string(), {text}))
    llvm::consumeError(std::move(error));
}

constexpr int kExitFailed = 1;
constexpr int kExitUsage = 2;

// The signal that asked the launcher to stop (SIGINT, SIGTERM, SIGHUP, SIGQUIT), or 0.
std::atomic<int> g_interrupted{0};

// The variables every worker gets besides its rank's: the plan's Accelerate variables, threads
// and malloc settings. `threads` says what was decided about threads.
std::map<std::string, std::string> CommonEnvironment(const plan::Plan& plan,
                                                     const LaunchCommandOptions& options,
                                                     const launch::Topology& topology,
                                                     const launch::Environment& env,
                                                     launch::ThreadChoice& threads) {
  std::map<std::string, std::string> common = launch::AccelerateEnvironment(plan);
  auto inherited = [&env](const char* name) -> std::optional<std::string> {
    auto it = env.find(name);
    return it == env.end() ? std::nullopt : std::optional<std::string>(it->second);
  };
  threads =
      launch::ChooseThreads(options.cpu_threads, inherited("OMP_NUM_THREADS"), topology.cpus_per_worker,
                            launch::IsCpuRun(plan), launch::PhysicalCoreCount(), topology.local_world_size);
  if (threads.set) common["OMP_NUM_THREADS"] = *threads.set;

  if (!inherited("ACCEL_NO_HUGEPAGES"))
    common["GLIBC_TUNABLES"] = launch::WithHugePageMalloc(inherited("GLIBC_TUNABLES").value_or(""));
  return common;
}

void PrintDryRun(const launch::LaunchOptions& launch_options) {
  for (const launch::WorkerSpec& worker : launch_options.workers) {
    fmt::print("rank {} (local rank {})\n", worker.rank, worker.env.at("LOCAL_RANK"));
    std::string command;
    for (const std::string& arg : worker.argv) command += (command.empty() ? "" : " ") + cli::ShellWord(arg);
    fmt::print("  command: {}\n", command);
    // std::map: sorted by name.
    for (const auto& [name, value] : worker.env) fmt::print("  env: {}={}\n", name, cli::ShellWord(value));
  }
}

// Every line of `text` (a final newline is added) starting with `prefix`.
std::string PrefixLines(const std::string& prefix, const std::string& text) {
  std::string out;
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    out += prefix + text.substr(start, end - start) + "\n";
    start = end + 1;
  }
  return out;
}

void InstallSignalHandlers() {
  struct sigaction action {};
  action.sa_handler = [](int signal) { g_interrupted = signal; };
  // The workers lead their own process groups, so the terminal's signals reach only this
  // process: every stop request is turned into stopping the workers.
  for (int signal : {SIGINT, SIGTERM, SIGHUP, SIGQUIT}) sigaction(signal, &action, nullptr);
}

// The loss over the run as ` ▇▅▃▂▁ (min X, max Y)`, from metrics.jsonl; "" when it cannot be
// read, since the done line must not fail a run that succeeded.
std::string LossSparkline(const fs::path& output_dir) {
  constexpr size_t kWidth = 24;
  llvm::Expected<rt::observe::MetricsHistory> history =
      rt::observe::ReadMetricsHistory((output_dir / "metrics.jsonl").string());
  if (!history) {
    llvm::consumeError(history.takeError());
    return "";
  }
  const rt::observe::Series* loss = history->Find("loss");
  if (loss == nullptr) return "";
  std::string line =
      rt::observe::FormatSparkline(rt::observe::DrawSparkline(rt::observe::Values(*loss), kWidth));
  return line.empty() ? "" : " " + line;
}

// After a successful run: rank 0's metrics, when this machine has them.
void PrintDone(const fs::path& output_dir, double seconds) {
  std::optional<std::string> text = ReadWholeFile((output_dir / "metrics.json").string());
  llvm::Expected<llvm::json::Value> metrics = llvm::json::parse(text.value_or(""));
  if (text && metrics && metrics->getAsObject()) {
    const llvm::json::Object& m = *metrics->getAsObject();
    int64_t steps = m.getInteger("steps").getValueOr(0);
    llvm::Optional<int64_t> resumed = m.getInteger("resumed_at_step");
    if (resumed && *resumed >= steps) {
      // Nothing trained: a loss line would only repeat the earlier launch's.
      fmt::print(
          "accelrun: done in {:.2f} s: the run was already complete (resumed at step {} of {}), nothing was "
          "trained; model {}\naccelrun: to train longer, raise `train.steps` and resume with "
          "`--allow-schedule-change`, or start a new run without `--resume`\n",
          seconds, *resumed, steps, m.getString("model_file").getValueOr("").str());
      return;
    }
    fmt::print("accelrun: done in {:.2f} s: loss {:.6f} -> {:.6f}{}{}; model {}\n", seconds,
               m.getNumber("first_loss").getValueOr(0), m.getNumber("final_loss").getValueOr(0),
               LossSparkline(output_dir), resumed ? fmt::format(" (resumed at step {})", *resumed) : "",
               m.getString("model_file").getValueOr("").str());
    return;
  }
  if (!metrics) llvm::consumeError(metrics.takeError());
  fmt::print("accelrun: done in {:.2f} s\n", seconds);
}

// Whether this launcher starts the job's rank 0, the rank that writes the output.
bool StartsRankZero(const launch::Topology& topology) {
  for (const launch::Slot& slot : topology.slots)
    if (slot.rank == 0) return true;
  return false;
}

// Locks every directory the job writes into: the output directory, and the checkpoints'
// project directory when it is another. Taken by rank 0's launcher, before plan.json is
// written, and held until the launcher exits.
llvm::Expected<std::vector<launch::DirectoryLock>> LockJobDirectories(const plan::Plan& plan,
                                                                      const fs::path& output_dir,
                                                                      const std::string& launch_id) {
  char host[256] = "?";
  ::gethostname(host, sizeof host - 1);
  std::time_t now = std::time(nullptr);
  char since[32];
  std::strftime(since, sizeof since, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
  std::string holder = fmt::format("accelrun pid {} on {}, launch {}, since {}", ::getpid(), host,
                                   launch_id.empty() ? "without an id" : launch_id, since);
  std::vector<launch::DirectoryLock> locks;
  llvm::Expected<launch::DirectoryLock> output = launch::DirectoryLock::Acquire(output_dir.string(), holder);
  if (!output) return output.takeError();
  locks.push_back(std::move(*output));
  const auto* checkpoint = plan.Find<plan::Checkpoint>();
  if (checkpoint == nullptr || checkpoint->project_dir.empty()) return locks;
  // Compared once the output directory exists (Acquire creates it): a project directory that is
  // the same folder, however spelt, is claimed once. A second flock on it would refuse this job
  // in its own name.
  std::error_code ec;
  fs::path project = checkpoint->project_dir;
  if (fs::exists(project, ec) && fs::equivalent(project, output_dir, ec)) return locks;
  llvm::Expected<launch::DirectoryLock> lock = launch::DirectoryLock::Acquire(project.string(), holder);
  if (!lock) return lock.takeError();
  locks.push_back(std::move(*lock));
  return locks;
}

// Where the plan's workers compute (docs/launch.md): `--device cpu` turns a plan for an
// accelerator into its rehearsal on the CPU; a CUDA plan that stays one needs a CUDA device,
// which the worker's LibTorch is asked about before anything starts; a plan for another
// accelerator (XPU, NPU, ...) runs only as a rehearsal. Returns the exit code of a refusal,
// else 0 with the rehearsal's changes in `changes`.
int ChooseDevice(plan::Plan& plan, const LaunchCommandOptions& options, const char* argv0,
                 std::vector<std::string>& changes) {
  const auto* init = plan.Find<plan::InitProcessGroup>();
  if (options.device == plan::Device::cuda && init->device != plan::Device::cuda) {
    if (init->device != plan::Device::cpu) {
      fmt::print(stderr,
                 "accelrun: error: `{}` is a job for {}, not CUDA devices: `--device cuda` runs CUDA plans "
                 "only; rehearse it on this machine with `--device cpu`\n",
                 options.input, launch::DeviceDescription(init->device));
      return kExitUsage;
    }
    fmt::print(stderr,
               "accelrun: error: `{}` is a CPU job (device cpu{}): `--device cuda` runs GPU jobs (MULTI_GPU, "
               "FSDP, DEEPSPEED) only\n",
               options.input, init->rehearsal ? ", a rehearsal compiled with `compute.use_cpu`" : "");
    return kExitUsage;
  }
  if (options.device != plan::Device::cpu && init->device != plan::Device::cpu &&
      init->device != plan::Device::cuda) {
    fmt::print(stderr, "accelrun: error: {}\n", launch::OtherAcceleratorError(plan, options.input));
    return kExitUsage;
  }
  if (options.device == plan::Device::cpu || init->rehearsal) changes = launch::RehearseOnCpu(plan);
  if (init->device != plan::Device::cuda) return 0;
  // A dry run starts nothing: a GPU plan can be inspected on a laptop without a CUDA LibTorch.
  if (options.dry_run) return 0;
  llvm::Expected<TorchFacts> facts = AskWorkerForFacts(WorkerExecutable(argv0));
  std::string why;
  if (!facts) {
    why = fmt::format("whether this machine has CUDA is unknown ({})", llvm::toString(facts.takeError()));
  } else if (!facts->cuda_compiled) {
    why = fmt::format("the workers' CUDA back end does not load ({})", facts->cuda);
  } else if (facts->devices.empty()) {
    why = fmt::format("the workers' LibTorch {} (CUDA {}) sees no CUDA device", facts->version, facts->cuda);
  }
  if (why.empty()) return 0;
  fmt::print(stderr, "accelrun: error: {}\n", launch::NoCudaError(plan, options.input, why));
  return kExitUsage;
}

// A plan whose `init_process_group.mpirun_hostfile` is set, run where no scheduler placed this
// launcher, starts its job as `accelerate launch` does with `mpirun_config`: mpirun with the
// host file, the processes per machine and in all, each task this launcher with the same
// arguments (docs/launch.md). This process becomes mpirun; it returns only to refuse (exit 2:
// no mpirun on PATH, or it could not be started) or after a dry run (0).
int StartThroughMpirun(const plan::Plan& plan, const LaunchCommandOptions& options,
                       const fs::path& inputs_dir) {
  const auto* init = plan.Find<plan::InitProcessGroup>();
  fs::path hostfile = init->mpirun_hostfile;
  if (hostfile.is_relative()) hostfile = (inputs_dir / hostfile).lexically_normal();
  std::string mpirun;
  for (const char* name : {"mpirun", "mpiexec"}) {
    if (llvm::ErrorOr<std::string> found = llvm::sys::findProgramByName(name)) {
      mpirun = *found;
      break;
    }
  }
  if (mpirun.empty()) {
    fmt::print(
        stderr,
        "accelrun: error: `{}` starts its job through mpirun (`compute.mpirun_config.mpirun_hostfile = "
        "{}`), but neither mpirun nor mpiexec is on PATH; install Open MPI, Intel MPI or MPICH, or run "
        "every process on this machine with `--launcher local`\n",
        options.input, init->mpirun_hostfile);
    return kExitUsage;
  }
  // accelerate launch tells the flavors apart by what `mpirun --version` prints.
  launch::MpiFlavor flavor = launch::DetectMpiFlavor(mpirun);
  std::error_code ec;
  fs::path self = fs::canonical("/proc/self/exe", ec);
  std::vector<std::string> args = options.args;
  if (options.self_test) args.insert(args.begin(), "test");
  std::vector<std::string> argv =
      launch::MpirunCommand(mpirun, flavor, hostfile.string(), static_cast<int>(init->processes_per_machine),
                            static_cast<int>(init->num_machines * init->processes_per_machine),
                            launch::MpirunTask(ec ? std::string("accelrun") : self.string(), args));
  // accelerate launch hands mpirun the rendezvous in MASTER_ADDR and MASTER_PORT, which every
  // task's launcher reads before the plan's (an MPI job over several machines needs them).
  std::string addr = init->main_process_ip;
  std::string port = std::to_string(init->main_process_port);
  std::vector<std::string> words = {"MASTER_ADDR=" + cli::ShellWord(addr), "MASTER_PORT=" + port};
  for (const std::string& arg : argv) words.push_back(cli::ShellWord(arg));
  fmt::print(
      "accelrun: job `{}` ({}): starting it through mpirun ({}), as `accelerate launch` does with "
      "`mpirun_config`: {} machines x {} processes from {}{}\n",
      plan.job, plan.hash.substr(0, 19), launch::MpiFlavorName(flavor), init->num_machines,
      init->processes_per_machine, hostfile.string(), options.dry_run ? "; dry run, nothing is started" : "");
  fmt::print("accelrun: {}\n", fmt::join(words, " "));
  std::fflush(stdout);
  if (options.dry_run) return 0;
  ::setenv("MASTER_ADDR", addr.c_str(), 1);
  ::setenv("MASTER_PORT", port.c_str(), 1);
  std::vector<char*> c_argv;
  for (std::string& arg : argv) c_argv.push_back(arg.data());
  c_argv.push_back(nullptr);
  ::execv(mpirun.c_str(), c_argv.data());
  fmt::print(stderr, "accelrun: error: cannot start {}: {}\n", mpirun, std::strerror(errno));
  return kExitUsage;
}

}  // namespace

int RunLaunchCommand(const LaunchCommandOptions& options, const char* argv0) {
  auto started = std::chrono::steady_clock::now();
  // A compiled plan is JSON; anything else (`.accel`, a YAML job spec) is compiled here.
  bool is_spec = fs::path(options.input).extension() != ".json";
  std::vector<std::string> overrides = options.overrides;
  if (options.num_processes)
    overrides.push_back(fmt::format("compute.num_processes={}", *options.num_processes));
  if (!is_spec && !overrides.empty()) {
    fmt::print(
        stderr,
        "accelrun: error: `--set` and `--num-processes` change a spec before it is compiled, and `{}` is a "
        "compiled plan; run the spec, or recompile with `accelc build SPEC --set ...` (`--nproc-per-node` "
        "places a plan's processes)\n",
        options.input);
    return kExitUsage;
  }
  std::optional<plan::Plan> plan = is_spec ? CompileSpec(options.input, overrides) : LoadPlan(options.input);
  if (!plan) return is_spec ? kExitFailed : kExitUsage;
  const auto* init = plan->Find<plan::InitProcessGroup>();
  const auto* save = plan->Find<plan::SaveModel>();
  if (init == nullptr || save == nullptr) {
    fmt::print(stderr, "accelrun: error: `{}` has no init_process_group or save_model step\n", options.input);
    return kExitUsage;
  }
  std::vector<std::string> rehearsal_changes;
  if (int refused = ChooseDevice(*plan, options, argv0, rehearsal_changes); refused != 0) return refused;
  launch::Environment env = launch::CurrentEnvironment();
  // The plan's input files are relative to the plan file's directory (a spec compiles them
  // relative to the working directory); the workers read the copy in the output directory, so
  // they are told where that is.
  std::error_code cwd_error;
  fs::path plan_dir = fs::path(options.input).parent_path();
  fs::path inputs_dir =
      fs::absolute(is_spec || plan_dir.empty() ? fs::path(".") : plan_dir, cwd_error).lexically_normal();
  // A job that starts through mpirun, where no scheduler placed this launcher yet: mpirun places
  // every task, and each task's launcher finds its rank (`--launcher local` runs it here instead).
  if (!init->mpirun_hostfile.empty() && options.placement.launcher == launch::LauncherKind::kAuto) {
    llvm::Expected<std::optional<launch::ClusterTask>> cluster =
        launch::DetectCluster(env, launch::LauncherKind::kAuto);
    if (cluster && !*cluster) return StartThroughMpirun(*plan, options, inputs_dir);
    if (!cluster) llvm::consumeError(cluster.takeError());  // ResolvePlacement reports it below
  }
  // A rehearsal keeps the plan's machines and processes per machine (a hybrid sharding's groups
  // follow them) but starts every process here, meeting on this machine.
  launch::PlanPlacement planned =
      init->rehearsal
          ? launch::PlanPlacement{1, static_cast<int>(init->num_machines * init->processes_per_machine),
                                  "127.0.0.1", static_cast<int>(init->main_process_port),
                                  launch::PortChosenBySpec(*plan)}
          : launch::PlanPlacement{static_cast<int>(init->num_machines),
                                  static_cast<int>(init->processes_per_machine), init->main_process_ip,
                                  static_cast<int>(init->main_process_port), launch::PortChosenBySpec(*plan)};
  // A port picked here is held until the job ends, and rank 0's store serves on it (HeldPort).
  std::optional<launch::HeldPort> held_port;
  auto hold_port = [&held_port] {
    held_port = launch::HeldPort::Open();
    return held_port ? held_port->port() : 0;
  };
  llvm::Expected<launch::Placement> placement =
      launch::ResolvePlacement(planned, options.placement, env, hold_port);
  if (!placement) {
    fmt::print(stderr, "accelrun: error: {}\n", llvm::toString(placement.takeError()));
    return kExitUsage;
  }
  const launch::Topology& topology = placement->topology;
  // A plan file may break a limit that `accelc build` refuses (written by hand, or by another
  // version), and `--nnodes` or a scheduler's placement may spread it over more machines than it
  // was built for (a rehearsal too): every limit is named here, for the machines it runs on,
  // before any process starts.
  const bool spread = topology.nnodes > init->num_machines;
  if (std::vector<plan::RuntimeLimit> broken =
          plan::RuntimeLimitsBroken(*plan, std::max<int64_t>(topology.nnodes, init->num_machines));
      !broken.empty()) {
    std::string where = spread ? fmt::format(" on {} machines", topology.nnodes) : "";
    for (const plan::RuntimeLimit& limit : broken)
      fmt::print(stderr, "accelrun: error: `{}`{}: {}\n", options.input, where, plan::Describe(limit));
    return kExitUsage;
  }
  if (topology.launched_by.empty() && env.count("SLURM_JOB_ID") && !env.count("SLURM_STEP_ID")) {
    placement->notes.push_back(
        "inside a Slurm allocation but not an srun step: starting the workers here; run `srun accelrun ...` "
        "for one task per rank");
  }

  if (options.dry_run && init->device == plan::Device::cuda)
    placement->notes.push_back("dry run: whether this machine's workers see a CUDA device is not checked");
  // Checked before anything is locked or written: a flag that cannot work is a usage error.
  int max_restarts = options.max_restarts.value_or(0);
  if (std::string why = launch::WhyRestartsCannotWork(topology); max_restarts > 0 && !why.empty()) {
    fmt::print(stderr, "accelrun: error: {}\n", why);
    return kExitUsage;
  }

  // A path the user named is checked before anything is written or started: a typo must not fail every rank, and then be "fixed"
  // by a restart that resumes another checkpoint (resume_point.h).
  if (!options.dry_run && !options.self_test) {
    if (std::string why = launch::WhyNotAResumePoint(options.resume); !why.empty()) {
      fmt::print(stderr, "accelrun: error: {}\n", why);
      return kExitUsage;
    }
  }

  launch::LaunchId launch_id = launch::ResolveLaunchId(options.placement.rdzv_id, env,
                                                       topology.launched_by.empty() && topology.nnodes == 1);
  // A dry run's output stays the same from run to run, like the launcher pid below.
  if (options.dry_run && launch_id.generated) launch_id.id = "<new for each launch>";
  if (launch_id.id.empty()) {
    placement->notes.push_back(
        "no launch id: a rank of another job that reaches this rendezvous is not told apart; pass the same "
        "`--rdzv-id` to every launcher of the job");
  }

  fs::path output_dir = options.output_dir.empty() ? fs::path(save->dir) : fs::path(options.output_dir);
  // Rank 0's progress line is redrawn in place when this launcher prints to a terminal.
  bool progress_tty = ::isatty(STDOUT_FILENO) == 1;
  fs::path plan_path = output_dir / "plan.json";
  // The copy the workers read is the plan as compiled (its hash names it on every machine);
  // the directories it places in its output directory follow `--output-dir` (plan_paths.h).
  plan::Plan moved = *plan;
  plan::MoveOutputDir(moved, output_dir);
  std::vector<launch::DirectoryLock> locks;
  if (!options.dry_run && StartsRankZero(topology)) {
    llvm::Expected<std::vector<launch::DirectoryLock>> taken =
        LockJobDirectories(moved, output_dir, launch_id.id);
    if (!taken) {
      fmt::print(stderr, "accelrun: error: {}\n", llvm::toString(taken.takeError()));
      return kExitFailed;
    }
    locks = std::move(*taken);
  }
  if (!options.dry_run) {
    std::string plan_json = plan::ToJson(*plan);
    if (llvm::Error error = rt::checkpoint::WriteFileAtomically(plan_path.string(), {plan_json})) {
      fmt::print(stderr, "accelrun: error: {}\n", llvm::toString(std::move(error)));
      return kExitUsage;
    }
  }

  launch::ThreadChoice threads;
  std::map<std::string, std::string> common = CommonEnvironment(*plan, options, topology, env, threads);
  common["ACCEL_LAUNCHER_PID"] = options.dry_run ? "<pid of accelrun>" : std::to_string(::getpid());
  // Checked before anything starts: a launcher without its workers names the missing file.
  std::string worker_executable =
      options.program.empty() ? WorkerExecutable(argv0)
                              : std::filesystem::absolute(options.program).lexically_normal().string();
  if (::access(worker_executable.c_str(), X_OK) != 0) {
    fmt::print(stderr, "accelrun: error: cannot start workers: {} is missing or not executable; {}\n",
               worker_executable,
               options.program.empty() ? "install it beside accelrun" : "build it, or check `--program`");
    return kExitUsage;
  }
  // The workers of one attempt: its rendezvous (port, launch id) and what it resumes from.
  auto make_workers = [&](const launch::Topology& at, const std::string& id, const std::string& resume) {
    launch::LaunchOptions made;
    for (const launch::Slot& slot : at.slots) {
      launch::WorkerSpec worker;
      worker.rank = slot.rank;
      worker.argv = {worker_executable,   plan_path.string(), "--output-dir",
                     output_dir.string(), "--inputs-dir",     inputs_dir.string()};
      if (!resume.empty()) worker.argv.insert(worker.argv.end(), {"--resume", resume});
      if (options.allow_schedule_change) worker.argv.push_back("--allow-schedule-change");
      if (progress_tty) worker.argv.push_back("--progress-tty");
      if (options.self_test) worker.argv.push_back("--self-test");
      worker.env = common;
      worker.env[launch::kEnvLaunchId] = id;
      for (auto& [name, value] : launch::RankEnvironment(at, slot)) worker.env[name] = value;
      if (slot.rank == 0 && held_port && held_port->port() == at.master_port) worker.store_listen_fd = held_port->fd();
      made.workers.push_back(std::move(worker));
    }
    made.prefix_output = at.world_size > 1;
    made.world_size = at.world_size;
    // The watchdog (docs/launch.md): no wait for peers may go silent for longer than the
    // plan's collective timeout, plus a margin for the collective's own error to arrive first.
    // Starting a worker (loading LibTorch) gets at least a minute, however short the timeout,
    // and a rank's own work, which says so while it runs, at least ten.
    made.collective_timeout = std::chrono::milliseconds(init->timeout);
    made.first_word_limit = launch::FirstWordLimit(made.collective_timeout, made.watchdog_margin);
    made.work_limit = options.own_work_limit
                          ? std::chrono::seconds(*options.own_work_limit) + made.watchdog_margin
                          : launch::OwnWorkLimit(made.collective_timeout, made.watchdog_margin);
    return made;
  };
  launch::LaunchOptions launch_options = make_workers(topology, launch_id.id, options.resume);

  // A restart continues the run from the newest checkpoint the job has written, else from what the
  // first attempt was asked to resume; a plan without checkpoints starts over, and the self-test
  // simply runs again.
  const plan::Checkpoint* checkpoint_step = moved.Find<plan::Checkpoint>();
  const auto launched = std::filesystem::file_time_type::clock::now();
  auto restart_resume = [&]() -> std::string {
    if (options.self_test) return options.resume;
    if (checkpoint_step == nullptr) return "";
    return launch::ResumeForRestart(*checkpoint_step, output_dir, options.resume, launched);
  };
  std::string resume_note = options.self_test ? "running the test again"
                            : checkpoint_step != nullptr
                                ? "resuming from the newest complete checkpoint (where it began, if it wrote none)"
                                : "starting over: the plan saves no checkpoints";
  if (max_restarts > 0) {
    placement->notes.push_back(fmt::format("up to {} restart{} after a failure, {}", max_restarts,
                                           max_restarts == 1 ? "" : "s", resume_note));
  }

  // Under srun or mpirun every task runs this launcher: the job's lines (which job, done) come
  // once, from rank 0's; each launcher's own placement and notes are marked as its own.
  std::string prefix = launch::LauncherPrefix(topology);
  bool speaks_for_job = prefix.empty();
  if (speaks_for_job) {
    // A rehearsal says so first, before anything that could be read as the GPU run's.
    if (init->rehearsal) fmt::print("accelrun: {}\n", launch::RehearsalBanner(*plan));
    fmt::print("accelrun: job `{}` ({}){}\n", plan->job, plan->hash.substr(0, 19),
               options.dry_run ? ": dry run, nothing is started" : "");
  } else if (options.dry_run) {
    fmt::print("{}accelrun: dry run, nothing is started\n", prefix);
  }
  fmt::print("{}accelrun: {}; rendezvous {}:{} ({}){}; {} thread{} per worker ({})\n", prefix,
             placement->summary, topology.master_addr, topology.master_port, placement->rendezvous_from,
             launch_id.id.empty() ? "" : fmt::format(", launch {} (from {})", launch_id.id, launch_id.from),
             threads.value, threads.value == "1" ? "" : "s", threads.from);
  for (const std::string& change : rehearsal_changes)
    fmt::print("{}accelrun: rehearsal: {}\n", prefix, change);
  for (const std::string& note : placement->notes) fmt::print("{}accelrun: note: {}\n", prefix, note);
  if (options.dry_run) {
    PrintDryRun(launch_options);
    return 0;
  }
  std::fflush(stdout);

  auto interrupted = [] { return g_interrupted.load() != 0; };
  // From here on, everything printed goes through one queue on its own thread: the launcher
  // keeps reading its workers' pipes even when nobody reads its own output.
  constexpr size_t kMaxQueuedOutput = 64 << 20;
  launch::AsyncPrinter printer(launch::PrintToStandardStream, kMaxQueuedOutput);
  launch::RestartHooks hooks;
  hooks.resume_note = resume_note;
  hooks.prepare = [&](int attempt) -> llvm::Expected<launch::LaunchOptions> {
    if (attempt == 0) {
      launch_options.interrupted = interrupted;
      launch_options.print = printer.AsPrinter();
      return launch_options;
    }
    // A new rendezvous per attempt: a port picked here is picked again (the old one's socket
    // may still hold the last attempt's connections), and a new launch id refuses any
    // straggler of the last attempt.
    llvm::Expected<launch::Placement> again =
        launch::ResolvePlacement(planned, options.placement, env, hold_port);
    if (!again) return again.takeError();
    launch::LaunchId id = launch::RestartLaunchId(launch_id, attempt);
    printer.Print(
        launch::OutputStream::kStdout,
        fmt::format("accelrun: restart {}: rendezvous {}:{} ({}), launch {}\n", attempt,
                    again->topology.master_addr, again->topology.master_port, again->rendezvous_from, id.id));
    launch::LaunchOptions next = make_workers(again->topology, id.id, restart_resume());
    next.interrupted = interrupted;
    next.print = printer.AsPrinter();
    return next;
  };
  hooks.wait = [](std::chrono::milliseconds delay) {
    auto end = std::chrono::steady_clock::now() + delay;
    while (g_interrupted.load() == 0 && std::chrono::steady_clock::now() < end)
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    return g_interrupted.load() == 0;
  };
  hooks.say = [&prefix, &printer](const std::string& line) {
    printer.Print(launch::OutputStream::kStderr, PrefixLines(prefix, "accelrun: " + line));
  };
  InstallSignalHandlers();
  // The failure of an earlier launch in this directory is not this one's.
  fs::path failure_file = output_dir / kFailureFile;
  std::error_code removed;
  if (speaks_for_job) fs::remove(failure_file, removed);
  launch::PosixSpawner spawner;
  launch::LaunchResult result = launch::RunWithRestarts({.max_restarts = max_restarts}, hooks, spawner);
  printer.Flush();  // the workers' last lines come before the verdict
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  if (!result.success) {
    fmt::print(stderr, "{}", PrefixLines(prefix, "accelrun: error: " + result.message));
    if (speaks_for_job && !result.interrupted) WriteFailure(failure_file, result);
    // Interrupted: the shell convention 128 + signal, so schedulers can tell it from a failure.
    if (int signal = g_interrupted.load()) return 128 + signal;
    return kExitFailed;
  }
  if (!speaks_for_job) return 0;
  if (options.self_test) {
    fmt::print("accelrun: test passed in {:.2f} s: ready for distributed training on world size {}\n",
               seconds, topology.world_size);
    return 0;
  }
  PrintDone(output_dir, seconds);
  return 0;
}

}  // namespace accel::tools
