#ifndef ACCEL_RUNTIME_TOOLS_CONSOLIDATE_COMMAND_H_
#define ACCEL_RUNTIME_TOOLS_CONSOLIDATE_COMMAND_H_

#include <string>
#include <vector>

namespace accel::tools {

// `accelrun consolidate CKPT_DIR -o FILE [--optimizer FILE]`: merges the model slices of a
// sharded checkpoint (runtime/checkpoint/sharded_state.h) into one safetensors file of whole
// tensors, and with --optimizer the optimizer state into another; what DeepSpeed's
// zero_to_fp32 and torch's DCP-to-torch conversion do. Every byte is verified against the
// checkpoint's manifest first, and the output is assembled from the mapped shard files without
// holding the model in memory. Returns the exit code: 0; 1 when the checkpoint does not verify,
// is not sharded, misses a shard file or its slices do not tile a tensor (the message says
// which); 2 for usage errors or an output that cannot be written.
int RunConsolidateCommand(const std::vector<std::string>& args);

}  // namespace accel::tools

#endif  // ACCEL_RUNTIME_TOOLS_CONSOLIDATE_COMMAND_H_
