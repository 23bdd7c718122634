#ifndef ACCEL_COMPILER_DRIVER_ACCELC_COMMANDS_H_
#define ACCEL_COMPILER_DRIVER_ACCELC_COMMANDS_H_

// accelc's commands other than check and build, which its main runs itself, one file each (named
// beside each below); what several share is in accelc_shared.h.

#include <string>

#include "compiler/driver/accelc_options.h"
#include "compiler/pipeline/stdlib.h"
#include "compiler/sema/schema.h"

namespace accel::accelc {

// Each returns the command's exit status, having printed its output and diagnostics. `accelc init`
// is in init_command.h, with the options it takes.

// `accelc parse` and `dump-ast` (parse_command.cpp).
int ParseOnly(const Options& options);
// `accelc explain-code` (explain_code_command.cpp).
int ExplainCodes(const Options& options, const sema::Schema& schema);
// `accelc explain` and `diff A B`; `diff --for` (explain_diff_command.cpp).
int DescribePlans(const Options& options, const pipeline::Stdlib& stdlib);
int DiffAcrossReleases(const Options& options, const pipeline::Stdlib& stdlib);
// `accelc import`, and `export` to the files the Python stack reads (convert_command.cpp).
int Convert(const Options& options, const pipeline::Stdlib& stdlib);
// `accelc export --to sbatch` (export_sbatch_command.cpp).
int ExportBatchScript(const Options& options, const pipeline::Stdlib& stdlib);
// `accelc docs` (docs_command.cpp).
int WriteReference(const std::string& out_dir, const sema::Schema& schema);

}  // namespace accel::accelc

#endif  // ACCEL_COMPILER_DRIVER_ACCELC_COMMANDS_H_
