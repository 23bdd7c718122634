#ifndef ACCEL_COMPILER_PIPELINE_FILTER_H_
#define ACCEL_COMPILER_PIPELINE_FILTER_H_

#include <string>
#include <utility>
#include <vector>

#include "compiler/diagnostics/diagnostic.h"

namespace accel::pipeline {

// What `accelc check` reports of the diagnostics a compilation produced.
struct FilterOptions {
  // `--disable P` / `--enable P` in command-line order, later ones winning: (enabled, pattern).
  // A pattern is a code (`DS-019`, `A2010`), a prefix ending in `*` (`FSDP-*`), or `all`.
  std::vector<std::pair<bool, std::string>> toggles;
  bool werror = false;  // warnings become errors
};

// True when `pattern` is well formed and could match some code in `known`.
bool PatternMatchesAny(const std::string& pattern, const std::vector<std::string>& known);

// Applies, in order: suppression comments in `source` (`// accelc-ignore[CODE]: reason` on the
// diagnostic's line or alone on the line before it; `accelc-ignore-file[CODE]: reason` for the
// whole file; `#` instead of `//` in YAML), then the toggles, then --werror. Syntax errors
// (A1xxx) are never dropped. Suppressions without a reason (A2017) and ones that match nothing
// (A2018) are reported. Returns the diagnostics to show; `suppressed` counts those dropped.
// `produced` is taken by value: callers that are done with it move it in, so a file's
// diagnostics are never held twice.
diag::DiagnosticEngine Filter(const source::SourceFile* source, diag::DiagnosticEngine produced,
                              const FilterOptions& options, int* suppressed);

}  // namespace accel::pipeline

#endif  // ACCEL_COMPILER_PIPELINE_FILTER_H_
