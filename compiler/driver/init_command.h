#ifndef ACCEL_COMPILER_DRIVER_INIT_COMMAND_H_
#define ACCEL_COMPILER_DRIVER_INIT_COMMAND_H_

#include <string>

#include "compiler/pipeline/stdlib.h"

namespace accel::accelc {

struct InitOptions {
  std::string output;            // empty: `job.accel`, or `default_config.yaml` for YAML
  bool accelerate_yaml = false;  // --format accelerate-yaml
  bool defaults = false;         // --defaults: every default, nothing read
  bool force = false;            // --force: an existing file is replaced
};

// `accelc init`: asks the questionnaire on stdin/stdout and writes the file. Returns the exit
// status: 0 written; 2 the output exists (without --force), the input ended, too many bad
// answers, or the file cannot be written (nothing is written then); 70 the answers produced a
// file that does not pass `accelc check --werror` (a bug; nothing is written).
int RunInit(const InitOptions& options, const pipeline::Stdlib& stdlib);

}  // namespace accel::accelc

#endif  // ACCEL_COMPILER_DRIVER_INIT_COMMAND_H_
