#ifndef ACCEL_COMPILER_DIAGNOSTICS_RENDER_H_
#define ACCEL_COMPILER_DIAGNOSTICS_RENDER_H_

#include <string>
#include <vector>

#include "compiler/diagnostics/diagnostic.h"

namespace accel::diag {

struct TextStyle {
  bool color = false;  // ANSI colours, for a terminal
};

// Renders diagnostics as clang does:
//   file:line:col: error: message [CODE]
//      12 |     source line
//         |     ^~~~~~
// followed by each note and a `help:` line for a fix-it.
std::string RenderText(const std::vector<Diagnostic>& diagnostics, TextStyle style = {});

// Renders diagnostics as a JSON array of objects with file, line, column, end_line,
// end_column, severity, code, message, notes and fixit.
std::string RenderJson(const std::vector<Diagnostic>& diagnostics);

// Renders diagnostics as a SARIF 2.1.0 log (one run, tool `accelc`), the format GitHub code
// scanning ingests: results with rule ids, levels, regions, related locations for notes and
// fixes for fix-its; the run's rules list every code that occurs.
std::string RenderSarif(const std::vector<Diagnostic>& diagnostics, const std::string& tool_version);

// Renders diagnostics as GitHub Actions workflow commands (`::error file=...,line=...::msg`),
// which the Actions runner shows as annotations on the pull request.
std::string RenderGithub(const std::vector<Diagnostic>& diagnostics);

}  // namespace accel::diag

#endif  // ACCEL_COMPILER_DIAGNOSTICS_RENDER_H_
