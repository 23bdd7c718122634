// accelc: checks `.accel` job specs and compiles them to execution plans. Links no LibTorch.
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <unordered_set>
#include <vector>

#include <fmt/format.h>

#include "compiler/ast/ast.h"
#include "compiler/cli/arguments.h"
#include "compiler/diagnostics/diagnostic.h"
#include "compiler/diagnostics/render.h"
#include "compiler/docs/docs.h"
#include "compiler/driver/compile.h"
#include "compiler/driver/explain.h"
#include "compiler/driver/filter.h"
#include "compiler/driver/for_option.h"
#include "compiler/driver/release_diff.h"
#include "compiler/driver/format_files.h"
#include "compiler/driver/init_command.h"
#include "compiler/driver/inputs.h"
#include "compiler/driver/override_option.h"
#include "compiler/driver/stdlib.h"
#include "compiler/driver/verify.h"
#include "compiler/interop/interop.h"
#include "compiler/lower/lower.h"
#include "compiler/lsp/links.h"
#include "compiler/lsp/server.h"
#include "compiler/lsp/transport.h"
#include "compiler/parse/parse.h"
#include "compiler/plan/describe.h"
#include "compiler/plan/plan_paths.h"
#include "compiler/source/named_file.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/BuryPointer.h"
#include "llvm/Support/xxhash.h"

