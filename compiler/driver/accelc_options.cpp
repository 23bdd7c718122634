#include "compiler/driver/accelc_options.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "compiler/cli/arguments.h"
#include "compiler/diagnostics/diagnostic.h"
#include "compiler/pipeline/compile.h"
#include "compiler/pipeline/filter.h"
#include "compiler/pipeline/for_option.h"
#include "compiler/pipeline/override_option.h"
#include "compiler/interop/interop.h"
#include "compiler/source/named_file.h"

namespace accel::accelc {
namespace {

// Where the help text of commands and options starts.
constexpr size_t kHelpColumn = 26;

// Reads an env file into `assignments`; returns an error message, or "".
// Nothing of a line that is not an assignment is shown: `--env-file /etc/shadow` must not print
// its first line (a CI log is public).
std::string ReadEnvFile(const std::string& path, std::vector<std::string>& assignments) {
  if (std::string why = accel::source::WhyNotReadable(path); !why.empty())
    return fmt::format("cannot read env file `{}`: {}", path, why);
  std::ifstream in(path);
  if (!in) return fmt::format("cannot read env file `{}`", path);
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    size_t first = line.find_first_not_of(" \t");
    if (first == std::string::npos || line[first] == '#') continue;
    line = line.substr(first);
    if (line.rfind("export ", 0) == 0) line = line.substr(7);
    size_t equals = line.find('=');
    if (equals == std::string::npos || equals == 0) {
      return fmt::format("{}:{}: expected KEY=VALUE (a `#` comment or a blank line); the line is not "
                         "shown, the file may not be an env file",
                         path, number);
    }
    std::string value = line.substr(equals + 1);
    if (value.size() >= 2 && (value.front() == '"' || value.front() == '\'') &&
        value.back() == value.front()) {
      value = value.substr(1, value.size() - 2);
    }
    assignments.push_back(line.substr(0, equals) + "=" + value);
  }
  return "";
}

// accelc's options, applied to `o`. The rows without help are shown in the command synopses.
std::vector<accel::cli::Option> OptionTable(Options& o) {
  using accel::cli::Option;
  return {
      Option{.names = {"-o", "--out"},
             .value_name = "<path>",
             .apply = accel::cli::StoreText(o.output),
             .needs = "a path",
             .allow_empty = false},
      Option{.names = {"--format"},
             .value_name = "<f>",
             .help = "diagnostics format: text (default, stderr), json, sarif (SARIF 2.1.0\n"
                     "for code scanning) or github (workflow annotations); all but text\n"
                     "go to stdout. With `init`: accel (default) or accelerate-yaml",
             // Which formats fit depends on the command, known only after parsing.
             .apply = accel::cli::StoreText(o.format),
             .needs = "`text`, `json`, `sarif` or `github` (`init`: `accel` or `accelerate-yaml`)"},
      Option{.names = {"--target"},
             .value_name = "<t>",
             .help = "`native`: also refuse what accelrun cannot execute (DeepSpeed, FSDP,\n"
                     "fp16, ...), as `build` always does; `accelerate` (check's default):\n"
                     "any engine Accelerate runs",
             .apply = [&o](std::string_view, std::string_view v) -> std::string {
               if (v != "native" && v != "accelerate") {
                 return fmt::format(
                     "unknown target `{}`; expected `native` (what accelrun executes) or `accelerate`", v);
               }
               o.target = v;
               return "";
             },
             .needs = "`native` or `accelerate`"},
      Option{.names = {"--for"},
             .value_name = "<tool>[@<release>],...",
             .help = "what runs the config files: `accelerate` (accelerate launch),\n"
                     "`trainer` (the Transformers Trainer) or `deepspeed` (the deepspeed\n"
                     "launcher, where nothing fills in \"auto\" and Accelerate's own\n"
                     "requirements do not hold); default: `accelerate` for an Accelerate\n"
                     "config and the JSON it names, and for a DeepSpeed JSON that uses\n"
                     "\"auto\"; `deepspeed` for any other DeepSpeed JSON. `@` pins a\n"
                     "release, and further entries pin the others' releases:\n"
                     "`--for accelerate@1.13,deepspeed@0.19.2` (docs/rules/versions.md)",
             .apply = [&o](std::string_view, std::string_view v) -> std::string {
               return accel::pipeline::ParseForOption(v, o.compile);
             },
             .needs = "`accelerate`, `trainer` or `deepspeed`, each with an optional `@release`"},
      Option{.names = {"--read-outside-repo"},
             .help = "with `check`: also read the files a config names outside the checked\n"
                     "file's repository (docs/security.md)",
             .apply = accel::cli::SetFlag(o.read_outside_repo)},
      Option{.names = {"--werror"},
             .help = "treat warnings as errors",
             .apply = accel::cli::SetFlag(o.filter.werror)},
      Option{.names = {"--disable"},
             .value_name = "<code>",
             .help = "do not report <code> (a code, a rule id, a prefix like `FSDP-*`, or\n"
                     "`all`); syntax errors cannot be disabled",
             .apply =
                 [&o](std::string_view, std::string_view v) {
                   o.filter.toggles.emplace_back(false, std::string(v));
                   return std::string();
                 },
             .needs = "a code, e.g. `DS-019`",
             .allow_empty = false},
      Option{.names = {"--enable"},
             .value_name = "<code>",
             .help = "report <code> again (after --disable all, say); later flags win",
             .apply =
                 [&o](std::string_view, std::string_view v) {
                   o.filter.toggles.emplace_back(true, std::string(v));
                   return std::string();
                 },
             .needs = "a code, e.g. `DS-019`",
             .allow_empty = false},
      accel::pipeline::OverrideOption(o.overrides),
      Option{.names = {"--env"},
             .value_name = "KEY=VALUE",
             .help = "set an environment variable for `from env` defaults and `${KEY}`\n"
                     "in strings (repeatable)",
             .apply = [&o](std::string_view, std::string_view v) -> std::string {
               if (v.find('=') == std::string_view::npos || v[0] == '=')
                 return fmt::format("`--env` takes KEY=VALUE, found `{}`", v);
               o.env_assignments.emplace_back(v);
               return "";
             },
             .needs = "KEY=VALUE"},
      Option{.names = {"--env-file"},
             .value_name = "<file>",
             .help = "read KEY=VALUE lines (`#` comments, optional `export`)",
             .apply = [&o](std::string_view,
                           std::string_view v) { return ReadEnvFile(std::string(v), o.env_assignments); },
             .needs = "a file"},
      Option{.names = {"--process-env"},
             .help = "also read this process's environment (explicit ones win)",
             .apply = accel::cli::SetFlag(o.process_env)},
      Option{.names = {"-j", "--jobs"},
             .value_name = "<n>",
             .help = "check files on n threads (default: one per core)",
             .apply = [&o](std::string_view, std::string_view v) -> std::string {
               std::optional<long> n = accel::cli::ParseInteger(v, 1, 256);
               if (!n) return fmt::format("`-j` takes 1 to 256, found `{}`", v);
               o.jobs = static_cast<unsigned>(*n);
               return "";
             },
             .needs = "a thread count from 1 to 256"},
      Option{.names = {"--max-diagnostics"},
             .value_name = "<n>",
             .help = "show at most n diagnostics per file, then how many more (default 100; 0: all)",
             .apply = [&o](std::string_view, std::string_view v) -> std::string {
               std::optional<long> n = accel::cli::ParseInteger(v, 0, 1'000'000'000);
               if (!n) return fmt::format("`--max-diagnostics` takes a count from 0, found `{}`", v);
               o.max_diagnostics = *n;
               return "";
             },
             .needs = "a count (0: all)"},
      Option{.names = {"--to"},
             .value_name = "<f>",
             .apply = accel::cli::StoreText(o.to),
             .needs = "`accelerate-yaml`, `deepspeed-json` or `sbatch`"},
      Option{.names = {"--time"},
             .value_name = "<limit>",
             .help = "with `export --to sbatch`: the job's time limit (`#SBATCH --time`),\n"
                     "HH:MM:SS, D-HH:MM:SS or minutes",
             .apply = [&o](std::string_view, std::string_view v) -> std::string {
               if (!accel::interop::IsSlurmTime(v))
                 return fmt::format(
                     "`--time` takes a Slurm time limit such as 04:00:00, 1-12:00:00 or 90, found `{}`", v);
               o.slurm_time = std::string(v);
               return "";
             },
             .needs = "a time limit such as 04:00:00"},
      Option{.names = {"--cpus-per-task"},
             .value_name = "<n>",
             .help = "with `export --to sbatch`: CPUs for each worker (`#SBATCH --cpus-per-task`)",
             .apply = [&o](std::string_view, std::string_view v) -> std::string {
               std::optional<long> n = accel::cli::ParseInteger(v, 1, 4096);
               if (!n) return fmt::format("`--cpus-per-task` takes 1 to 4096, found `{}`", v);
               o.cpus_per_task = *n;
               return "";
             },
             .needs = "a CPU count"},
      Option{.names = {"--all"}, .apply = accel::cli::SetFlag(o.all)},
      Option{.names = {"--reference-url"},
             .value_name = "<url>",
             .help = "with `lsp`: where diagnostic codes link to, the folder `accelc docs`\n"
                     "writes (default: the reference beside accelc, if found)",
             .apply = accel::cli::StoreText(o.reference_url),
             .needs = "a URL"},
      Option{.names = {"--dump-ast"},
             .help = "with `parse`: print the syntax tree of each file",
             .apply = accel::cli::SetFlag(o.dump_ast)},
      Option{.names = {"--check"},
             .help = "with `fmt`: write nothing; name each file that is not formatted,\n"
                     "exit 1 if any",
             .apply = accel::cli::SetFlag(o.check)},
      Option{.names = {"--diff"},
             .help = "with `fmt`: write nothing; print how each file would change as a\n"
                     "unified diff, exit 1 if any would",
             .apply = accel::cli::SetFlag(o.diff)},
      Option{.names = {"--defaults"},
             .help = "with `init`: take every default without asking",
             .apply = accel::cli::SetFlag(o.defaults)},
      Option{.names = {"--force"},
             .help = "with `init`: replace the output file if it exists",
             .apply = accel::cli::SetFlag(o.force)},
      Option{.names = {"--verify"},
             .help = "check that each file produces exactly the diagnostics its\n"
                     "`expected-error {{...}}` comments state (as clang -verify)",
             .apply = accel::cli::SetFlag(o.verify)},
      Option{.names = {"--version"},
             .help = "print the version",
             .apply = accel::cli::SetFlag(o.version),
             .exits = true},
      Option{.names = {"-h", "--help"},
             .help = "print this help",
             .apply = accel::cli::SetFlag(o.help),
             .exits = true},
  };
}

}  // namespace

std::string Usage() {
  std::vector<accel::cli::HelpRow> commands;
  for (const Command& command : kCommands) commands.push_back({command.synopsis, command.help});
  Options unused;
  return "usage: accelc <command> [options] <input>...\n\ncommands:\n" +
         accel::cli::FormatHelp(commands, kHelpColumn) + "\noptions:\n" +
         accel::cli::FormatOptions(OptionTable(unused), kHelpColumn) +
         R"(
In a file, `// accelc-ignore[CODE]: reason` (`#` in YAML) suppresses CODE on its line, or on the
next line when the comment stands alone; `accelc-ignore-file[CODE]: reason` for the whole file.

exit status: 0 clean (warnings allowed), 1 errors were reported, 2 usage or I/O failure
)";
}

