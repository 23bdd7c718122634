#ifndef ACCEL_COMPILER_SEMA_CHECK_H_
#define ACCEL_COMPILER_SEMA_CHECK_H_

#include <optional>
#include <string>
#include <vector>

#include "compiler/ast/ast.h"
#include "compiler/diagnostics/diagnostic.h"
#include "compiler/sema/environment.h"
#include "compiler/sema/releases.h"
#include "compiler/sema/schema.h"
#include "compiler/sema/value.h"

namespace accel::sema {

// A checked job: its body resolved against the schema record `Job`.
struct Spec {
  std::string job_name;
  const source::SourceFile* file = nullptr;
  source::Span span;
  Value root;  // a Record of type `Job`, every field resolved
};

// One layer of a composed job: the body of a job (or the `--set` overrides) and its file.
// Later layers override earlier ones field by field.
struct Layer {
  const ast::Block* body = nullptr;
  const source::SourceFile* file = nullptr;
};

// A `let` constant and where it may be named: in the values written in `visible_in`, as
// `name` (`lr`, or `base.lr` when it comes from `import "base.accel" as base`).
struct LetBinding {
  std::string name;
  const ast::LetDecl* let = nullptr;
  const source::SourceFile* file = nullptr;        // where it is declared
  const source::SourceFile* visible_in = nullptr;  // whose values may use it
};

// What the driver resolved from `import`, `extends` and `--set`: the layers in override order
// (the furthest base first, the spec's own job, then the overrides) and the visible lets.
struct Composition {
  std::vector<Layer> layers;
  std::vector<LetBinding> lets;
  // A base job could not be resolved: fields it would have set may be missing, so missing
  // fields are not reported (the A2021 or A2022 says why).
  bool incomplete = false;
};

// A top-level section of a config file whose unknown keys are often meant for another file:
// `deepspeed_config` in an Accelerate config, where DeepSpeed JSON keys have no effect.
struct ForeignKeys {
  std::string section;  // the section's config-file key, e.g. `deepspeed_config`; "": the top level
  std::string record;   // the record of the other file, e.g. `DeepSpeedConfig`
  std::string reader;   // who ignores the key in the section, e.g. "`accelerate launch`"
  std::string where;    // where the key belongs, e.g. "the JSON file `deepspeed_config_file` names"
};

// A config-file key whose "auto" the launcher passes on as is to a tool that resolves it
// (torchrun's `--nproc_per_node auto` counts the machine's devices).
struct AutoPassedOn {
  std::string key;     // the config-file key, e.g. `num_processes`
  std::string reader;  // what becomes of it, for the note
};

// How a launcher reads the keys of one top-level section of a config file: `accelerate launch`
// takes `fsdp_config: {version: 2}` as `fsdp_version`, prefixing every key that does not start
// with `unless`. Both spellings then set the same field.
struct SectionKeyPrefix {
  std::string section;  // the section's config-file key, e.g. `fsdp_config`
  std::string unless;   // keys that start with this are read as written, e.g. `fsdp`
  std::string prefix;   // prepended to every other key, e.g. `fsdp_`
};

struct CheckOptions {
  // The schema record the job's body is checked against: `Job` for a spec, `ClusterConfig`
  // (or `DeepSpeedConfig`, ...) for a config file read by config::ReadConfigFile.
  std::string root = "Job";
  // Fields are named by their config-file keys (`key "..."`), as in Accelerate's files, and
  // strings such as 'no' are accepted for booleans as Accelerate's loader does.
  bool file_keys = false;
  // The values come from YAML or JSON, untyped: booleans may be written as 'no'/"true"
  // strings, a duration as an int of seconds, and `60s`-style quantities may stand for text.
  bool yaml_scalars = false;
  // A known key set to null is unset (Accelerate's config files: the loader passes None on, and
  // launch fills in what None leaves open); an unknown one is still reported. The few keys
  // launch reads None as a value of are the pipeline's (pipeline/launch_reading.h).
  bool null_is_unset = false;
  // A DeepSpeed JSON: unless `target` is `deepspeed`, Accelerate and the Trainer walk every leaf
  // and refuse an "auto" they do not fill, which they name by the key's own name (A3020).
  bool auto_filled_by_key = false;
  // With `auto_filled_by_key`: the file is one a job spec names, whose optimizer's and schedule's
  // params accelrun fills from the job (pipeline::CompileOptions::params_from_job).
  bool params_from_job = false;
  // A DeepSpeed JSON: its closed records are pydantic models in lax mode, which read `"3"` as
  // 3 and 1 as true (A2027, a warning), where a spec's types are strict.
  bool lax_models = false;
  // Null: the file's single job and its own lets, nothing else.
  const Composition* composition = nullptr;
  // Sections of a config file whose keys the launcher reads with a prefix (file_keys only).
  std::vector<SectionKeyPrefix> section_prefixes;
  // Sections whose unknown keys that belong to another file get A2024 (a warning: the reader
  // ignores them) instead of A2003 (file_keys only).
  std::vector<ForeignKeys> foreign_keys;
  // Top-level keys whose "auto" is passed on (file_keys only; the pipeline decides by the
  // launcher): a note, and the value is unknown, so the rules that read it are not run.
  std::vector<AutoPassedOn> autos_passed_on;
  // The tool the file is checked for (`accelerate`, `trainer`, `deepspeed`; `accelc check
  // --for`). A rule declared `for` other tools is reported as a note, not an error or warning,
  // and under `deepspeed` a value `auto` is an error (only Accelerate and the Trainer fill it
  // in). Empty: every rule holds.
  std::string target;
  // `target` was guessed from the file's text (a DeepSpeed JSON that says "auto" is taken as
  // one for Accelerate), not named with `--for`.
  bool target_guessed = false;
  // The release of the tool that reads the file (`accelc check --for deepspeed@0.19.2`). Where it
  // differs from the newest covered one, which the schemas model, its keys, defaults, bounds and
  // validators (releases.def) judge the file. Null: the newest.
  const Release* release = nullptr;
  // With `release`: the release whose defaults its own are compared with (A0006); null: the
  // newest. `accelc diff --for TOOL@OLD..NEW` sets NEW.
  const Release* defaults_against = nullptr;
  // Where to keep the checked values of a file that had errors (Check then returns no Spec), so
  // that a rule across files still runs on the values the file did write (CheckDeepSpeedBatch's
  // `written_only`). Null: not kept.
  std::optional<Spec>* despite_errors = nullptr;
};

// Checks the single job of `file` against `schema`: field names, types, enum members,
// constraints (`where`) and rules, with defaults from the schema and from `environment`.
// Reports every problem it finds to `diagnostics` and returns no Spec if any was an error.
// `file` and `schema` must outlive the returned Spec (it points at their source files).
std::optional<Spec> Check(const ast::File& file, const Schema& schema, const Environment& environment,
                          diag::DiagnosticEngine& diagnostics, const CheckOptions& options = {});

}  // namespace accel::sema

#endif  // ACCEL_COMPILER_SEMA_CHECK_H_
