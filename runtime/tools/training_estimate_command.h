#ifndef ACCEL_RUNTIME_TOOLS_TRAINING_ESTIMATE_COMMAND_H_
#define ACCEL_RUNTIME_TOOLS_TRAINING_ESTIMATE_COMMAND_H_

#include <string>
#include <vector>

namespace accel::tools {

// `accelrun estimate-memory --training <spec | plan | config> [<checkpoint>]`: what each rank
// of the job holds (runtime/memory/training_estimate.h). Returns the exit code: 0, or 2 for
// usage errors, a file that describes no job, or a model whose parameters are unknown.
int RunTrainingEstimateCommand(const std::vector<std::string>& args);

}  // namespace accel::tools

#endif  // ACCEL_RUNTIME_TOOLS_TRAINING_ESTIMATE_COMMAND_H_
