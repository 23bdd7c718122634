#include "runtime/tools/report_command.h"

#include <algorithm>
#include <filesystem>
#include <optional>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "compiler/cli/arguments.h"
#include "compiler/plan/describe.h"
#include "compiler/plan/plan.h"
#include "llvm/Support/JSON.h"
#include "runtime/checkpoint/atomic_file.h"
#include "runtime/launch/rehearsal.h"
#include "runtime/observe/metrics_history.h"
#include "runtime/observe/report_page.h"
#include "runtime/tools/plan_input.h"

namespace accel::tools {
namespace {

namespace fs = std::filesystem;
namespace observe = rt::observe;

constexpr int kExitBadMetrics = 1;
constexpr int kExitUsage = 2;

constexpr size_t kHelpColumn = 24;

std::string Usage(const std::vector<cli::Option>& table) {
  return R"(usage: accelrun report <run-dir> [-o <file>]

Writes one self-contained HTML page of a run: the loss, learning rate, throughput and
evaluation curves from <run-dir>/metrics.jsonl, the resume points, and the plan's key
settings. The page fetches nothing and needs no JavaScript.

options:
)" + cli::FormatOptions(table, kHelpColumn);
}

void Warn(const std::string& message, observe::ReportPage& page) {
  fmt::print(stderr, "accelrun: warning: {}\n", message);
  page.notes.push_back(message);
}

// The plan's job, hash, source, steps and settings; a plan that does not read is a note.
void AddPlan(const fs::path& run_dir, observe::ReportPage& page) {
  std::string path = (run_dir / "plan.json").string();
  std::optional<std::string> text = ReadWholeFile(path);
  if (!text) {
    Warn(fmt::format(
             "cannot read `{}`: the report has no settings; accelrun writes it at the start of every run",
             path),
         page);
    return;
  }
  llvm::Expected<plan::Plan> plan = plan::FromJson(*text, path);
  if (!plan) {
    Warn(fmt::format("{}; the report has no settings", llvm::toString(plan.takeError())), page);
    return;
  }
  page.job = plan->job;
  // The run directory's plan is the one the workers ran: a CPU rehearsal's says so, and its
  // times and memory are not the accelerators'.
  if (const auto* init = plan->Find<plan::InitProcessGroup>(); init != nullptr && init->rehearsal)
    page.notes.push_back("A " + rt::launch::RehearsalBanner(*plan) +
                         ": its times and memory are not theirs.");
  page.plan_facts.emplace_back("hash", plan->hash);
  if (!plan->source.empty()) page.plan_facts.emplace_back("compiled from", plan->source);
  std::vector<std::string> steps;
  for (const plan::Step& step : plan->steps) steps.emplace_back(plan::OpName(step));
  page.plan_facts.emplace_back("steps", fmt::format("{}", fmt::join(steps, " → ")));
  for (plan::Setting& setting : plan::Settings(*plan))
    page.settings.push_back({std::move(setting.path), std::move(setting.value), std::move(setting.from)});
}

// metrics.json's top-level values (first and final loss, world size, wall time, ...), by name.
void AddSummary(const fs::path& run_dir, observe::ReportPage& page) {
  std::string path = (run_dir / "metrics.json").string();
  std::optional<std::string> text = ReadWholeFile(path);
  // A run still going has none yet: nothing to say.
  if (!text) return;
  std::string not_read =
      fmt::format("`{}` is not a JSON object; the report leaves out the run's summary", path);
  // LLVM's parser recurses once per level: a hostile file must not exhaust the stack.
  if (plan::JsonNestsDeeperThan(*text, plan::kMaxJsonDepth)) return Warn(not_read, page);
  llvm::Expected<llvm::json::Value> summary = llvm::json::parse(*text);
  if (!summary) llvm::consumeError(summary.takeError());
  if (!summary || summary->getAsObject() == nullptr) return Warn(not_read, page);
  std::vector<std::string> keys;
  for (const auto& entry : *summary->getAsObject()) keys.push_back(entry.first.str());
  std::sort(keys.begin(), keys.end());
  for (const std::string& key : keys) {
    // The page's "Resume points" list shows it, with its checkpoint and line.
    if (key == "resumed_at_step") continue;
    const llvm::json::Value& value = *summary->getAsObject()->get(key);
    if (llvm::Optional<llvm::StringRef> string = value.getAsString()) {
      page.summary.emplace_back(key, string->str());
    } else if (llvm::Optional<int64_t> integer = value.getAsInteger()) {
      page.summary.emplace_back(key, std::to_string(*integer));
    } else if (llvm::Optional<double> number = value.getAsNumber()) {
      page.summary.emplace_back(key, fmt::format("{}", *number));
    } else if (llvm::Optional<bool> flag = value.getAsBoolean()) {
      page.summary.emplace_back(key, *flag ? "true" : "false");
    }
  }
}

}  // namespace

