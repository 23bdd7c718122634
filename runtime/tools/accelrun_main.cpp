// accelrun: runs an execution plan (or compiles and runs a `.accel` spec) on this machine:
// launches one worker per process, supervises them, and reports the result.
#include <signal.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "compiler/diagnostics/render.h"
#include "compiler/driver/compile.h"
#include "compiler/plan/plan.h"
#include "llvm/Support/JSON.h"
#include "runtime/checkpoint/atomic_file.h"
#include "runtime/launch/launcher.h"
#include "runtime/memory/estimate.h"
#include "runtime/support/blas.h"
#include "runtime/train/worker.h"

namespace {

namespace fs = std::filesystem;
namespace launch = accel::rt::launch;

constexpr int kExitFailed = 1;
constexpr int kExitUsage = 2;

constexpr const char* kUsage = R"(usage: accelrun [options] <spec.accel | plan.json>
       accelrun estimate-memory <checkpoint> [options]   (see `accelrun estimate-memory --help`)

Compiles the spec if needed, then starts one worker per process of the plan on this machine
and supervises them. If one worker fails, the others are stopped and the failed rank is named.

options:
  --output-dir <dir>     where the model, metrics.json and plan.json go (default: the plan's)
  --resume auto|<dir>    continue from the newest complete checkpoint of the plan's
                         `checkpoint` step (auto: start fresh when there is none), or from
                         the checkpoint <dir>; steps, data order and RNG continue exactly
  --node-rank <n>        this machine's rank in a multi-machine job (default 0)
  --master-addr <addr>   address of the rendezvous store (default: the plan's)
  --master-port <port>   port of the rendezvous store (default: a free port on one machine,
                         the plan's port across machines)
  -h, --help             print this help

environment:
  ACCEL_NO_HUGEPAGES=1   do not start workers with huge-page malloc
)";

struct Options {
  std::string input;
  std::string output_dir;
  std::string resume;
  int node_rank = 0;
  std::string master_addr;
  int master_port = 0;
  bool worker = false;
};

// The signal that asked the launcher to stop (SIGINT, SIGTERM, SIGHUP, SIGQUIT), or 0.
std::atomic<int> g_interrupted{0};

std::string ReadFile(const std::string& path, bool* ok) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream buffer;
  buffer << in.rdbuf();
  *ok = static_cast<bool>(in);
  return buffer.str();
}

// Parses argv into `options`; returns an error message or "".
std::string ParseArguments(int argc, char** argv, Options& options) {
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    auto next = [&]() -> const char* { return i + 1 < argc ? argv[++i] : nullptr; };
    auto integer = [&](int& out) -> bool {
      const char* text = next();
      if (text == nullptr) return false;
      char* end = nullptr;
      long value = std::strtol(text, &end, 10);
      out = static_cast<int>(value);
      return *end == '\0' && value >= 0 && value <= 65535;
    };
    if (arg == "--worker") {
      options.worker = true;
    } else if (arg == "--output-dir") {
      const char* dir = next();
      if (dir == nullptr) return "`--output-dir` needs a directory";
      options.output_dir = dir;
    } else if (arg == "--resume") {
      const char* resume = next();
      if (resume == nullptr || *resume == '\0') return "`--resume` needs `auto` or a checkpoint directory";
      options.resume = resume;
    } else if (arg == "--node-rank") {
      if (!integer(options.node_rank)) return "`--node-rank` needs a non-negative integer";
    } else if (arg == "--master-addr") {
      const char* addr = next();
      if (addr == nullptr) return "`--master-addr` needs an address";
      options.master_addr = addr;
    } else if (arg == "--master-port") {
      if (!integer(options.master_port)) return "`--master-port` needs a port number (0-65535)";
    } else if (!arg.empty() && arg[0] == '-') {
      return fmt::format("unknown option `{}`", arg);
    } else if (options.input.empty()) {
      options.input = arg;
    } else {
      return fmt::format("unexpected argument `{}`; accelrun runs one plan", arg);
    }
  }
  if (options.input.empty()) return "missing the spec or plan to run";
  return "";
}

int EnvInt(const char* name, int fallback) {
  const char* value = std::getenv(name);
  return value ? std::atoi(value) : fallback;
}

std::optional<accel::plan::Plan> LoadPlan(const std::string& path) {
  bool ok = false;
  std::string text = ReadFile(path, &ok);
  if (!ok) {
    fmt::print(stderr, "accelrun: error: cannot read `{}`\n", path);
    return std::nullopt;
  }
  llvm::Expected<accel::plan::Plan> plan = accel::plan::FromJson(text, path);
  if (!plan) {
    fmt::print(stderr, "accelrun: error: {}\n", llvm::toString(plan.takeError()));
    return std::nullopt;
  }
  return std::move(*plan);
}

int RunAsWorker(const Options& options) {
  // A worker must not outlive its launcher: if the launcher dies (even by SIGKILL), the kernel
  // kills this worker. The parent check covers a launcher that died before the prctl.
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (const char* launcher = std::getenv("ACCEL_LAUNCHER_PID");
      launcher && ::getppid() != std::atoi(launcher)) {
    fmt::print(stderr, "accelrun: error: the launcher is gone; stopping\n");
    return kExitFailed;
  }
  std::optional<accel::plan::Plan> plan = LoadPlan(options.input);
  if (!plan) return kExitUsage;
  accel::rt::train::WorkerContext context;
  context.rank = EnvInt(launch::kEnvRank, 0);
  context.world_size = EnvInt(launch::kEnvWorldSize, 1);
  if (const char* addr = std::getenv(launch::kEnvMasterAddr)) context.master_addr = addr;
  context.master_port = EnvInt(launch::kEnvMasterPort, 0);
  context.output_dir = options.output_dir;
  context.resume = options.resume;
  llvm::Expected<accel::rt::train::RunSummary> summary = accel::rt::train::RunWorker(*plan, context);
  if (!summary) {
    fmt::print(stderr, "accelrun: error: {}\n", llvm::toString(summary.takeError()));
    return kExitFailed;
  }
  return 0;
}

// Compiles a `.accel` spec with the embedded stdlib; prints diagnostics as accelc does.
std::optional<accel::plan::Plan> CompileSpec(const std::string& path) {
  accel::diag::DiagnosticEngine stdlib_diagnostics;
  auto stdlib = accel::driver::Stdlib::Load(stdlib_diagnostics);
  accel::sema::ProcessEnvironment environment;
  accel::driver::Compilation compilation = accel::driver::CompileFile(path, *stdlib, environment);
  bool color = isatty(STDERR_FILENO) && std::getenv("NO_COLOR") == nullptr;
  fmt::print(stderr, "{}", accel::diag::RenderText(compilation.diagnostics.diagnostics(), {color}));
  return std::move(compilation.plan);
}

int RunAsLauncher(const Options& options, const char* argv0) {
  auto started = std::chrono::steady_clock::now();
  bool is_spec = fs::path(options.input).extension() == ".accel";
  std::optional<accel::plan::Plan> plan = is_spec ? CompileSpec(options.input) : LoadPlan(options.input);
  if (!plan) return is_spec ? kExitFailed : kExitUsage;
  const auto* init = plan->Find<accel::plan::InitProcessGroup>();
  const auto* save = plan->Find<accel::plan::SaveModel>();
  if (init == nullptr || save == nullptr) {
    fmt::print(stderr, "accelrun: error: `{}` has no init_process_group or save_model step\n", options.input);
    return kExitUsage;
  }
  if (options.node_rank >= init->num_machines) {
    fmt::print(stderr, "accelrun: error: `--node-rank {}` is out of range: the plan runs on {} machine{}\n",
               options.node_rank, init->num_machines, init->num_machines == 1 ? "" : "s");
    return kExitUsage;
  }
  fs::path output_dir = options.output_dir.empty() ? fs::path(save->dir) : fs::path(options.output_dir);
  fs::path plan_path = output_dir / "plan.json";
  std::string plan_json = accel::plan::ToJson(*plan);
  if (llvm::Error error = accel::rt::checkpoint::WriteFileAtomically(plan_path.string(), {plan_json})) {
    fmt::print(stderr, "accelrun: error: {}\n", llvm::toString(std::move(error)));
    return kExitUsage;
  }

  launch::LaunchOptions launch_options;
  launch_options.processes_per_machine = static_cast<int>(init->processes_per_machine);
  launch_options.num_machines = static_cast<int>(init->num_machines);
  launch_options.node_rank = options.node_rank;
  launch_options.master_addr = options.master_addr.empty() ? init->main_process_ip : options.master_addr;
  launch_options.master_port = options.master_port != 0  ? options.master_port
                               : init->num_machines == 1 ? launch::PickFreePort()
                                                         : static_cast<int>(init->main_process_port);
  if (launch_options.master_port <= 0) {
    fmt::print(stderr, "accelrun: error: found no free port for the rendezvous; pass --master-port\n");
    return kExitUsage;
  }
  launch_options.worker_env["ACCEL_LAUNCHER_PID"] = std::to_string(::getpid());
  std::error_code ec;
  fs::path self = fs::canonical("/proc/self/exe", ec);
  launch_options.worker_argv = {ec ? std::string(argv0) : self.string(), "--worker", plan_path.string(),
                                "--output-dir", output_dir.string()};
  if (!options.resume.empty()) {
    launch_options.worker_argv.insert(launch_options.worker_argv.end(), {"--resume", options.resume});
  }

  // LibTorch calls whatever libblas.so.3 resolves to; steer the workers to OpenBLAS if the
  // system alternative is the slow reference BLAS.
  accel::rt::support::BlasInfo blas = accel::rt::support::DetectLoadedBlas();
  std::string blas_note = blas.Describe();
  if (!blas.optimized()) {
    if (std::optional<std::string> dir = accel::rt::support::FindOptimizedBlasDirectory()) {
      const char* existing = std::getenv("LD_LIBRARY_PATH");
      launch_options.worker_env["LD_LIBRARY_PATH"] = existing ? *dir + ":" + existing : *dir;
      blas_note += fmt::format("; workers use OpenBLAS from {}", *dir);
    } else {
      blas_note += "; install libopenblas0-pthread for ~17x faster fp32 matmul";
    }
  }
  if (std::getenv("ACCEL_NO_HUGEPAGES") == nullptr) {
    const char* tunables = std::getenv("GLIBC_TUNABLES");
    launch_options.worker_env["GLIBC_TUNABLES"] = launch::WithHugePageMalloc(tunables ? tunables : "");
  }
  launch_options.interrupted = [] { return g_interrupted.load() != 0; };
  struct sigaction action {};
  action.sa_handler = [](int signal) { g_interrupted = signal; };
  // The workers lead their own process groups, so the terminal's signals reach only this
  // process: every stop request is turned into stopping the workers.
  for (int signal : {SIGINT, SIGTERM, SIGHUP, SIGQUIT}) sigaction(signal, &action, nullptr);

  fmt::print("accelrun: job `{}` ({}), {} process{} on {} machine{}, rendezvous {}:{}\n", plan->job,
             plan->hash.substr(0, 19), launch_options.processes_per_machine,
             launch_options.processes_per_machine == 1 ? "" : "es", launch_options.num_machines,
             launch_options.num_machines == 1 ? "" : "s", launch_options.master_addr,
             launch_options.master_port);
  fmt::print("accelrun: BLAS: {}\n", blas_note);
  std::fflush(stdout);

  launch::PosixSpawner spawner;
  launch::LaunchResult result = launch::RunWorkers(launch_options, spawner);
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  if (!result.success) {
    fmt::print(stderr, "accelrun: error: {}\n", result.message);
    // Interrupted: the shell convention 128 + signal, so schedulers can tell it from a failure.
    if (int signal = g_interrupted.load()) return 128 + signal;
    return kExitFailed;
  }
  bool ok = false;
  std::string metrics_text = ReadFile((output_dir / "metrics.json").string(), &ok);
  llvm::Expected<llvm::json::Value> metrics = llvm::json::parse(metrics_text);
  if (ok && metrics && metrics->getAsObject()) {
    const llvm::json::Object& m = *metrics->getAsObject();
    fmt::print("accelrun: done in {:.2f} s: loss {:.6f} -> {:.6f}; model {}\n", seconds,
               m.getNumber("first_loss").getValueOr(0), m.getNumber("final_loss").getValueOr(0),
               m.getString("model_file").getValueOr("").str());
  } else {
    if (!metrics) llvm::consumeError(metrics.takeError());
    fmt::print("accelrun: done in {:.2f} s\n", seconds);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  // A subcommand of its own: reads checkpoint headers, starts no worker (runtime/memory).
  if (argc > 1 && std::string(argv[1]) == "estimate-memory") {
    accel::rt::memory::CommandResult result = accel::rt::memory::RunEstimateMemoryCommand(
        std::vector<std::string>(argv + 2, argv + argc), accel::rt::memory::SystemEnvironment());
    fmt::print(stdout, "{}", result.out);
    fmt::print(stderr, "{}", result.err);
    return result.exit_code;
  }
  for (int i = 1; i < argc; ++i) {
    if (std::string(argv[i]) == "-h" || std::string(argv[i]) == "--help") {
      fmt::print("{}", kUsage);
      return 0;
    }
  }
  Options options;
  if (std::string error = ParseArguments(argc, argv, options); !error.empty()) {
    fmt::print(stderr, "accelrun: error: {}\n\n{}", error, kUsage);
    return kExitUsage;
  }
  return options.worker ? RunAsWorker(options) : RunAsLauncher(options, argv[0]);
}