namespace {

using accel::driver::Compilation;

constexpr int kExitClean = 0;
constexpr int kExitDiagnostics = 1;
constexpr int kExitErrors = 1;  // diagnostics about an input, as `check` reports them
constexpr int kExitUsage = 2;
constexpr const char* kVersion = "0.1.0";

// The commands, as `accelc --help` lists them; `build` and `dump-ast` are other names for
// `compile` and `parse --dump-ast`.
struct Command {
  const char* name;
  const char* synopsis;
  const char* help;
};
constexpr Command kCommands[] = {
    {"check", "check <input>...",
     "check job specs and Accelerate config files (YAML, DeepSpeed JSON);\n"
     "print every problem found. Inputs are files, directories (every\n"
     ".accel/.yaml/.yml below) or patterns (`configs/**/*.yaml`)"},
    {"build", "build <file> [-o out]", "compile one spec to an execution plan (JSON, stdout by default)"},
    {"compile", "compile <file> [-o out]", "the same as `build`"},
    {"parse", "parse <file>...", "only parse: report syntax errors (with --dump-ast, print the tree)"},
    {"dump-ast", "dump-ast <file>", "the same as `parse --dump-ast`"},
    {"explain", "explain <spec|plan|config>",
     "the plan for humans: its steps, then every value with where it came\n"
     "from (spec line, default, environment variable, --set); for a config\n"
     "file, or a spec accelrun cannot run, the values alone"},
    {"diff", "diff <a> <b> | diff --for <tool>@<old>..<new> <config>",
     "what differs between two specs, plans or config files (Accelerate\n"
     "YAML, DeepSpeed JSON), each change labelled with what it affects\n"
     "(numerics, topology, checkpoint); or what upgrading from one release\n"
     "to another changes for a config file: defaults it relies on, findings\n"
     "that appear or go (docs/rules/versions.md); exit 1 if any"},
    {"init", "init [-o out] [--format accel|accelerate-yaml] [--defaults] [--force]",
     "ask the questions of `accelerate config` (machines, processes, engine,\n"
     "precision, ...), checking each answer, and write a job spec that\n"
     "passes `accelc check` (default `job.accel`), or with `--format\n"
     "accelerate-yaml` the config file `accelerate launch` reads (default\n"
     "`default_config.yaml`). Answers may be piped, one line each (empty:\n"
     "the default); an existing file is kept unless --force (docs/init.md)"},
    {"import", "import <config> [-o out]", "an Accelerate config YAML as a readable `.accel` job spec"},
    {"export", "export --to <f> <file> [-o out] [--time T] [--cpus-per-task N]",
     "what the Python stack reads: `accelerate-yaml` (a spec's `compute`,\n"
     "or a config) or `deepspeed-json` (a DeepSpeed config); or `sbatch`:\n"
     "a Slurm batch script running `srun accelrun` on the spec's plan,\n"
     "compiled now and written beside it as <out>.plan.json"},
    {"explain-code", "explain-code <code>...", "what a diagnostic code (A2003) or a rule id (DS-019) means"},
    {"fmt", "fmt [--check] [--diff] <file>...",
     "put `.accel` specs in the one canonical layout (docs/fmt.md), in\n"
     "place; `-` reads stdin and writes stdout. Directories: every .accel\n"
     "file below. Files with syntax errors are left as they are"},
    {"lsp", "lsp",
     "a Language Server Protocol server on stdin/stdout, for editors\n"
     "(docs/lsp.md): check's diagnostics as you type, hover docs,\n"
     "completion, go to definition, outline, formatting, quick fixes"},
    {"docs", "docs --out <dir>",
     "write the reference generated from the schemas: Markdown pages,\n"
     "a searchable HTML page, JSON Schemas of the YAML and JSON surfaces"},
};

// Where the help text of commands and options starts.
constexpr size_t kHelpColumn = 26;

struct Options {
  std::string command;
  std::vector<std::string> files;
  std::string output;
  std::string format = "text";
  bool verify = false;
  bool dump_ast = false;
  bool check = false;  // fmt --check
  bool diff = false;   // fmt --diff
  bool process_env = false;
  std::vector<std::string> env_assignments;  // KEY=VALUE, from --env and --env-file in order
  std::vector<std::string> overrides;        // --set PATH=VALUE, in order
  std::string target;                        // --target; empty: the command's own default
  accel::driver::CompileOptions compile;     // --for: its `tool` and `releases`
  bool all = false;                          // explain --all: defaults too
  std::string to;                            // export --to
  std::string slurm_time;                    // export --to sbatch --time
  long cpus_per_task = 0;                    // export --to sbatch --cpus-per-task
  std::string reference_url;                 // lsp --reference-url
  unsigned jobs = 0;                         // 0: one per core
  // --max-diagnostics: shown per file in the text and github formats; 0 shows all. A file of
  // 100,000 unknown keys would otherwise print 300,000 lines into a CI log.
  long max_diagnostics = 100;
  accel::driver::FilterOptions filter;
  bool defaults = false;  // init --defaults
  bool force = false;     // init --force
  bool read_outside_repo = false;  // check: also read files a config names outside its repository
  bool help = false;      // -h, --help
  bool version = false;   // --version
};

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
               return accel::driver::ParseForOption(v, o.compile);
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
      accel::driver::OverrideOption(o.overrides),
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

// Prints the diagnostics of every compilation, in the requested format, as one document. The
// formats people read (text, github annotations) show at most --max-diagnostics per file, then
// a note of how many more there are; json and sarif, read by programs, carry them all.
void Report(const std::vector<Compilation>& compilations, const Options& options) {
  const bool capped = options.max_diagnostics > 0 && options.format != "json" && options.format != "sarif";
  std::vector<accel::diag::Diagnostic> all;
  for (const Compilation& c : compilations) {
    const std::vector<accel::diag::Diagnostic>& mine = c.diagnostics.diagnostics();
    size_t shown = capped ? std::min(mine.size(), static_cast<size_t>(options.max_diagnostics)) : mine.size();
    all.insert(all.end(), mine.begin(), mine.begin() + static_cast<std::ptrdiff_t>(shown));
    if (shown < mine.size()) {
      size_t errors = 0;
      for (size_t i = shown; i < mine.size(); ++i) errors += mine[i].severity == accel::diag::Severity::Error;
      all.push_back(accel::diag::Diagnostic{
          "",
          accel::diag::Severity::Note,
          fmt::format(
              "{} more diagnostics in `{}` not shown ({} of them errors); `--max-diagnostics 0` shows "
              "them all",
              mine.size() - shown, c.source ? c.source->name() : std::string("this file"), errors),
          nullptr,
          {},
          {},
          {}});
    }
  }
  if (options.format == "json") {
    fmt::print("{}\n", accel::diag::RenderJson(all));
  } else if (options.format == "sarif") {
    fmt::print("{}", accel::diag::RenderSarif(all, kVersion));
  } else if (options.format == "github") {
    fmt::print("{}", accel::diag::RenderGithub(all));
  } else {
    bool color = isatty(STDERR_FILENO) && std::getenv("NO_COLOR") == nullptr;
    fmt::print(stderr, "{}", accel::diag::RenderText(all, {color}));
  }
}

bool WriteFile(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
  return static_cast<bool>(out.flush());
}

// `accelc parse`: the parser alone, for syntax tests and tree dumps.
int ParseOnly(const Options& options) {
  int status = kExitClean;
  for (const std::string& path : options.files) {
    llvm::Expected<accel::source::SourceFile> source =
        accel::source::SourceFile::Read(path, accel::driver::kMaxSourceBytes);
    if (!source) {
      status = kExitUsage;
      llvm::handleAllErrors(
          source.takeError(),
          [&](const accel::source::FileTooLargeError& error) {
            fmt::print(stderr, "accelc: error: {} [A1008]\n", error.message());
            status = kExitDiagnostics;
          },
          [](const llvm::ErrorInfoBase& error) {
            fmt::print(stderr, "accelc: error: {}\n", error.message());
          });
      continue;
    }
    accel::diag::DiagnosticEngine diagnostics;
    accel::ast::File file = accel::parse::Parse(*source, diagnostics);
    if (options.dump_ast) fmt::print("{}", accel::ast::Dump(file));
    if (options.verify) {
      std::vector<std::string> problems = accel::driver::Verify(*source, diagnostics.diagnostics());
      for (const std::string& problem : problems) fmt::print(stderr, "{}\n", problem);
      if (!problems.empty() && status == kExitClean) status = kExitDiagnostics;
      continue;
    }
    fmt::print(stderr, "{}", accel::diag::RenderText(diagnostics.diagnostics()));
    if (diagnostics.has_errors() && status == kExitClean) status = kExitDiagnostics;
  }
  return status;
}

// Compiles `files` on `jobs` threads; results keep the order of `files`.
std::vector<Compilation> CompileAll(const std::vector<std::string>& files,
                                    const accel::driver::Stdlib& stdlib,
                                    const accel::sema::Environment& environment,
                                    const accel::driver::CompileOptions& compile_options, unsigned jobs) {
  std::vector<Compilation> compilations(files.size());
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t i; (i = next.fetch_add(1)) < files.size();) {
      compilations[i] = accel::driver::CompileFile(files[i], stdlib, environment, compile_options);
    }
  };
  unsigned threads = std::min<size_t>(jobs, files.size());
  std::vector<std::thread> pool;
  for (unsigned t = 1; t < threads; ++t) pool.emplace_back(work);
  work();
  for (std::thread& thread : pool) thread.join();
  return compilations;
}

