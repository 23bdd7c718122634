// The command line of `accelrun [options] <spec | plan>`.
#include <fmt/format.h>

#include "compiler/cli/arguments.h"
#include "compiler/pipeline/override_option.h"
#include "compiler/plan/plan.h"
#include "runtime/tools/launch_command.h"

namespace accel::tools {
namespace {

// Where the help text of the options starts.
constexpr size_t kHelpColumn = 27;

// An option whose value is non-empty text, handed to `store`.
cli::Option Text(std::string name, std::string value_name, std::string help, std::string needs,
                 std::function<void(std::string_view)> store) {
  return cli::Option{.names = {std::move(name)},
                     .value_name = std::move(value_name),
                     .help = std::move(help),
                     .apply =
                         [store](std::string_view, std::string_view value) {
                           store(value);
                           return std::string();
                         },
                     .needs = std::move(needs),
                     .allow_empty = false};
}

// An option whose value is an integer in [low, high], stored in `out`; a missing or bad value
// is reported the same way.
cli::Option Integer(std::string name, std::string help, std::optional<int>& out, long low, long high) {
  std::string needs =
      high == 65535 ? "a port number (0-65535)" : fmt::format("an integer from {} to {}", low, high);
  return cli::Option{
      .names = {std::move(name)},
      .value_name = high == 65535 ? "<port>" : "<n>",
      .help = std::move(help),
      .apply = [&out, low, high, needs](std::string_view flag, std::string_view text) -> std::string {
        std::optional<long> value = cli::ParseInteger(text, low, high);
        if (!value) return fmt::format("`{}` needs {}", flag, needs);
        out = static_cast<int>(*value);
        return "";
      },
      .needs = needs,
      .allow_empty = false};
}

// The launcher's options, applied to `o`, in the order the usage text lists them.
std::vector<cli::Option> OptionTable(LaunchCommandOptions& o) {
  rt::launch::PlacementFlags& placement = o.placement;
  return {
      pipeline::OverrideOption(o.overrides),
      Integer("--num-processes",
              "a spec's `compute.num_processes` (Accelerate's --num_processes):\n"
              "the processes of the whole job",
              o.num_processes, 1, plan::kMaxMachines * plan::kMaxProcessesPerMachine),
      Text("--output-dir", "<dir>", "where the model, metrics.json and plan.json go (default: the plan's)",
           "a directory", [&o](std::string_view v) { o.output_dir = v; }),
      cli::Option{
          .names = {"--launcher"},
          .value_name = "<kind>",
          .help = "auto (default): detect Slurm (srun) or MPI (mpirun) from the\n"
                  "environment; local: ignore them; slurm, mpi: require them",
          .apply = [&placement](std::string_view, std::string_view kind) -> std::string {
            std::optional<rt::launch::LauncherKind> parsed = rt::launch::ParseLauncherKind(std::string(kind));
            if (!parsed)
              return fmt::format("`--launcher {}` is unknown; expected auto, local, slurm or mpi", kind);
            placement.launcher = *parsed;
            return "";
          },
          .needs = "auto, local, slurm or mpi",
          .allow_empty = false},
      Integer("--nnodes", "machines in the job (default: the plan's num_machines)", placement.nnodes, 1,
              plan::kMaxMachines),
      Integer("--node-rank", "this machine's rank in a multi-machine job (default 0)", placement.node_rank, 0,
              plan::kMaxMachines - 1),
      Integer("--nproc-per-node", "workers on each machine (default: the plan's processes per machine)",
              placement.nproc_per_node, 1, plan::kMaxProcessesPerMachine),
      Text("--master-addr", "<addr>",
           "address of the rendezvous store (default: the scheduler's first\n"
           "node, or the plan's)",
           "an address", [&placement](std::string_view v) { placement.master_addr = std::string(v); }),
      Integer("--master-port",
              "port of the rendezvous store (default: a free port on one machine,\n"
              "the plan's port across machines; 0 picks a free one)",
              placement.master_port, 0, 65535),
      Text("--rdzv-id", "<id>",
           "the launch id every launcher of the job shares; a rank with another\n"
           "is refused (default: the scheduler's job id, or a new one when one\n"
           "accelrun starts every rank)",
           "an id", [&placement](std::string_view v) { placement.rdzv_id = std::string(v); }),
      cli::Option{.names = {"--device"},
                  .value_name = "cpu|cuda",
                  .help = "cpu: rehearse a GPU job (MULTI_GPU, FSDP, DeepSpeed) or another\n"
                          "accelerator's (XPU, NPU, ...) on CPU processes over Gloo, with\n"
                          "its world size and sharding, all on this machine; cuda: require\n"
                          "a CUDA plan (default: the plan's)",
                  .apply = [&o](std::string_view, std::string_view value) -> std::string {
                    if (value == "cpu") {
                      o.device = plan::Device::cpu;
                    } else if (value == "cuda") {
                      o.device = plan::Device::cuda;
                    } else {
                      return fmt::format("`--device {}` is unknown; expected cpu or cuda", value);
                    }
                    return "";
                  },
                  .needs = "cpu or cuda",
                  .allow_empty = false},
      Integer("--num-cpu-threads-per-process",
              "OMP_NUM_THREADS of each worker (default: inherited, else physical\n"
              "cores / workers on a CPU run)",
              o.cpu_threads, 1, 4096),
      Text("--resume", "auto|<dir>",
           "continue from the newest complete checkpoint of the plan's\n"
           "`checkpoint` step (auto: start fresh when there is none), or from\n"
           "the checkpoint <dir>; steps, data order and RNG continue exactly",
           "`auto` or a checkpoint directory", [&o](std::string_view v) { o.resume = v; }),
      cli::Option{.names = {"--allow-schedule-change"},
                  .help = "let --resume continue with another learning-rate schedule than\n"
                          "the checkpoint's (another train.steps, warmup or lr_schedule)",
                  .apply = cli::SetFlag(o.allow_schedule_change)},
      Integer("--max-restarts",
              "start a failed job again up to <n> times (default 0), each time\n"
              "from its newest complete checkpoint, after a wait of 1 s doubling\n"
              "to 30 s; one machine only (under Slurm: `sbatch --requeue`)",
              o.max_restarts, 0, 1000),
      Integer("--own-work-limit",
              "stop the job when a rank says nothing in its own work (not a\n"
              "wait for its peers) for <n> seconds (default: the plan's timeout,\n"
              "but at least 600)",
              o.own_work_limit, 1, 7 * 24 * 3600),
      Text("--program", "<executable>",
           "run <executable> as each worker instead of accelrun-worker: a\n"
           "program of your own loop on the Accelerator (docs/accelerator.md);\n"
           "it gets the same arguments and environment",
           "an executable", [&o](std::string_view v) { o.program = v; }),
      cli::Option{.names = {"--dry-run"},
                  .help = "print every worker's command and added environment; start nothing",
                  .apply = cli::SetFlag(o.dry_run)},
      cli::Option{
          .names = {"-h", "--help"}, .help = "print this help", .apply = cli::SetFlag(o.help), .exits = true},
  };
}

}  // namespace

bool LaunchOptionTakesValue(std::string_view name) {
  LaunchCommandOptions unused;
  for (const cli::Option& option : OptionTable(unused)) {
    if (option.value_name.empty()) continue;
    for (const std::string& option_name : option.names)
      if (option_name == name) return true;
  }
  return false;
}

std::string LaunchUsage() {
  LaunchCommandOptions unused;
  return R"(usage: accelrun [options] <spec.accel | spec.yaml | plan.json>
       accelrun [config.yaml] [accelerate launch options] script.py [args]   (see `accelrun script.py --help`)
       accelrun test [options] <spec | plan.json>        (checks the data operations on the job's processes)
       accelrun env [--format text|json]                 (versions, BLAS, threads, devices)
       accelrun estimate-memory <checkpoint> [options]   (see `accelrun estimate-memory --help`)
       accelrun estimate-memory --training <job> [<checkpoint>]   (what each rank of a training job holds)
       accelrun report <run-dir> [-o <file>]             (an HTML page of a run's curves and settings)
       accelrun consolidate <checkpoint-dir> -o <file>   (a sharded checkpoint's model as whole tensors)
       accelrun export-state <checkpoint-dir> -o <folder>          (as Accelerate's save_state writes it)
       accelrun import-state <folder> <spec | plan> -o <checkpoint-dir>  (an Accelerate save_state folder)

Compiles the spec (`.accel`, or a YAML job spec) with the `--set` and `--num-processes`
overrides, as `accelc build --set` does, or reads a compiled plan (`.json`), then starts one
worker per process of the plan on this machine (or, under Slurm or MPI, one worker for this
task) and supervises them. Worker output is relayed with a `[rank N]` prefix. If one worker
fails, the others are stopped and the first failure is named with its last lines.

options:
)" + cli::FormatOptions(OptionTable(unused), kHelpColumn) +
         R"(
environment:
  ACCEL_NO_HUGEPAGES=1     do not start workers with huge-page malloc

exit codes: 0 success; 1 a worker failed; 2 usage or plan error; 128+N stopped by signal N.
Workers exit 3 when a collective failed because of a peer (docs/launch.md).
)";
}

std::string ParseLaunchArguments(const std::vector<std::string>& args, LaunchCommandOptions& options) {
  options.args = args;
  std::string error =
      cli::Parse(args, OptionTable(options), [&options](const std::string& arg) -> std::string {
        if (!options.input.empty())
          return fmt::format("unexpected argument `{}`; accelrun runs one plan", arg);
        options.input = arg;
        return "";
      });
  if (error.empty() && !options.help && options.input.empty()) return "missing the spec or plan to run";
  return error;
}

}  // namespace accel::tools
