#ifndef ACCEL_COMPILER_DRIVER_ACCELC_OPTIONS_H_
#define ACCEL_COMPILER_DRIVER_ACCELC_OPTIONS_H_

// accelc's command line: its commands, its options, and how they are read. Each is one table:
// kCommands below, and OptionTable in accelc_options.cpp. `--help` and the parser both read
// them, so a command or an option added to its table is both listed and accepted.

#include <string>
#include <vector>

#include "compiler/pipeline/compile.h"
#include "compiler/pipeline/filter.h"
#include "compiler/sema/environment.h"

namespace accel::accelc {

inline constexpr int kExitClean = 0;
inline constexpr int kExitDiagnostics = 1;
inline constexpr int kExitErrors = 1;  // diagnostics about an input, as `check` reports them
inline constexpr int kExitUsage = 2;
inline constexpr const char* kVersion = "0.1.0";


// The commands, as `accelc --help` lists them; `build` and `dump-ast` are other names for
// `compile` and `parse --dump-ast`.
struct Command {
  const char* name;
  const char* synopsis;
  const char* help;
};
inline constexpr Command kCommands[] = {
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
  accel::pipeline::CompileOptions compile;     // --for: its `tool` and `releases`
  bool all = false;                          // explain --all: defaults too
  std::string to;                            // export --to
  std::string slurm_time;                    // export --to sbatch --time
  long cpus_per_task = 0;                    // export --to sbatch --cpus-per-task
  std::string reference_url;                 // lsp --reference-url
  unsigned jobs = 0;                         // 0: one per core
  // --max-diagnostics: shown per file in the text and github formats; 0 shows all. A file of
  // 100,000 unknown keys would otherwise print 300,000 lines into a CI log.
  long max_diagnostics = 100;
  accel::pipeline::FilterOptions filter;
  bool defaults = false;  // init --defaults
  bool force = false;     // init --force
  bool read_outside_repo = false;  // check: also read files a config names outside its repository
  bool help = false;      // -h, --help
  bool version = false;   // --version
};

// `accelc --help`, and `accelc COMMAND --help`.
std::string Usage();
std::string CommandUsage(const Command& command);

// Reads argv into `options`; returns an error message, or "".
std::string ParseArguments(int argc, char** argv, Options& options);

// The variables `from env` defaults read: the process environment only when asked for, then
// --env-file and --env in order.
sema::MapEnvironment MakeEnvironment(const Options& options);

}  // namespace accel::accelc

#endif  // ACCEL_COMPILER_DRIVER_ACCELC_OPTIONS_H_