// `accelc explain-code CODE...`
int ExplainCodes(const Options& options, const accel::sema::Schema& schema) {
  int status = kExitClean;
  for (const std::string& code : options.files) {
    if (std::optional<std::string> text = accel::driver::ExplainCode(code, schema)) {
      fmt::print("{}", *text);
      continue;
    }
    std::string guess = accel::diag::ClosestMatch(code, accel::driver::KnownCodes(schema));
    fmt::print(stderr, "accelc: error: unknown code `{}`{}\n", code,
               guess.empty() ? "" : fmt::format("; did you mean `{}`?", guess));
    status = kExitUsage;
  }
  return status;
}

// A file's resolved settings as a plan without steps, for explain and diff: an Accelerate config
// YAML, a DeepSpeed JSON, or a job spec the native runtime cannot run. Settings sit where a job
// keeps them (`compute.*` for an Accelerate config, so a config and a spec compare field by
// field), `deepspeed.*` for a DeepSpeed JSON. No hash: nothing runs. `what` heads `explain`.
accel::plan::Plan ConfigSettings(const accel::sema::Spec& spec, const std::string& what,
                                 const std::string& path) {
  accel::plan::Plan settings;
  settings.job = what;
  settings.source = path;
  settings.format = "";
  if (spec.root.type_name == "Job") {
    settings.config = accel::lower::ConfigTree(spec.root);  // the plan's own layout
    return settings;
  }
  std::string where = spec.root.type_name == "ClusterConfig"     ? "compute"
                      : spec.root.type_name == "DeepSpeedConfig" ? "deepspeed"
                                                                 : spec.root.type_name;
  settings.config = llvm::json::Object{{where, accel::lower::ConfigTree(spec.root)}};
  return settings;
}

