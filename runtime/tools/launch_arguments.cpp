// The command line of `accelrun [options] <spec | plan>`.
#include <cstdlib>

#include <fmt/format.h>

#include "runtime/tools/launch_command.h"

namespace accel::tools {

const char* const kLaunchUsage = R"(usage: accelrun [options] <spec.accel | plan.json>
       accelrun env [--format text|json]                 (versions, BLAS, threads, devices)
       accelrun estimate-memory <checkpoint> [options]   (see `accelrun estimate-memory --help`)

Compiles the spec if needed, then starts one worker per process of the plan on this machine
(or, under Slurm or MPI, one worker for this task) and supervises them. Worker output is
relayed with a `[rank N]` prefix. If one worker fails, the others are stopped and the first
failure is named with its last lines.

options:
  --output-dir <dir>       where the model, metrics.json and plan.json go (default: the plan's)
  --launcher <kind>        auto (default): detect Slurm (srun) or MPI (mpirun) from the
                           environment; local: ignore them; slurm, mpi: require them
  --nnodes <n>             machines in the job (default: the plan's num_machines)
  --node-rank <n>          this machine's rank in a multi-machine job (default 0)
  --nproc-per-node <n>     workers on each machine (default: the plan's processes per machine)
  --master-addr <addr>     address of the rendezvous store (default: the scheduler's first
                           node, or the plan's)
  --master-port <port>     port of the rendezvous store (default: a free port on one machine,
                           the plan's port across machines; 0 picks a free one)
  --num-cpu-threads-per-process <n>
                           OMP_NUM_THREADS of each worker (default: inherited, else physical
                           cores / workers on a CPU run)
  --resume auto|<dir>      continue from the newest complete checkpoint of the plan's
                           `checkpoint` step (auto: start fresh when there is none), or from
                           the checkpoint <dir>; steps, data order and RNG continue exactly
  --dry-run                print every worker's command and added environment; start nothing
  -h, --help               print this help

environment:
  ACCEL_NO_HUGEPAGES=1     do not start workers with huge-page malloc

exit codes: 0 success; 1 a worker failed; 2 usage or plan error; 128+N stopped by signal N.
Workers exit 3 when a collective failed because of a peer (docs/launch.md).
)";

std::string ParseLaunchArguments(const std::vector<std::string>& args, LaunchCommandOptions& options) {
  rt::launch::PlacementFlags& placement = options.placement;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    auto next = [&]() -> const std::string* { return i + 1 < args.size() ? &args[++i] : nullptr; };
    // A flag's integer in [low, high], or an error message.
    auto integer = [&](std::optional<int>& out, long low, long high) -> std::string {
      const std::string* text = next();
      char* end = nullptr;
      long value = text ? std::strtol(text->c_str(), &end, 10) : 0;
      if (text == nullptr || text->empty() || *end != '\0' || value < low || value > high) {
        return high == 65535 ? fmt::format("`{}` needs a port number (0-65535)", arg)
                             : fmt::format("`{}` needs an integer from {} to {}", arg, low, high);
      }
      out = static_cast<int>(value);
      return "";
    };
    auto text = [&](std::string& out, const char* what) -> std::string {
      const std::string* value = next();
      if (value == nullptr || value->empty()) return fmt::format("`{}` needs {}", arg, what);
      out = *value;
      return "";
    };
    std::string error;
    if (arg == "--worker") {
      options.worker = true;
    } else if (arg == "--dry-run") {
      options.dry_run = true;
    } else if (arg == "--output-dir") {
      error = text(options.output_dir, "a directory");
    } else if (arg == "--resume") {
      error = text(options.resume, "`auto` or a checkpoint directory");
    } else if (arg == "--launcher") {
      std::string kind;
      error = text(kind, "auto, local, slurm or mpi");
      std::optional<rt::launch::LauncherKind> parsed = rt::launch::ParseLauncherKind(kind);
      if (error.empty() && !parsed)
        error = fmt::format("`--launcher {}` is unknown; expected auto, local, slurm or mpi", kind);
      if (parsed) placement.launcher = *parsed;
    } else if (arg == "--nnodes") {
      error = integer(placement.nnodes, 1, 100000);
    } else if (arg == "--node-rank") {
      error = integer(placement.node_rank, 0, 99999);
    } else if (arg == "--nproc-per-node") {
      error = integer(placement.nproc_per_node, 1, 4096);
    } else if (arg == "--master-addr") {
      std::string addr;
      error = text(addr, "an address");
      if (error.empty()) placement.master_addr = addr;
    } else if (arg == "--master-port") {
      error = integer(placement.master_port, 0, 65535);
    } else if (arg == "--num-cpu-threads-per-process") {
      error = integer(options.cpu_threads, 1, 4096);
    } else if (!arg.empty() && arg[0] == '-') {
      error = fmt::format("unknown option `{}`", arg);
    } else if (options.input.empty()) {
      options.input = arg;
    } else {
      error = fmt::format("unexpected argument `{}`; accelrun runs one plan", arg);
    }
    if (!error.empty()) return error;
  }
  if (options.input.empty()) return "missing the spec or plan to run";
  return "";
}

}  // namespace accel::tools
