#ifndef ACCEL_COMPILER_PIPELINE_COMPILE_H_
#define ACCEL_COMPILER_PIPELINE_COMPILE_H_

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "compiler/ast/ast.h"
#include "compiler/diagnostics/diagnostic.h"
#include "compiler/pipeline/compose.h"
#include "compiler/pipeline/stdlib.h"
#include "compiler/plan/plan.h"
#include "compiler/sema/check.h"
#include "compiler/sema/environment.h"

namespace accel::pipeline {

// Spec files larger than this are refused (A1008) before they are read: real specs are a few
// KiB, and the parser needs ~40 bytes of memory per input byte.
inline constexpr size_t kMaxSourceBytes = source::SourceFile::kMaxBytes;

// Everything one compilation produced. Diagnostics point into `source`, which lives here.
struct Compilation {
  std::unique_ptr<source::SourceFile> source;  // null when the file could not be read
  diag::DiagnosticEngine diagnostics;
  std::optional<sema::Spec> spec;  // the checked job or config file, when checking succeeded
  // The checked values of a file with errors (no `spec` then): what rules across files read of
  // the values it did write (sema::CheckOptions::despite_errors).
  std::optional<sema::Spec> despite_errors;
  std::optional<plan::Plan> plan;  // set when every phase succeeded
  bool schema_only = false;        // the file declares schemas and no job: checked, not lowered
  bool config_file = false;        // an Accelerate config YAML or DeepSpeed JSON: checked, not lowered
  // The schema record the file's top level is checked against: `Job` for a spec, the config
  // reader's choice for a YAML or JSON file (`ClusterConfig`, `DeepSpeedConfig`, ...). Empty
  // when the file was not read that far.
  std::string root_record;
  // The checked file's tree and what it pulled in (imports, `--set`): kept with the results
  // that point into them.
  std::unique_ptr<ast::File> tree;
  // Top-level keys of an Accelerate config set to null. They stay in `tree` as nulls (the
  // checker reads a known one as unset, except where launch fails on None: A3019), and one
  // launch reads as a value is checked as that value (`distributed_type: null` as NO); a
  // launcher that reproduces Accelerate's loader gives them back as None.
  std::vector<std::string> null_keys;
  std::unique_ptr<ComposedSpec> composed;
  // Files the checked one names and that were checked with it (a DeepSpeed JSON config);
  // their diagnostics are in `diagnostics` and point into them.
  std::vector<std::unique_ptr<Compilation>> referenced;
};

struct CompileOptions {
  // Lower a checked spec to a plan. `accelc check` stops after checking: a spec for an engine
  // this runtime does not execute (DeepSpeed, FSDP, ...) is still a valid spec.
  bool lower = true;
  // Without `lower`: report what lowering would refuse as notes (NoteWhatAccelrunCannotRun).
  bool note_native = false;
  // `--set path=value` overrides, in order: the last layer over the spec (or config file).
  std::vector<std::string> overrides;
  // `accelc check --for`: the tool config files are checked for (`accelerate`, `trainer`,
  // `deepspeed`; sema::CheckOptions::target). Empty: an Accelerate config and the DeepSpeed JSON
  // it names are for `accelerate`; a DeepSpeed JSON on its own is for `accelerate` when a value
  // is "auto" (only Accelerate and the Trainer fill those in), else for `deepspeed`.
  std::string tool;
  // `accelc check --for deepspeed@0.19.2`: the releases the config files are checked for (null:
  // the newest covered, which the schemas model; sema::CheckOptions::release).
  struct Releases {
    const sema::Release* accelerate = nullptr;
    const sema::Release* deepspeed = nullptr;
  } releases;
  // `accelc diff --for deepspeed@0.19.2..0.19.8`: the newer releases of the range, whose
  // defaults the file's unset keys are compared with (sema::CheckOptions::defaults_against).
  Releases upgrade_to;
  // `accelc check` and the editor: read a file a config names (a DeepSpeed JSON) only inside
  // the checked file's repository (source::RepositoryOf), since the config is untrusted; off
  // with `--read-outside-repo`, and for `build`, which the user runs on their own files.
  bool confine_references = false;
  // A DeepSpeed JSON a job spec names: accelrun's lowering, not Accelerate, reads it, and takes
  // every "auto" of its optimizer's and schedule's params from the job or leaves the key unread
  // (lower/engines.cpp), so none of those is left unfilled (sema::CheckOptions::params_from_job).
  bool params_from_job = false;
};

// The checked DeepSpeed JSON that the launch config of `compilation` names and that was read
// with it, or null (none named, not found, or with errors).
const sema::Value* ReferencedDeepSpeed(const Compilation& compilation);

// Runs the whole pipeline on the spec at `path`: parse, check against `stdlib`, lower. Stops
// after the first phase that reports an error, having reported everything that phase found.
// A file of schema declarations without a job is checked against the stdlib instead.
// An unreadable file is an A-less error diagnostic with no location.
// Files named `.yaml`, `.yml` or `.json` are Accelerate config files (config::ReadConfigFile),
// checked against the same schemas by their config-file keys and never lowered.
Compilation CompileFile(const std::string& path, const Stdlib& stdlib, const sema::Environment& environment,
                        const CompileOptions& options = {});

// The same on in-memory text; `name` is what diagnostics print (and its suffix picks the format).
Compilation CompileText(const std::string& name, std::string text, const Stdlib& stdlib,
                        const sema::Environment& environment, const CompileOptions& options = {});

}  // namespace accel::pipeline

#endif  // ACCEL_COMPILER_PIPELINE_COMPILE_H_