// `accelc COMMAND --help`: the command's own synopsis and what it does first, then the options.
std::string CommandUsage(const Command& command) {
  Options unused;
  return fmt::format("usage: accelc {}\n\n{}\n\noptions:\n{}", command.synopsis, command.help,
                     accel::cli::FormatOptions(OptionTable(unused), kHelpColumn));
}

// Parses argv into `options`; returns an error message, or "" on success (or on --help or
// --version, which `options` then says).
std::string ParseArguments(int argc, char** argv, Options& options) {
  // The first argument that is not an option names the command; the rest are its inputs.
  std::string error = accel::cli::Parse(
      std::vector<std::string>(argv + 1, argv + argc), OptionTable(options), [&](const std::string& arg) {
        (options.command.empty() ? options.command : options.files.emplace_back()) = arg;
        return std::string();
      });
  if (!error.empty() || options.help || options.version) return error;
  if (options.command == "dump-ast") {
    options.command = "parse";
    options.dump_ast = true;
  }
  if (options.command == "build") options.command = "compile";
  auto known = [&](const Command& command) { return command.name == options.command; };
  if (std::none_of(std::begin(kCommands), std::end(kCommands), known)) {
    if (options.command.empty()) return "missing command";
    std::vector<std::string> names;
    for (const Command& command : kCommands) names.push_back(std::string(command.name));
    std::string guess = accel::diag::ClosestMatch(options.command, names);
    return fmt::format("unknown command `{}`{}", options.command,
                       guess.empty() ? "" : fmt::format("; did you mean `{}`?", guess));
  }
  if (options.command == "docs") {
    if (options.output.empty() || !options.files.empty()) return "`docs` takes `--out DIR` and no input";
    return "";
  }
  const bool init = options.command == "init";
  if (init && options.format != "text" && options.format != "accel" && options.format != "accelerate-yaml") {
    return fmt::format("unknown format `{}` for `init`; expected `accel` or `accelerate-yaml`",
                       options.format);
  }
  if (!init && options.format != "text" && options.format != "json" && options.format != "sarif" &&
      options.format != "github") {
    return fmt::format("unknown format `{}`; expected `text`, `json`, `sarif` or `github`", options.format);
  }
  if ((options.defaults || options.force) && !init) return "`--defaults` and `--force` go with `init`";
  if (init) return options.files.empty() ? "" : "`init` takes no input; it asks its questions on stdin";
  if (options.command == "lsp") return options.files.empty() ? "" : "`lsp` takes no input; it reads stdin";
  if (options.files.empty()) return options.command == "explain-code" ? "missing code" : "missing input file";
  if (options.command == "explain" && options.files.size() != 1)
    return "`explain` takes exactly one spec or plan";
  bool release_range =
      options.compile.upgrade_to.accelerate != nullptr || options.compile.upgrade_to.deepspeed != nullptr;
  if (release_range && !(options.command == "diff" && options.files.size() == 1)) {
    return "a range of releases (`--for deepspeed@0.19.2..0.19.8`) goes with `diff` and one config file";
  }
  if (options.command == "diff" && options.files.size() != 2 && !release_range) {
    return "`diff` takes two specs or plans, or one config file with `--for TOOL@OLD..NEW`";
  }
  if ((options.command == "import" || options.command == "export") && options.files.size() != 1) {
    return fmt::format("`{}` takes exactly one file", options.command);
  }
  if (options.command == "export" && options.to != "accelerate-yaml" && options.to != "deepspeed-json" &&
      options.to != "sbatch") {
    return "`export` needs `--to accelerate-yaml`, `--to deepspeed-json` or `--to sbatch`";
  }
  if ((!options.slurm_time.empty() || options.cpus_per_task > 0) &&
      !(options.command == "export" && options.to == "sbatch")) {
    return "`--time` and `--cpus-per-task` go with `export --to sbatch`";
  }
  if (options.command == "compile" && options.files.size() != 1) {
    return fmt::format("`{}` takes exactly one file", options.command);
  }
  return "";
}

// The variables `from env` defaults read: the process environment only when asked for, then
// --env-file and --env in order.
accel::sema::MapEnvironment MakeEnvironment(const Options& options) {
  std::map<std::string, std::string> values;
  if (options.process_env) {
    for (char** entry = environ; *entry != nullptr; ++entry) {
      std::string text = *entry;
      size_t equals = text.find('=');
      if (equals != std::string::npos) values[text.substr(0, equals)] = text.substr(equals + 1);
    }
  }
  for (const std::string& assignment : options.env_assignments) {
    size_t equals = assignment.find('=');
    values[assignment.substr(0, equals)] = assignment.substr(equals + 1);
  }
  return accel::sema::MapEnvironment(std::move(values));
}

}  // namespace accel::accelc
