#ifndef ACCEL_COMPILER_DRIVER_ACCELC_SHARED_H_
#define ACCEL_COMPILER_DRIVER_ACCELC_SHARED_H_

// What several of accelc's commands share: compiling many files, reporting their diagnostics
// (each once), checking the codes --disable/--enable name, and writing an output file.

#include <cstdint>
#include <map>
#include <string>
#include <unordered_set>
#include <vector>

#include "compiler/diagnostics/diagnostic.h"
#include "compiler/driver/accelc_options.h"
#include "compiler/pipeline/compile.h"
#include "compiler/pipeline/stdlib.h"
#include "compiler/sema/schema.h"

namespace accel::accelc {

// One file reached by several paths (`x.json`, `probes/../x.json`, a DeepSpeed JSON that two
// configs name, or that is also checked itself) is reported once: a diagnostic of a file already
// reported at the same place, with the same code and message, is left out of later inputs.
class ReportedOnce {
 public:
  diag::DiagnosticEngine Unseen(diag::DiagnosticEngine engine);

 private:
  std::string KeyOf(const diag::Diagnostic& d);

  std::map<std::string, std::string> files_;  // a file's name as given -> the file it is
  std::unordered_set<uint64_t> seen_;
};

// Prints the diagnostics of every compilation, in the requested format, as one document.
void Report(const std::vector<pipeline::Compilation>& compilations, const Options& options);
// Writes `text` to `path`, replacing what was there; false when it could not be written.
bool WriteFile(const std::string& path, const std::string& text);
// Compiles `files` on `jobs` threads; results keep the order of `files`.
std::vector<pipeline::Compilation> CompileAll(const std::vector<std::string>& files,
                                              const pipeline::Stdlib& stdlib,
                                              const sema::Environment& environment,
                                              const pipeline::CompileOptions& compile_options,
                                              unsigned jobs);
// An unknown code in --disable/--enable; returns an error message, or "".
std::string CheckToggles(const Options& options, const sema::Schema& schema);

}  // namespace accel::accelc

#endif  // ACCEL_COMPILER_DRIVER_ACCELC_SHARED_H_
