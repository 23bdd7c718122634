// libFuzzer target for the config-file reader: any bytes go through yaml-cpp, the typing of
// scalars, the checker against the real stdlib (by config-file keys), suppression comments,
// and rendering of every diagnostic; the first byte picks YAML or JSON rules.
// Built by scripts/fuzz.sh (FUZZ_TARGET=config_fuzzer) with clang, ASan and UBSan.
#include <cstddef>
#include <cstdint>
#include <string>

#include "compiler/diagnostics/render.h"
#include "compiler/pipeline/compile.h"
#include "compiler/pipeline/filter.h"
#include "compiler/pipeline/stdlib.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static accel::diag::DiagnosticEngine stdlib_diagnostics;
  static std::unique_ptr<accel::pipeline::Stdlib> stdlib = accel::pipeline::Stdlib::Load(stdlib_diagnostics);
  static accel::sema::MapEnvironment environment({{"ACCELERATE_DEEPSPEED_ZERO_STAGE", "3"}});
  if (size == 0) return 0;

  const char* name = data[0] % 2 == 0 ? "fuzz.yaml" : "fuzz.json";
  std::string text(reinterpret_cast<const char*>(data) + 1, size - 1);
  accel::pipeline::Compilation compilation =
      accel::pipeline::CompileText(name, std::move(text), *stdlib, environment);
  int suppressed = 0;
  accel::pipeline::FilterOptions options;
  options.werror = true;
  accel::diag::DiagnosticEngine shown =
      accel::pipeline::Filter(compilation.source.get(), compilation.diagnostics, options, &suppressed);
  const auto& diagnostics = shown.diagnostics();
  // Rendering reads spans against the source: a bad span would be caught here by ASan.
  std::string rendered = accel::diag::RenderText(diagnostics) + accel::diag::RenderJson(diagnostics) +
                         accel::diag::RenderSarif(diagnostics, "fuzz") +
                         accel::diag::RenderGithub(diagnostics);
  return rendered.empty() ? 0 : 0;
}
