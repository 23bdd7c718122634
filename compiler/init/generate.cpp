// Generate: the answers as the file `accelc init` writes, checked before it is returned.
#include <fmt/format.h>

#include "compiler/diagnostics/render.h"
#include "compiler/pipeline/compile.h"
#include "compiler/format/format.h"
#include "compiler/init/init.h"
#include "compiler/interop/interop.h"
#include "compiler/source/source_file.h"

namespace accel::init {
namespace {

llvm::Error Internal(const std::string& what) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), "%s", what.c_str());
}

// Checks `text` as `accelc check --werror` would, with no environment (what the file says is
// what counts), and keeps the compilation for the caller. Fails on any error or warning.
llvm::Expected<pipeline::Compilation> CheckClean(const std::string& name, const std::string& text,
                                               const pipeline::Stdlib& stdlib) {
  sema::MapEnvironment no_environment;
  pipeline::CompileOptions options;
  options.lower = false;  // `check` validates for every engine, not only the native runtime's
  pipeline::Compilation compilation = pipeline::CompileText(name, text, stdlib, no_environment, options);
  if (compilation.diagnostics.has_errors() || compilation.diagnostics.warning_count() > 0 ||
      !compilation.spec) {
    return Internal(fmt::format("the generated `{}` does not pass `accelc check --werror`:\n{}--- {}\n{}",
                                name, diag::RenderText(compilation.diagnostics.diagnostics()), name, text));
  }
  return compilation;
}

}  // namespace

llvm::Expected<std::string> Generate(const Answers& answers, OutputFormat format,
                                     const pipeline::Stdlib& stdlib) {
  const std::string spec_name = "init.accel";
  source::SourceFile raw(spec_name, WriteSpec(answers));
  diag::DiagnosticEngine syntax;
  format::Formatted formatted = format::Format(raw, syntax);
  if (formatted.outcome != format::Formatted::Outcome::kFormatted) {
    return Internal(fmt::format("the generated spec cannot be laid out: {}{}\n--- {}\n{}", formatted.problem,
                                diag::RenderText(syntax.diagnostics()), spec_name, raw.text()));
  }
  llvm::Expected<pipeline::Compilation> spec = CheckClean(spec_name, formatted.text, stdlib);
  if (!spec) return spec.takeError();
  if (format == OutputFormat::kAccel) return formatted.text;

  const sema::Value* compute = spec->spec->root.Field("compute");
  if (compute == nullptr) return Internal("the generated spec has no `compute`");
  std::string yaml = interop::ExportAccelerateYaml(*compute, stdlib.schema());
  // The YAML is checked on its own too: it is what `accelerate launch` will read.
  llvm::Expected<pipeline::Compilation> config = CheckClean("default_config.yaml", yaml, stdlib);
  if (!config) return config.takeError();
  return yaml;
}

}  // namespace accel::init