// The plan of `path`: read when it is a plan (`.json` with an `accel-plan/` format), else
// compiled from the spec. Diagnostics are printed; empty on failure, with `failure` set to the
// exit status: kExitErrors for a file with errors (as `check` exits), kExitUsage for one that
// cannot be read.
std::optional<accel::plan::Plan> LoadPlan(const std::string& path, const Options& options,
                                          const accel::driver::Stdlib& stdlib, int& failure) {
  failure = kExitErrors;
  if (path.size() > 5 && path.compare(path.size() - 5, 5, ".json") == 0) {
    std::ifstream in(path, std::ios::binary);
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (in.bad() || (!in.eof() && in.fail()) || text.empty()) {
      fmt::print(stderr, "accelc: error: cannot read `{}`\n", path);
      failure = kExitUsage;
      return std::nullopt;
    }
    if (text.find("accel-plan/") != std::string::npos) {
      llvm::Expected<accel::plan::Plan> plan = accel::plan::FromJson(text, path);
      if (!plan) {
        fmt::print(stderr, "accelc: error: {}\n", llvm::toString(plan.takeError()));
        return std::nullopt;
      }
      return std::move(*plan);
    }
  }
  accel::sema::MapEnvironment environment = MakeEnvironment(options);
  accel::driver::CompileOptions compile_options = options.compile;
  compile_options.overrides = options.overrides;
  Compilation compilation = accel::driver::CompileFile(path, stdlib, environment, compile_options);
  // A checked spec that only the native runtime refuses (A4xxx: FSDP, DeepSpeed, GPUs) still
  // has settings to explain and compare; `accelc check` says what accelrun cannot run.
  bool runtime_gaps_only = compilation.spec.has_value() && !compilation.plan;
  for (const accel::diag::Diagnostic& d : compilation.diagnostics.diagnostics()) {
    if (d.severity == accel::diag::Severity::Error && d.code.rfind("A4", 0) != 0) runtime_gaps_only = false;
  }
  if (runtime_gaps_only && compilation.root_record == "Job") {
    return ConfigSettings(*compilation.spec, "a job accelrun cannot run (`accelc check` says why)", path);
  }
  fmt::print(stderr, "{}", accel::diag::RenderText(compilation.diagnostics.diagnostics()));
  if (compilation.config_file && compilation.spec && !compilation.diagnostics.has_errors()) {
    return ConfigSettings(*compilation.spec, compilation.root_record, path);
  }
  if (!compilation.plan) {
    if (!compilation.diagnostics.has_errors()) {
      fmt::print(stderr, "accelc: error: `{}` is not a job spec, a config file or a plan\n", path);
    }
    // No source: the file could not be read at all.
    if (!compilation.source) failure = kExitUsage;
    return std::nullopt;
  }
  return std::move(*compilation.plan);
}

// One file reached by several paths (`x.json`, `probes/../x.json`, a DeepSpeed JSON that two
// configs name, or that is also checked itself) is reported once: a diagnostic of a file already
// reported at the same place, with the same code and message, is left out of later inputs.
class ReportedOnce {
 public:
  accel::diag::DiagnosticEngine Unseen(accel::diag::DiagnosticEngine engine) {
    // Filtered in place, and remembered by a 64-bit digest of the key: a file of 65,000 unknown
    // keys held a second vector of its diagnostics and every key's text (54 MB for 1 MB). Two
    // distinct diagnostics share a digest with odds near n^2 / 2^65 (1e-10 for 65,000).
    std::vector<accel::diag::Diagnostic> all = engine.TakeAll();
    llvm::erase_if(all, [this](const accel::diag::Diagnostic& d) {
      return d.file != nullptr && !seen_.insert(llvm::xxHash64(KeyOf(d))).second;
    });
    accel::diag::DiagnosticEngine unseen;
    unseen.AddAll(std::move(all));
    return unseen;
  }

 private:
  std::string KeyOf(const accel::diag::Diagnostic& d) {
    auto [it, inserted] = files_.try_emplace(d.file->name());
    if (inserted) {
      std::error_code ec;
      std::filesystem::path canonical = std::filesystem::weakly_canonical(d.file->name(), ec);
      it->second = ec ? d.file->name() : canonical.string();
    }
    return fmt::format("{}\n{}\n{}\n{}\n{}", it->second, d.span.begin, d.span.end, d.code, d.message);
  }

  std::map<std::string, std::string> files_;  // a file's name as given -> the file it is
  std::unordered_set<uint64_t> seen_;
};

// `accelc explain PLAN` and `accelc diff A B`.
int DescribePlans(const Options& options, const accel::driver::Stdlib& stdlib) {
  std::vector<accel::plan::Plan> plans;
  for (const std::string& path : options.files) {
    int failure = kExitUsage;
    std::optional<accel::plan::Plan> plan = LoadPlan(path, options, stdlib, failure);
    if (!plan) return failure;
    plans.push_back(std::move(*plan));
  }
  if (options.command == "explain") {
    fmt::print("{}", accel::plan::Explain(plans[0], options.all));
    return kExitClean;
  }
  accel::plan::PlanDiff diff = accel::plan::Diff(plans[0], plans[1]);
  fmt::print("{}", accel::plan::RenderDiff(diff, options.files[0], options.files[1]));
  return diff.changes.empty() ? kExitClean : kExitDiagnostics;  // as diff(1): 1 when they differ
}

