#include "runtime/tools/plan_input.h"

#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "compiler/diagnostics/render.h"
#include "compiler/pipeline/compile.h"

namespace accel::tools {

std::optional<std::string> ReadWholeFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream buffer;
  buffer << in.rdbuf();
  if (!in) return std::nullopt;
  return buffer.str();
}

std::optional<plan::Plan> LoadPlan(const std::string& path) {
  std::optional<std::string> text = ReadWholeFile(path);
  if (!text) {
    fmt::print(stderr, "accelrun: error: cannot read `{}`\n", path);
    return std::nullopt;
  }
  llvm::Expected<plan::Plan> plan = plan::FromJson(*text, path);
  if (!plan) {
    fmt::print(stderr, "accelrun: error: {}\n", llvm::toString(plan.takeError()));
    return std::nullopt;
  }
  return std::move(*plan);
}

std::optional<plan::Plan> CompileSpec(const std::string& path, const std::vector<std::string>& overrides) {
  diag::DiagnosticEngine stdlib_diagnostics;
  auto stdlib = pipeline::Stdlib::Load(stdlib_diagnostics);
  sema::ProcessEnvironment environment;
  pipeline::CompileOptions options;
  options.overrides = overrides;
  pipeline::Compilation compilation = pipeline::CompileFile(path, *stdlib, environment, options);
  bool color = isatty(STDERR_FILENO) && std::getenv("NO_COLOR") == nullptr;
  fmt::print(stderr, "{}", diag::RenderText(compilation.diagnostics.diagnostics(), {color}));
  // Accelerate's config files and schema files check cleanly but describe no job to run.
  if (!compilation.plan && !compilation.diagnostics.has_errors()) {
    fmt::print(
        stderr,
        "accelrun: error: `{}` is {}, not a job spec: nothing to run; write a job (`job NAME {{ ... }}`, "
        "or `job: NAME` in YAML), or `accelc import` it into one\n",
        path, compilation.config_file ? "an Accelerate or DeepSpeed config file" : "a schema file");
  }
  return std::move(compilation.plan);
}

}  // namespace accel::tools