int RunReportCommand(const std::vector<std::string>& args) {
  std::string run_dir_arg;
  std::string output;
  bool help = false;
  std::vector<cli::Option> table = {
      cli::Option{.names = {"-o", "--output"},
                  .value_name = "<file>",
                  .help = "where to write the page (default <run-dir>/report.html;\n`-`: standard output)",
                  .apply = cli::StoreText(output),
                  .needs = "a file name",
                  .allow_empty = false},
      cli::Option{
          .names = {"-h", "--help"}, .help = "print this help", .apply = cli::SetFlag(help), .exits = true},
  };
  std::string error = cli::Parse(args, table, [&](const std::string& arg) -> std::string {
    if (!run_dir_arg.empty())
      return fmt::format("`accelrun report` takes one run directory, not both `{}` and `{}`", run_dir_arg,
                         arg);
    run_dir_arg = arg;
    return "";
  });
  if (help) {
    fmt::print("{}", Usage(table));
    return 0;
  }
  if (error.empty() && run_dir_arg.empty()) error = "missing the run directory to report on";
  if (!error.empty()) {
    fmt::print(stderr, "accelrun: error: {}\n\n{}", error, Usage(table));
    return kExitUsage;
  }

  fs::path run_dir(run_dir_arg);
  std::error_code ec;
  if (!fs::is_directory(run_dir, ec)) {
    fmt::print(stderr,
               "accelrun: error: `{}` is not a directory; pass a run's output directory (the one with "
               "metrics.jsonl, `output.dir` of the spec or accelrun's --output-dir)\n",
               run_dir_arg);
    return kExitUsage;
  }
  fs::path metrics_path = run_dir / "metrics.jsonl";
  if (!fs::exists(metrics_path, ec)) {
    fmt::print(stderr,
               "accelrun: error: `{}` has no metrics.jsonl; it is written by rank 0 from the run's first "
               "reported step on\n",
               run_dir_arg);
    return kExitUsage;
  }
  llvm::Expected<observe::MetricsHistory> history = observe::ReadMetricsHistory(metrics_path.string());
  if (!history) {
    fmt::print(stderr, "accelrun: error: {}\n", llvm::toString(history.takeError()));
    return kExitBadMetrics;
  }

  observe::ReportPage page;
  // Until plan.json names the job: the directory's own name, also when given as `runs/x/`.
  page.job = run_dir.lexically_normal().parent_path().filename().string();
  if (fs::path name = run_dir.lexically_normal().filename(); !name.empty()) page.job = name.string();
  page.run_dir = run_dir_arg;
  page.history = std::move(*history);
  AddPlan(run_dir, page);
  AddSummary(run_dir, page);
  std::string html = observe::RenderReportPage(page);

  if (output == "-") {
    fmt::print("{}", html);
    return 0;
  }
  std::string target = output.empty() ? (run_dir / "report.html").string() : output;
  if (llvm::Error written = rt::checkpoint::WriteFileAtomically(target, {html})) {
    fmt::print(stderr, "accelrun: error: {}\n", llvm::toString(std::move(written)));
    return kExitUsage;
  }
  const observe::Series* loss = page.history.Find("loss");
  fmt::print("accelrun: wrote {}: {} curve{}, {} loss point{}, {} resume point{}\n", target,
             page.history.series.size(), page.history.series.size() == 1 ? "" : "s",
             loss ? loss->points.size() : 0, loss && loss->points.size() == 1 ? "" : "s",
             page.history.resumes.size(), page.history.resumes.size() == 1 ? "" : "s");
  return 0;
}

}  // namespace accel::tools
