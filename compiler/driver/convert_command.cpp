// `accelc import` and `accelc export --to accelerate-yaml|deepspeed-json`: an Accelerate config
// as a job spec, and a spec or config as the file the Python stack reads.
#include "compiler/driver/accelc_commands.h"

#include <cstdio>
#include <filesystem>
#include <system_error>
#include <string>

#include <fmt/format.h>

#include "compiler/diagnostics/render.h"
#include "compiler/driver/accelc_shared.h"
#include "compiler/interop/interop.h"
#include "compiler/pipeline/compile.h"
#include "compiler/sema/environment.h"
#include "compiler/sema/value.h"
#include "llvm/Support/Error.h"

namespace accel::accelc {

using pipeline::Compilation;

namespace {

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

}  // namespace

// `accelc import CONFIG` (an Accelerate config as a `.accel` spec) and `accelc export --to ...`
// (a spec or config as the file the Python stack reads). Only what the file sets is carried,
// so the environment is not read.
int Convert(const Options& options, const accel::pipeline::Stdlib& stdlib) {
  const std::string& path = options.files[0];
  accel::sema::MapEnvironment no_environment;
  accel::pipeline::CompileOptions compile_options = options.compile;
  compile_options.lower = false;
  Compilation compilation = accel::pipeline::CompileFile(path, stdlib, no_environment, compile_options);
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
        accel::interop::ImportToAccel(root, schema, accel::interop::JobNameFor(path),
                                      ImportedPathPlacer(options),
                                      accel::pipeline::ReferencedDeepSpeed(compilation));
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

}  // namespace accel::accelc