// `accelc diff --for TOOL@OLD..NEW CONFIG`: what the upgrade changes for the file; exit 1 when
// anything does, as diff(1).
int DiffAcrossReleases(const Options& options, const accel::driver::Stdlib& stdlib) {
  accel::sema::MapEnvironment environment = MakeEnvironment(options);
  accel::driver::CompileOptions compile_options = options.compile;
  compile_options.lower = false;
  bool unreadable = false;
  std::string changes =
      accel::driver::DiffReleases(options.files[0], stdlib, environment, compile_options, unreadable);
  if (unreadable) {
    fmt::print(stderr, "accelc: error: cannot read `{}`\n", options.files[0]);
    return kExitUsage;
  }
  if (changes.empty()) {
    fmt::print("{}: the upgrade changes nothing that accelc checks\n", options.files[0]);
    return kExitClean;
  }
  fmt::print("{}", changes);
  return kExitDiagnostics;
}

// A relative path in a config names a file beside the config, else in the working directory
// (as `check` finds it); the imported spec, which may be written elsewhere, names the same file
// relative to its own directory (a spec's paths are relative to the spec).
accel::interop::PlacePath ImportedPathPlacer(const Options& options) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::path cwd = fs::current_path(ec);
  fs::path config_dir = fs::absolute(options.files[0], ec).parent_path();
  fs::path spec_dir = options.output.empty() ? cwd : fs::absolute(options.output, ec).parent_path();
  return [=](const std::string& text) -> std::string {
    fs::path given(text);
    // `none` is Accelerate's word for no file.
    if (text.empty() || text == "none" || given.is_absolute()) return text;
    std::error_code exists_ec;
    fs::path named = (config_dir / given).lexically_normal();
    if (!fs::exists(named, exists_ec)) named = (cwd / given).lexically_normal();
    // Found nowhere (`check` warns, A3007): written as the config has it.
    if (!fs::exists(named, exists_ec)) return text;
    fs::path relative = named.lexically_relative(spec_dir.lexically_normal());
    return relative.empty() ? named.string() : relative.string();
  };
}

// `accelc import CONFIG` (an Accelerate config as a `.accel` spec) and `accelc export --to ...`
// (a spec or config as the file the Python stack reads). Only what the file sets is carried,
// so the environment is not read.
int Convert(const Options& options, const accel::driver::Stdlib& stdlib) {
  const std::string& path = options.files[0];
  accel::sema::MapEnvironment no_environment;
  accel::driver::CompileOptions compile_options = options.compile;
  compile_options.lower = false;
  Compilation compilation = accel::driver::CompileFile(path, stdlib, no_environment, compile_options);
  fmt::print(stderr, "{}", accel::diag::RenderText(compilation.diagnostics.diagnostics()));
  if (!compilation.source) return kExitUsage;
  if (!compilation.spec) return kExitDiagnostics;
  const accel::sema::Value& root = compilation.spec->root;
  const accel::sema::Schema& schema = stdlib.schema();
  std::string text;
  if (options.command == "import") {
    if (root.type_name == "DeepSpeedConfig") {
      fmt::print(stderr,
                 "accelc: error: `{}` is a DeepSpeed config; a job names it with "
                 "`compute.deepspeed_config.hf_ds_config = \"{}\"` instead of importing it\n",
                 path, path);
      return kExitDiagnostics;
    }
    if (root.type_name == "Job") {
      fmt::print(stderr, "accelc: error: `{}` is already a job spec\n", path);
      return kExitUsage;
    }
    llvm::Expected<std::string> spec =
        accel::interop::ImportToAccel(root, schema, accel::interop::JobNameFor(path), ImportedPathPlacer(options),
                                      accel::driver::ReferencedDeepSpeed(compilation));
    if (!spec) {
      fmt::print(stderr, "accelc: error: {}: {}\n", path, llvm::toString(spec.takeError()));
      return kExitDiagnostics;
    }
    text = std::move(*spec);
  } else if (options.to == "deepspeed-json") {
    if (root.type_name != "DeepSpeedConfig") {
      fmt::print(stderr,
                 "accelc: error: `{}` is not a DeepSpeed config; a job keeps its DeepSpeed JSON in the file "
                 "`compute.deepspeed_config.hf_ds_config` names\n",
                 path);
      return kExitUsage;
    }
    text = accel::interop::ExportDeepSpeedJson(root, schema);
  } else {
    const accel::sema::Value* config = root.type_name == "Job" ? root.Field("compute") : &root;
    if (config == nullptr || root.type_name == "DeepSpeedConfig") {
      fmt::print(stderr, "accelc: error: `{}` has no Accelerate launch config to export\n", path);
      return kExitUsage;
    }
    text = accel::interop::ExportAccelerateYaml(*config, schema);
  }
  if (options.output.empty()) {
    fmt::print("{}", text);
  } else if (!WriteFile(options.output, text)) {
    fmt::print(stderr, "accelc: error: cannot write `{}`\n", options.output);
    return kExitUsage;
  }
  return kExitClean;
}

