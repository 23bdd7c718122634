// The script mode's command line: accelrun's own options beside `accelerate launch`'s, the cut
// argparse makes between the launch options and the script's own arguments, whether a command
// line is a script launch at all, and the usage text. What the options then launch is
// script_command.cpp's.
#include <algorithm>
#include <chrono>

#include <fmt/format.h>

#include "compiler/cli/arguments.h"
#include "compiler/diagnostics/diagnostic.h"
#include "runtime/launch/accelerate/launch_flags.h"
#include "runtime/tools/launch_command.h"
#include "runtime/tools/script_command.h"
#include "runtime/tools/script_command_internal.h"

namespace accel::tools {
namespace {

namespace acc = rt::launch::accelerate;

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

// The option name of `arg` (`--num_processes` of `--num_processes=2`), or "" for a positional.
std::string OptionName(const std::string& arg) {
  if (arg.size() < 2 || arg[0] != '-') return "";
  return arg.substr(0, arg.find('='));
}

}  // namespace

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

bool IsScriptLaunch(const std::vector<std::string>& args) {
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
    // An option's value is not the script: Accelerate's launch options, and the native
    // launcher's (its own table).
    bool takes = acc::LaunchOptionTakesValue(name) || LaunchOptionTakesValue(name);
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

}  // namespace accel::tools
