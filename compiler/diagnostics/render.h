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

}  // namespace accel::diag

#endif  // ACCEL_COMPILER_DIAGNOSTICS_RENDER_H_
