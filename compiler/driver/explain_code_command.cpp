// `accelc explain-code`: what a diagnostic code or a stdlib rule id means.
#include "compiler/driver/accelc_commands.h"

#include <cstdio>
#include <optional>
#include <string>

#include <fmt/format.h>

#include "compiler/diagnostics/diagnostic.h"
#include "compiler/pipeline/explain.h"

namespace accel::accelc {

// `accelc explain-code CODE...`
int ExplainCodes(const Options& options, const accel::sema::Schema& schema) {
  int status = kExitClean;
  for (const std::string& code : options.files) {
    if (std::optional<std::string> text = accel::pipeline::ExplainCode(code, schema)) {
      fmt::print("{}", *text);
      continue;
    }
    std::string guess = accel::diag::ClosestMatch(code, accel::pipeline::KnownCodes(schema));
    fmt::print(stderr, "accelc: error: unknown code `{}`{}\n", code,
               guess.empty() ? "" : fmt::format("; did you mean `{}`?", guess));
    status = kExitUsage;
  }
  return status;
}

}  // namespace accel::accelc