// `accelc export --to sbatch SPEC`: compiles the spec as `build` does (environment, `--set`),
// writes the plan beside the script (`-o job.sbatch` gives `job.plan.json`; on stdout,
// `<job>.plan.json` here), then the batch script that runs it under srun. The plan is fixed at
// export: editing the spec later changes nothing a submitted or requeued job runs.
int ExportBatchScript(const Options& options, const accel::driver::Stdlib& stdlib) {
  namespace fs = std::filesystem;
  const std::string& path = options.files[0];
  accel::sema::MapEnvironment environment = MakeEnvironment(options);
  accel::driver::CompileOptions compile_options = options.compile;
  compile_options.overrides = options.overrides;
  Compilation compilation = accel::driver::CompileFile(path, stdlib, environment, compile_options);
  fmt::print(stderr, "{}", accel::diag::RenderText(compilation.diagnostics.diagnostics()));
  if (!compilation.source) return kExitUsage;
  if (compilation.config_file || compilation.schema_only) {
    fmt::print(stderr, "accelc: error: `{}` is not a job spec; only a job spec exports to a batch script\n",
               path);
    return kExitUsage;
  }
  if (!compilation.plan) {
    // The errors above say why: a spec with mistakes, or one for an engine accelrun does not run.
    fmt::print(
        stderr,
        "accelc: error: `{}` does not compile to a plan that accelrun runs (see above), so there is no "
        "batch script for it\n",
        path);
    return kExitDiagnostics;
  }
  std::error_code ec;
  fs::path working_dir = fs::current_path(ec);
  fs::path plan_path = options.output.empty() ? fs::path(compilation.plan->job + ".plan.json")
                                              : fs::path(options.output).replace_extension(".plan.json");
  plan_path = fs::absolute(plan_path, ec).lexically_normal();
  // accelrun reads the plan's input paths relative to the plan file's directory.
  accel::plan::RebaseInputPaths(*compilation.plan, working_dir, plan_path.parent_path());
  // The accelrun of the build that compiled the plan, when it is beside this accelc: its plan
  // format is this accelc's. Otherwise the one on the job's PATH.
  std::string accelrun = "accelrun";
  fs::path self = fs::read_symlink("/proc/self/exe", ec);
  if (!ec && ::access((self.parent_path() / "accelrun").c_str(), X_OK) == 0)
    accelrun = (self.parent_path() / "accelrun").string();
  llvm::Expected<std::string> script =
      accel::interop::ExportSbatch(*compilation.plan, {.plan_path = plan_path.string(),
                                                       .working_dir = working_dir.string(),
                                                       .accelrun = accelrun,
                                                       .time = options.slurm_time,
                                                       .cpus_per_task = options.cpus_per_task});
  if (!script) {
    fmt::print(stderr, "accelc: error: {}\n", llvm::toString(script.takeError()));
    return kExitUsage;
  }
  if (!WriteFile(plan_path.string(), accel::plan::ToJson(*compilation.plan))) {
    fmt::print(stderr, "accelc: error: cannot write `{}`\n", plan_path.string());
    return kExitUsage;
  }
  fmt::print(stderr, "accelc: wrote the plan the script runs to {}\n", plan_path.string());
  if (options.output.empty()) {
    fmt::print("{}", *script);
  } else if (!WriteFile(options.output, *script)) {
    fmt::print(stderr, "accelc: error: cannot write `{}`\n", options.output);
    return kExitUsage;
  }
  return kExitClean;
}

// `accelc docs --out DIR`: the reference generated from the schemas (Markdown pages, one HTML
// page, JSON Schemas for editors). Files are written in full or the run fails.
int WriteReference(const std::string& out_dir, const accel::sema::Schema& schema) {
  namespace fs = std::filesystem;
  size_t written = 0;
  for (const auto& [path, content] : accel::docs::ReferenceFiles(schema)) {
    ++written;
    fs::path file = fs::path(out_dir) / path;
    std::error_code ec;
    fs::create_directories(file.parent_path(), ec);
    if (ec || !WriteFile(file.string(), content)) {
      fmt::print(stderr, "accelc: error: cannot write `{}`{}\n", file.string(),
                 ec ? ": " + ec.message() : "");
      return kExitUsage;
    }
  }
  fmt::print(stderr, "accelc: wrote {} reference files to {}\n", written, out_dir);
  return kExitClean;
}

