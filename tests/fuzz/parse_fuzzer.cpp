// libFuzzer target for the front end: any bytes go through parsing, rendering of every
// diagnostic, and (when the parse is clean) checking and lowering against the real stdlib.
// Built by scripts/fuzz.sh with clang, ASan and UBSan; see docs/testing.md.
#include <cstddef>
#include <cstdint>
#include <string>

#include "compiler/diagnostics/render.h"
#include "compiler/pipeline/compile.h"
#include "compiler/pipeline/stdlib.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static accel::diag::DiagnosticEngine stdlib_diagnostics;
  static std::unique_ptr<accel::pipeline::Stdlib> stdlib = accel::pipeline::Stdlib::Load(stdlib_diagnostics);
  static accel::sema::MapEnvironment environment({{"ACCELERATE_USE_CPU", "yes"}});

  std::string text(reinterpret_cast<const char*>(data), size);
  accel::pipeline::Compilation compilation =
      accel::pipeline::CompileText("fuzz.accel", std::move(text), *stdlib, environment);
  const auto& diagnostics = compilation.diagnostics.diagnostics();
  // Rendering reads spans against the source: a bad span would be caught here by ASan.
  std::string rendered = accel::diag::RenderText(diagnostics) + accel::diag::RenderJson(diagnostics) +
                         accel::diag::RenderSarif(diagnostics, "fuzz") +
                         accel::diag::RenderGithub(diagnostics);
  if (compilation.plan) rendered += accel::plan::ToJson(*compilation.plan);
  return rendered.empty() ? 0 : 0;
}
