// The config file of a script launch: where Accelerate looks for it when none is given, and
// its check (as `accelc check` checks it) before it is read as Accelerate's loader reads it,
// scalars typed as PyYAML types them. What the launch makes of it is runtime/launch/accelerate's.
#include <unistd.h>

#include <cstdlib>

#include <fmt/format.h>

#include "compiler/diagnostics/render.h"
#include "compiler/pipeline/compile.h"
#include "runtime/tools/script_command_internal.h"

namespace accel::tools {
namespace {

namespace acc = rt::launch::accelerate;

acc::PyValue ToPython(const ast::Expr& expr);

acc::PyDict ToPython(const ast::Block& block) {
  acc::PyDict dict;
  for (const ast::Statement& statement : block.statements) {
    if (statement.path.empty()) continue;
    acc::PyValue value = statement.value   ? ToPython(*statement.value)
                         : statement.block ? acc::PyValue{ToPython(*statement.block)}
                                           : acc::PyValue{};
    dict.emplace_back(statement.path.front().text, std::move(value));
  }
  return dict;
}

// A config file's value as yaml.safe_load gave it to Accelerate (the reader types scalars as
// PyYAML does).
acc::PyValue ToPython(const ast::Expr& expr) {
  switch (expr.kind) {
    case ast::ExprKind::Int:
      return {expr.int_value};
    case ast::ExprKind::Float:
      return {expr.float_value};
    case ast::ExprKind::Bool:
      return {expr.bool_value};
    case ast::ExprKind::None:
      return {};
    case ast::ExprKind::List: {
      acc::PyList list;
      for (const ast::ExprPtr& item : expr.operands) list.push_back(ToPython(*item));
      return {list};
    }
    case ast::ExprKind::Record:
      return {expr.block ? ToPython(*expr.block) : acc::PyDict{}};
    case ast::ExprKind::Map: {
      acc::PyDict dict;
      for (size_t i = 0; i < expr.path.size() && i < expr.operands.size(); ++i)
        dict.emplace_back(expr.path[i].text, ToPython(*expr.operands[i]));
      return {dict};
    }
    default:
      return {expr.text};
  }
}

}  // namespace

std::string DefaultConfigFile(const rt::launch::Environment& env) {
  auto get = [&env](const char* name) -> std::string {
    auto it = env.find(name);
    return it == env.end() ? "" : it->second;
  };
  std::string home = get("HF_HOME");
  if (home.empty()) {
    std::string cache = get("XDG_CACHE_HOME");
    if (cache.empty()) cache = get("HOME") + "/.cache";
    home = cache + "/huggingface";
  }
  if (!home.empty() && home[0] == '~') home = get("HOME") + home.substr(1);
  return home + "/accelerate/default_config.yaml";
}

std::optional<acc::ConfigFile> CheckConfig(const std::string& path) {
  diag::DiagnosticEngine stdlib_diagnostics;
  auto stdlib = pipeline::Stdlib::Load(stdlib_diagnostics);
  sema::ProcessEnvironment environment;
  pipeline::CompileOptions options;
  options.lower = false;
  options.tool = "accelerate";
  pipeline::Compilation compilation = pipeline::CompileFile(path, *stdlib, environment, options);
  bool color = isatty(STDERR_FILENO) && std::getenv("NO_COLOR") == nullptr;
  fmt::print(stderr, "{}", diag::RenderText(compilation.diagnostics.diagnostics(), {color}));
  if (compilation.diagnostics.has_errors()) {
    fmt::print(stderr,
               "accelrun: error: `{}` has errors (above) that `accelerate launch` fails on or misreads\n",
               path);
    return std::nullopt;
  }
  if (compilation.root_record != "ClusterConfig" && compilation.root_record != "SageMakerConfig") {
    fmt::print(stderr,
               "accelrun: error: `{}` is {}, not an Accelerate config file (`accelerate config` writes one); "
               "a script is launched with an Accelerate config, or with launch options alone\n",
               path,
               compilation.root_record == "DeepSpeedConfig"
                   ? "a DeepSpeed config (name it with "
                     "`deepspeed_config_file` in an Accelerate config)"
                   : "a job spec");
    return std::nullopt;
  }
  acc::ConfigFile config{path, {}};
  if (compilation.tree && !compilation.tree->jobs.empty())
    config.values = ToPython(compilation.tree->jobs.front().body);
  // Accelerate's loader keeps a null key as None, which is not always its absence: a null
  // `distributed_type` is not NO, so no `num_processes` of 1 is filled in.
  for (const std::string& name : compilation.null_keys) {
    std::erase_if(config.values, [&name](const auto& entry) { return entry.first == name; });
    config.values.emplace_back(name, acc::PyValue{});
  }
  return config;
}

}  // namespace accel::tools