// An unknown code in --disable/--enable is a typo that would silently disable nothing.
std::string CheckToggles(const Options& options, const accel::sema::Schema& schema) {
  // Listing every code costs a run without toggles 2% of checking a config.
  if (options.filter.toggles.empty()) return "";
  std::vector<std::string> known = accel::driver::KnownCodes(schema);
  for (const auto& [enable, pattern] : options.filter.toggles) {
    if (accel::driver::PatternMatchesAny(pattern, known)) continue;
    std::string guess = accel::diag::ClosestMatch(pattern, known);
    return fmt::format(
        "`--{} {}` names no diagnostic code or rule id{}", enable ? "enable" : "disable", pattern,
        guess.empty() ? "; see `accelc explain-code`" : fmt::format("; did you mean `{}`?", guess));
  }
  return "";
}

}  // namespace

int main(int argc, char** argv) {
  Options options;
  std::string error = ParseArguments(argc, argv, options);
  if (options.help) {
    // `--help` alone is applied, so the command is the first argument that is not an option.
    std::string command = options.command;
    for (int i = 1; command.empty() && i < argc; ++i) {
      if (argv[i][0] != '-') command = argv[i];
    }
    if (command == "build") command = "compile";
    auto named = std::find_if(std::begin(kCommands), std::end(kCommands),
                              [&](const Command& c) { return c.name == command; });
    fmt::print("{}", named != std::end(kCommands) ? CommandUsage(*named) : Usage());
    return kExitClean;
  }
  if (options.version) {
    fmt::print("accelc {} (plan format {})\nschemas modelled from {} and {}\n", kVersion,
               accel::plan::kFormat, accel::driver::kModelledAccelerate, accel::driver::kModelledDeepSpeed);
    return kExitClean;
  }
  if (!error.empty()) {
    // A misspelt command is one line; the whole usage text would bury the suggestion.
    bool misspelt = error.find("did you mean") != std::string::npos;
    fmt::print(stderr, "accelc: error: {}\n{}", error, misspelt ? "" : "\n" + Usage());
    return kExitUsage;
  }
  if (options.command == "parse") return ParseOnly(options);
  if (options.command == "fmt") {
    using accel::driver::FormatMode;
    FormatMode mode = options.diff    ? FormatMode::kDiff
                      : options.check ? FormatMode::kCheck
                                      : FormatMode::kWrite;
    bool color = isatty(STDERR_FILENO) && std::getenv("NO_COLOR") == nullptr;
    return accel::driver::FormatFiles(options.files, mode, color);
  }

  accel::diag::DiagnosticEngine stdlib_diagnostics;
  std::unique_ptr<accel::driver::Stdlib> loaded = accel::driver::Stdlib::Load(stdlib_diagnostics);
  // Lives until the process ends and is never destroyed: the kernel takes its memory back at
  // once, where its destructors would walk every schema node (7% of checking one config).
  const accel::driver::Stdlib* stdlib = loaded.get();
  llvm::BuryPointer(std::move(loaded));
  if (stdlib_diagnostics.has_errors()) {
    fmt::print(stderr, "accelc: internal error: the embedded stdlib does not check:\n{}",
               accel::diag::RenderText(stdlib_diagnostics.diagnostics()));
    return kExitUsage;
  }
  if (options.command == "explain-code") return ExplainCodes(options, stdlib->schema());
  if (options.command == "init") {
    return accel::driver::RunInit({.output = options.output,
                                   .accelerate_yaml = options.format == "accelerate-yaml",
                                   .defaults = options.defaults,
                                   .force = options.force},
                                  *stdlib);
  }
  if (options.command == "lsp") {
    accel::lsp::ServerOptions server;
    server.reference_base =
        options.reference_url.empty() ? accel::lsp::DefaultReferenceBase() : options.reference_url;
    server.stdlib_dir = accel::lsp::DefaultStdlibDir(*stdlib);
    accel::lsp::FdSource in(STDIN_FILENO);
    accel::lsp::FdSink out(STDOUT_FILENO);
    return accel::lsp::Serve(in, out, *stdlib, server);
  }
  if (options.command == "diff" && options.files.size() == 1) return DiffAcrossReleases(options, *stdlib);
  if (options.command == "explain" || options.command == "diff") return DescribePlans(options, *stdlib);
  if (options.command == "export" && options.to == "sbatch") return ExportBatchScript(options, *stdlib);
  if (options.command == "import" || options.command == "export") return Convert(options, *stdlib);
  if (options.command == "docs") return WriteReference(options.output, stdlib->schema());
  if (std::string error = CheckToggles(options, stdlib->schema()); !error.empty()) {
    fmt::print(stderr, "accelc: error: {}\n", error);
    return kExitUsage;
  }

  int status = kExitClean;
  std::vector<std::string> files = options.files;
  if (options.command == "check") {
    const accel::sema::Schema& schema = stdlib->schema();
    accel::driver::Inputs inputs = accel::driver::ExpandInputs(options.files, [&](const std::string& path) {
      return accel::driver::WhyNotConfigJson(path, schema);
    });
    for (const std::string& error : inputs.errors) fmt::print(stderr, "accelc: error: {}\n", error);
    for (const std::string& skipped : inputs.skipped) {
      fmt::print(stderr, "accelc: note: skipped {}\n", skipped);
    }
    if (!inputs.errors.empty()) status = kExitUsage;
    files = std::move(inputs.files);
  }
  accel::sema::MapEnvironment environment = MakeEnvironment(options);
  accel::driver::CompileOptions compile_options = options.compile;
  // `check` validates for any engine unless asked for the native runtime; building a plan
  // is always for the native runtime.
  compile_options.lower = options.command == "compile" || options.target == "native";
  compile_options.note_native = options.command == "check" && !compile_options.lower && !options.verify;
  compile_options.overrides = options.overrides;
  compile_options.confine_references = options.command == "check" && !options.read_outside_repo;
  unsigned jobs = options.jobs != 0 ? options.jobs : std::max(1u, std::thread::hardware_concurrency());
  auto results = std::make_unique<std::vector<Compilation>>(
      CompileAll(files, *stdlib, environment, compile_options, jobs));
  // Never destroyed either, as the stdlib above: every file's tree stays until the exit.
  std::vector<Compilation>& compilations = *results;
  llvm::BuryPointer(std::move(results));

  int errors = 0;
  int warnings = 0;
  int suppressed = 0;
  ReportedOnce reported;
  for (size_t i = 0; i < compilations.size(); ++i) {
    Compilation& compilation = compilations[i];
    if (!options.verify) {
      int dropped = 0;
      compilation.diagnostics = accel::driver::Filter(
          compilation.source.get(), std::move(compilation.diagnostics), options.filter, &dropped);
      suppressed += dropped;
      compilation.diagnostics = reported.Unseen(std::move(compilation.diagnostics));
    }
    errors += compilation.diagnostics.error_count();
    warnings += compilation.diagnostics.warning_count();
    if (!compilation.source) {
      status = kExitUsage;
      continue;
    }
    if (options.verify) {
      std::vector<std::string> problems =
          accel::driver::Verify(*compilation.source, compilation.diagnostics.diagnostics());
      for (const std::string& problem : problems) fmt::print(stderr, "{}\n", problem);
      if (!problems.empty() && status == kExitClean) status = kExitDiagnostics;
      continue;
    }
    if (compilation.diagnostics.has_errors()) {
      if (status == kExitClean) status = kExitDiagnostics;
      continue;
    }
    if (options.command == "compile") {
      if (compilation.schema_only || compilation.config_file) {
        fmt::print(stderr, "accelc: error: `{}` {}; only a job spec compiles to a plan\n", files[i],
                   compilation.config_file ? "is a config file (`accelc check` checks it)"
                                           : "declares schemas but no job");
        status = kExitDiagnostics;
        continue;
      }
      // accelrun reads the plan's input paths relative to the plan file's directory; on stdout
      // the plan is taken to be written in the working directory, where they already point.
      if (!options.output.empty()) {
        accel::plan::RebaseInputPaths(*compilation.plan, std::filesystem::current_path(),
                                      std::filesystem::absolute(options.output).parent_path());
      }
      std::string json = accel::plan::ToJson(*compilation.plan);
      if (options.output.empty()) {
        fmt::print("{}", json);
      } else if (!WriteFile(options.output, json)) {
        fmt::print(stderr, "accelc: error: cannot write `{}`\n", options.output);
        return kExitUsage;
      }
    }
  }
  if (options.verify) {
    // Unreadable files still say why.
    for (const Compilation& c : compilations) {
      if (!c.source) fmt::print(stderr, "{}", accel::diag::RenderText(c.diagnostics.diagnostics()));
    }
    return status;
  }
  Report(compilations, options);
  if (options.command == "check") {
    fmt::print(stderr, "{} file{} checked: {} error{}, {} warning{}{}\n", files.size(),
               files.size() == 1 ? "" : "s", errors, errors == 1 ? "" : "s", warnings,
               warnings == 1 ? "" : "s", suppressed > 0 ? fmt::format(", {} suppressed", suppressed) : "");
  }
  return status;
}
