#ifndef ACCEL_RUNTIME_TOOLS_STATE_COMMAND_H_
#define ACCEL_RUNTIME_TOOLS_STATE_COMMAND_H_

#include <string>
#include <vector>

namespace accel::tools {

// `accelrun export-state <checkpoint-dir> -o <folder>`: a checkpoint as the folder Accelerate's
// save_state writes (accelerate_state.h). Returns the exit code: 0; 1 when the checkpoint does
// not verify or holds what cannot be exported, or a file cannot be written; 2 for usage errors.
int RunExportStateCommand(const std::vector<std::string>& args);

// `accelrun import-state <folder> <spec | plan> -o <checkpoint-dir>`: the folder Accelerate's
// save_state wrote, as a checkpoint of the job. Exit codes as RunExportStateCommand's.
int RunImportStateCommand(const std::vector<std::string>& args);

}  // namespace accel::tools

#endif  // ACCEL_RUNTIME_TOOLS_STATE_COMMAND_H_
