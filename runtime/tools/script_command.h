#ifndef ACCEL_RUNTIME_TOOLS_SCRIPT_COMMAND_H_
#define ACCEL_RUNTIME_TOOLS_SCRIPT_COMMAND_H_

#include <string>
#include <vector>

namespace accel::tools {

// Whether `args` (without the program name) launch a script the way `accelerate launch` does:
// `accelrun [cfg.yaml] [launch options] train.py [script args]`, `-m module`, `--no_python
// program`, or `--config_file cfg.yaml ...`. A lone spec or plan is a job for the native runtime.
bool IsScriptLaunch(const std::vector<std::string>& args);

// The usage text of the script mode.
std::string ScriptUsage();

// Checks the config file, computes Accelerate's launch for it (runtime/launch/accelerate), then
// starts and supervises the script's processes, or with --dry-run prints each one's command and
// environment. Returns the exit code: 0, 1 (a process failed), 2 (usage or config errors), or
// 128 + the signal that interrupted it.
int RunScriptCommand(const std::vector<std::string>& args);

}  // namespace accel::tools

#endif  // ACCEL_RUNTIME_TOOLS_SCRIPT_COMMAND_H_
