#include "runtime/tools/state_command.h"

#include <filesystem>
#include <limits>

#include <fmt/format.h>

#include "compiler/cli/arguments.h"
#include "runtime/tools/accelerate_state.h"
#include "runtime/tools/plan_input.h"

namespace accel::tools {
namespace {

namespace fs = std::filesystem;

constexpr int kExitFailed = 1;
constexpr int kExitUsage = 2;
constexpr size_t kHelpColumn = 24;

// The positional arguments, parsed; an error message or "".
std::string ParseCommand(const std::vector<std::string>& args, const std::vector<cli::Option>& table,
                         std::vector<std::string>& positional, size_t expected, const char* command) {
  return cli::Parse(args, table, [&](const std::string& arg) -> std::string {
    if (positional.size() == expected)
      return fmt::format("`accelrun {}` takes {} arguments; `{}` is one too many", command, expected, arg);
    positional.push_back(arg);
    return "";
  });
}

int UsageError(const std::string& error, const std::string& usage) {
  fmt::print(stderr, "accelrun: error: {}\n\n{}", error, usage);
  return kExitUsage;
}

}  // namespace

int RunExportStateCommand(const std::vector<std::string>& args) {
  std::string output;
  std::optional<long> seed;
  bool help = false;
  std::vector<cli::Option> table = {
      {.names = {"-o", "--output"}, .value_name = "<folder>", .help = "the folder to write (it must not exist)",
       .apply = cli::StoreText(output), .needs = "a folder", .allow_empty = false},
      {.names = {"--seed"}, .value_name = "<n>",
       .help = "write Python's and NumPy's generators as\nset_seed(n) leaves them (default: the data seed)",
       .apply = cli::StoreInteger(seed, 0, std::numeric_limits<long>::max()), .needs = "a number"},
      {.names = {"-h", "--help"}, .help = "print this help", .apply = cli::SetFlag(help), .exits = true},
  };
  const std::string usage = R"(usage: accelrun export-state <checkpoint-dir> -o <folder> [--seed N]

Writes a checkpoint's training state as the folder Accelerate's `save_state` writes, which
`accelerator.load_state(folder)` continues from: model.safetensors, optimizer.bin,
scheduler.bin and random_states_<rank>.pkl. No Python is needed. Every file of the checkpoint
is verified against its manifest first; a sharded checkpoint is written whole.

options:
)" + cli::FormatOptions(table, kHelpColumn);
  std::vector<std::string> positional;
  std::string error = ParseCommand(args, table, positional, 1, "export-state");
  if (help) {
    fmt::print("{}", usage);
    return 0;
  }
  if (error.empty() && positional.empty()) error = "missing the checkpoint directory to export";
  if (error.empty() && output.empty()) error = "missing `-o <folder>`, the folder to write";
  if (!error.empty()) return UsageError(error, usage);
  llvm::Expected<rt::checkpoint::VerifiedCheckpoint> checkpoint =
      rt::checkpoint::VerifyCheckpointDirectory(positional[0]);
  if (!checkpoint) {
    fmt::print(stderr, "accelrun: error: {}\n", llvm::toString(checkpoint.takeError()));
    return kExitFailed;
  }
  ExportOptions options;
  if (seed) options.seed = static_cast<uint64_t>(*seed);
  llvm::Expected<std::vector<std::string>> written = ExportAccelerateState(*checkpoint, output, options);
  if (!written) {
    fmt::print(stderr, "accelrun: error: {}\n", llvm::toString(written.takeError()));
    return kExitFailed;
  }
  fmt::print("accelrun: wrote {}: {}; continue it with accelerator.load_state(\"{}\")\n", output,
             fmt::join(*written, ", "), output);
  return 0;
}

int RunImportStateCommand(const std::vector<std::string>& args) {
  std::string output;
  std::optional<long> step;
  bool help = false;
  std::vector<cli::Option> table = {
      {.names = {"-o", "--output"}, .value_name = "<checkpoint-dir>",
       .help = "the checkpoint folder to write (it must not exist)", .apply = cli::StoreText(output),
       .needs = "a folder", .allow_empty = false},
      {.names = {"--step"}, .value_name = "<n>",
       .help = "the optimizer steps taken when the folder was saved,\nwhere no optimizer or scheduler state says",
       .apply = cli::StoreInteger(step, 0, std::numeric_limits<long>::max()), .needs = "a number"},
      {.names = {"-h", "--help"}, .help = "print this help", .apply = cli::SetFlag(help), .exits = true},
  };
  const std::string usage = R"(usage: accelrun import-state <folder> <spec | plan.json> -o <checkpoint-dir> [--step N]

Reads the folder Accelerate's `save_state` wrote and writes it as a checkpoint of the job, which
`accelrun <spec> --resume <checkpoint-dir>` continues. The pickles are read as data: one that
names anything but tensors, numbers, strings and containers is refused, never run.

options:
)" + cli::FormatOptions(table, kHelpColumn);
  std::vector<std::string> positional;
  std::string error = ParseCommand(args, table, positional, 2, "import-state");
  if (help) {
    fmt::print("{}", usage);
    return 0;
  }
  if (error.empty() && positional.size() < 2)
    error = "expected the folder save_state wrote and the job's spec or plan";
  if (error.empty() && output.empty()) error = "missing `-o <checkpoint-dir>`, the checkpoint folder to write";
  if (!error.empty()) return UsageError(error, usage);
  const std::string& input = positional[1];
  std::optional<plan::Plan> plan = fs::path(input).extension() == ".json" ? LoadPlan(input) : CompileSpec(input);
  if (!plan) return kExitFailed;
  llvm::Expected<ImportResult> imported = ImportAccelerateState(positional[0], *plan, output, {step});
  if (!imported) {
    fmt::print(stderr, "accelrun: error: {}\n", llvm::toString(imported.takeError()));
    return kExitFailed;
  }
  for (const std::string& note : imported->notes) fmt::print(stderr, "accelrun: note: {}\n", note);
  fmt::print("accelrun: wrote {} at step {} ({} process{}): {}; continue with `accelrun {} --resume {}`\n", output,
             imported->step, imported->world_size, imported->world_size == 1 ? "" : "es",
             fmt::join(imported->files, ", "), input, output);
  return 0;
}

}  // namespace accel::tools
