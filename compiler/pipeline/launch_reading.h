#ifndef ACCEL_COMPILER_PIPELINE_LAUNCH_READING_H_
#define ACCEL_COMPILER_PIPELINE_LAUNCH_READING_H_

#include <vector>

#include "compiler/config/reader.h"
#include "compiler/diagnostics/diagnostic.h"
#include "compiler/sema/check.h"
#include "compiler/sema/releases.h"
#include "compiler/sema/value.h"

// Where `accelerate launch` reads an Accelerate config's value otherwise than its type says:
// a null it takes for a value, a null or a list it hands the worker as text. Each is one table
// in launch_reading.cpp, with the launch code it follows.
namespace accel::pipeline {

// How `accelerate launch` copies a config file's sections onto its arguments: the keys of a
// section it prefixes, as the checker reads them too (sema::CheckOptions::section_prefixes), in
// the Accelerate release `accelc check --for accelerate@X` names (null: the newest covered).
std::vector<sema::SectionKeyPrefix> LaunchKeyPrefixes(const sema::Release* accelerate);

// A top-level null that launch reads as a value (`distributed_type: null` runs as `NO`) is
// checked as that value, with a warning (A3013). Before the check: it rewrites `config`.
void ReadNullKeysAsLaunchDoes(config::ConfigFile& config, diag::DiagnosticEngine& diagnostics);

// A null that launch reads as None where None fails (A3019): a section key it writes into the
// worker's environment as the text `None`, or a top-level key it compares or dispatches on. On
// the file as written (the checker takes every other null of a known key as unset), with the
// section prefixes of the Accelerate release `accelerate` (null: the newest covered).
void CheckNullsLaunchReads(const ast::File& file, const sema::Release* accelerate,
                           diag::DiagnosticEngine& diagnostics);

// The top-level keys whose "auto" launch passes on as is for this file, before the check
// (sema::CheckOptions::autos_passed_on): `num_processes` becomes torchrun's `--nproc_per_node` on
// one machine, which counts the machine's devices, and the TPU launcher does not read it. Where
// launch compares or divides the count instead (the simple launcher, `use_cpu`, several
// machines) "auto" stays an error.
std::vector<sema::AutoPassedOn> AutosPassedOn(const ast::File& file);

// After the check, on the checked launch config (`ClusterConfig`): a YAML list launch passes on
// as its Python text, where the plugin then reads it (A3014).
void CheckListsPassedAsText(const sema::Value& launch, diag::DiagnosticEngine& diagnostics);

}  // namespace accel::pipeline

#endif  // ACCEL_COMPILER_PIPELINE_LAUNCH_READING_H_
