#ifndef ACCEL_COMPILER_INTEROP_INTEROP_H_
#define ACCEL_COMPILER_INTEROP_INTEROP_H_

#include <functional>
#include <string>
#include <string_view>

#include "compiler/plan/plan.h"
#include "compiler/sema/schema.h"
#include "compiler/sema/value.h"
#include "llvm/Support/Error.h"

// Interop with Accelerate's own files: a checked config file becomes a `.accel` job
// spec, and a spec's `compute` block (or a checked config file) becomes the files Accelerate
// reads. Every function takes values the checker resolved (sema::Check) and writes text; none
// reads files or the environment. What a value "sets" is decided by its provenance: only
// values whose provenance is `Spec` (written in the checked file) are written, so defaults and
// environment variables never leak into the output.
namespace accel::interop {

// Turns a checked Accelerate config file (`cluster_config`: the root Value that sema::Check
// returned for a config YAML, record `ClusterConfig`) into the text of a `.accel` job spec
// named `job_name`: a header comment naming the source file, a `compute` block with every
// value the file sets (by field name, enum members by name, sections as blocks), and the
// smallest complete workload (`MLP`, `SyntheticRegression`, `train { steps = 100 }`) under a
// comment saying no config file describes one. Legacy keys are upgraded as Accelerate does
// when it loads the file: `fp16` becomes `mixed_precision` (CFG-004/005) and a top-level
// `dynamo_backend` becomes `dynamo_config.backend` (CFG-006). Keys set to `null` and sections
// that set nothing (`deepspeed_config: {}`) are left out, as Accelerate's writer leaves them
// out: an unset optional reads as `none`, and Accelerate reads `{}` as no section (CFG-009).
// The result passes `accelc check`. Every path-typed value goes through `place_path` (the
// caller rewrites a relative path for the spec's own directory: the config's resolved against
// its file, the spec's against the spec's); without one, paths are written as the file has them.
// Fails when `cluster_config` is not a `ClusterConfig` (a SageMaker file has no place in a job),
// when `job_name` is not a name, or when a value has no `.accel` spelling (a string holding a
// carriage return or another control character besides newline and tab, a non-finite float).
using PlacePath = std::function<std::string(const std::string&)>;
// `deepspeed`: the checked DeepSpeed JSON the config names, or null; the workload's loader
// then draws its `train_micro_batch_size_per_gpu`, so that the spec builds.
llvm::Expected<std::string> ImportToAccel(const sema::Value& cluster_config, const sema::Schema& schema,
                                          const std::string& job_name, const PlacePath& place_path = {},
                                          const sema::Value* deepspeed = nullptr);

// `text` as an `.accel` string literal, quoted and escaped, `${` written `$${` so that it stays
// text. Fails on a control character besides newline and tab, which has no spelling.
llvm::Expected<std::string> AccelStringLiteral(std::string_view text);

// A job name for the spec imported from `path`: its file name without the extension, every
// character that cannot be in a name replaced by `_` (`sp-alst.accelerate-config.yml` gives
// `sp_alst_accelerate_config`), `_` in front of a leading digit, `_job` after a reserved word
// (`none`); `imported` when nothing is left.
std::string JobNameFor(std::string_view path);

// Writes `config` (a `ClusterConfig` or `SageMakerConfig` Value: a spec's `compute`, or a
// checked config file's root) as Accelerate's writer would (`yaml.safe_dump` of the config's
// dict, catalog §4.1): config-file keys in sorted order, enums by serialized value, nested
// sections as block mappings, `none` values and empty sections left out. Strings that
// PyYAML would otherwise read as something else (`'NO'`, `'1e5'`, `'null'`, `'1234'`) are
// quoted; so PyYAML's safe_load reads back exactly the values written. Writes the values the
// checked file set plus the required ones (`distributed_type`), whatever their provenance.
std::string ExportAccelerateYaml(const sema::Value& config, const sema::Schema& schema);

// Writes `deepspeed_config` (a checked DeepSpeed JSON config: the root Value of record
// `DeepSpeedConfig`) as JSON with 2-space indent and sorted keys: the values the checked file
// set, explicit nulls and empty sections included, plus the required ones. Enums by serialized
// value (`"auto"`), floats in their shortest form, and non-finite floats as Python's json
// module writes them (`Infinity`, `NaN`), which DeepSpeed's json.load accepts.
std::string ExportDeepSpeedJson(const sema::Value& deepspeed_config, const sema::Schema& schema);

// Where the batch script of ExportSbatch finds what it runs.
struct SbatchOptions {
  std::string plan_path;    // the compiled plan, absolute: the job may start anywhere
  std::string working_dir;  // absolute: the job's working directory (`--chdir`)
  std::string accelrun;     // the accelrun to start: an absolute path, or `accelrun` from PATH
  std::string time;         // `--time`, in one of sbatch's forms (IsSlurmTime); empty: not asked
  int64_t cpus_per_task = 0;  // `--cpus-per-task`; 0: not asked
};

// Whether `text` is a time limit sbatch reads: `minutes`, `minutes:seconds`,
// `hours:minutes:seconds`, `days-hours`, `days-hours:minutes` or `days-hours:minutes:seconds`.
bool IsSlurmTime(std::string_view text);

// Writes a Slurm batch script for `plan`: `#SBATCH` lines for the job name, the plan's
// machines (`--nodes`) and processes per machine (`--ntasks-per-node`, one accelrun and
// worker per task), the working directory and the log file (`<job>-<job id>.out` there); with
// a checkpoint step, `--requeue` and `--open-mode=append`; for a cuda plan one GPU per worker
// (`--gpus-per-node`); `--time` and `--cpus-per-task` when `options` asks (the spec has neither:
// comments then say how to pass them to sbatch). Then `srun <accelrun> <plan>`, with
// `--resume auto` when the plan saves checkpoints, so that a requeued job continues where it
// stopped. Fails when the plan has no
// init_process_group step, or when `working_dir` cannot be written in an `#SBATCH` line (a
// blank or a quote).
llvm::Expected<std::string> ExportSbatch(const plan::Plan& plan, const SbatchOptions& options);

}  // namespace accel::interop

#endif  // ACCEL_COMPILER_INTEROP_INTEROP_H_
