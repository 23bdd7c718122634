#ifndef ACCEL_RUNTIME_TOOLS_REPORT_COMMAND_H_
#define ACCEL_RUNTIME_TOOLS_REPORT_COMMAND_H_

#include <string>
#include <vector>

namespace accel::tools {

// `accelrun report RUN_DIR [-o FILE]`: one self-contained HTML page of a run (observe/
// report_page.h) from RUN_DIR's metrics.jsonl, plan.json and metrics.json, written to FILE
// (default RUN_DIR/report.html; `-` is standard output). Works on a run still going or killed.
// Returns the exit code: 0; 1 when metrics.jsonl has a line that is not a record (named
// `file:line:col`); 2 for usage errors, a missing directory or metrics.jsonl, or an unwritable
// FILE. A plan.json or metrics.json that is missing or does not read is a warning on stderr and
// a note on the page, since the curves are still worth seeing.
int RunReportCommand(const std::vector<std::string>& args);

}  // namespace accel::tools

#endif  // ACCEL_RUNTIME_TOOLS_REPORT_COMMAND_H_
