#ifndef ACCEL_COMPILER_DRIVER_ACCELC_COMMANDS_H_
#define ACCEL_COMPILER_DRIVER_ACCELC_COMMANDS_H_

// accelc's commands other than check and build, which its main runs itself; what they share is
// in accelc_shared.h.

#include <string>

#include "compiler/driver/accelc_options.h"
#include "compiler/pipeline/stdlib.h"
#include "compiler/sema/schema.h"

namespace accel::accelc {

int ParseOnly(const Options& options);
int ExplainCodes(const Options& options, const sema::Schema& schema);
int DescribePlans(const Options& options, const pipeline::Stdlib& stdlib);
int DiffAcrossReleases(const Options& options, const pipeline::Stdlib& stdlib);
int Convert(const Options& options, const pipeline::Stdlib& stdlib);
int ExportBatchScript(const Options& options, const pipeline::Stdlib& stdlib);
int WriteReference(const std::string& out_dir, const sema::Schema& schema);

}  // namespace accel::accelc

#endif  // ACCEL_COMPILER_DRIVER_ACCELC_COMMANDS_H_
