#ifndef ACCEL_COMPILER_LOWER_LOWERING_H_
#define ACCEL_COMPILER_LOWER_LOWERING_H_

#include <string>
#include <utility>

#include "compiler/diagnostics/diagnostic.h"
#include "compiler/sema/check.h"
#include "stdlib/spec_views.h"

// What the phases of lowering share (lower.cpp runs them; target, data and train are each a
// file): the checked spec read through its typed views, and the one way a phase reports what
// the native runtime cannot run.
namespace accel::lower {

// What every refusal of the native target offers instead.
inline constexpr std::string_view kExport =
    "; to run it under Accelerate, `accelc export --to accelerate-yaml` writes its config";

class Lowering {
 public:
  Lowering(const sema::Spec& spec, const sema::Value* deepspeed_json, diag::DiagnosticEngine& diagnostics)
      : spec_(spec), deepspeed_json_(deepspeed_json), diagnostics_(diagnostics) {}

  const sema::Spec& spec() const { return spec_; }
  spec::Job job() const { return spec::Job(spec_.root); }
  // The checked DeepSpeed JSON `compute.deepspeed_config.hf_ds_config` names, or null.
  const sema::Value* deepspeed_json() const { return deepspeed_json_; }
  // Whether anything was refused: the plan is then not written.
  bool failed() const { return failed_; }

  // An A4xxx refusal (`what` and `hint` fill its message) at `value`, as Emit places it; a
  // value from the environment names its variable.
  void Unsupported(diag::Kind kind, const sema::Value& value, const std::string& what, std::string_view hint);

  // Reports `kind` where the spec (a base job, a `--set` override) wrote `value`, else at the job.
  template <typename... Args>
  diag::Diagnostic& Emit(diag::Kind kind, const sema::Value& value, Args&&... args) {
    failed_ = true;
    bool located = value.provenance.kind == sema::Provenance::Kind::Spec && value.provenance.file != nullptr;
    return diagnostics_.Emit(kind, located ? value.provenance.file : spec_.file,
                             located ? value.provenance.span : spec_.span, std::forward<Args>(args)...);
  }

 private:
  const sema::Spec& spec_;
  const sema::Value* deepspeed_json_;
  diag::DiagnosticEngine& diagnostics_;
  bool failed_ = false;
};

// A path in the spec, relative to the directory of the file that wrote it (so a spec and its
// data move together); absolute paths stay as they are.
std::string SpecRelative(const sema::Value& value);

// True when the spec (not a default or the environment) set something in `value`.
bool SetInSpec(const sema::Value& value);
// The first value under `value` the spec set, or `value` itself.
const sema::Value& FirstSetInSpec(const sema::Value& value);

}  // namespace accel::lower

#endif  // ACCEL_COMPILER_LOWER_LOWERING_H_
