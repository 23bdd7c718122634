#ifndef ACCEL_COMPILER_LOWER_ENGINES_H_
#define ACCEL_COMPILER_LOWER_ENGINES_H_

#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "compiler/diagnostics/diagnostic.h"
#include "compiler/plan/plan.h"
#include "compiler/sema/value.h"
#include "stdlib/spec_views.h"

// The sharding engines a launch config names (FSDP, DeepSpeed), lowered to the plan's
// `train.sharding` and, for a DeepSpeed JSON, to the loop settings the JSON owns. Part of
// lower.cpp's phase, kept apart because each engine is a table of its own.
namespace accel::lower {

// Something the native runtime cannot run, for lower.cpp to report: `value` (never null) is
// where the spec wrote it, `what` and `hint` fill the A4xxx message.
struct Refusal {
  diag::Kind kind;
  const sema::Value* value;
  std::string what;
  std::string hint;
};

// FullyShardedDataParallelPlugin (`compute.fsdp_config`) as the plan's sharding. `plugin` is
// unset when the launch config has no `fsdp_config`: `accelerate launch`'s defaults then apply.
// Settings accelrun cannot run are refused by native_support.def, not here.
plan::Sharding LowerFsdp(const std::optional<spec::FullyShardedDataParallelPlugin>& plugin);

// ParallelismConfig (`compute.parallelism_config`) over the sharding FSDP's
// plugin lowered: tp_size becomes `tensor_parallel`, dp_shard_size the shard groups and
// dp_replicate_size > 1 hybrid sharding across them. The mesh runs under FSDP version 2 only
// (LCH-003 already requires it for a mesh of more than one process), and the built-in models'
// split widths tp_size must divide. `model` is the job's model record. Appends to `refusals`
// what accelrun cannot run; the limits the plan itself shows (a TorchScript model, clipping)
// are plan::RuntimeLimitsBroken's.
void LowerParallelism(const spec::ParallelismConfig& config, spec::DistributedType distributed_type,
                      const std::variant<spec::MLP, spec::Transformer, spec::TorchScript>& model,
                      plan::Sharding& s, std::vector<Refusal>& refusals);

// What the job itself says, for the DeepSpeed values written "auto" (as transformers'
// HfTrainerDeepSpeedConfig and Accelerate's deepspeed_config_process fill them in).
struct DeepSpeedJob {
  int64_t batch_size = 0;  // data.batch_size, per process
  int64_t world_size = 1;
  // The model's width (a built-in Transformer's d_model), which sizes the buckets written
  // "auto"; unset: DeepSpeed's own defaults, as for a model without `config.hidden_size`.
  std::optional<int64_t> hidden_size;
};

// DeepSpeedPlugin (`compute.deepspeed_config`, unset when absent) and, when it names one, the
// checked DeepSpeed JSON (`json`; unset without one). Returns the
// sharding and updates `loop` with what the JSON owns: accumulation, clipping, loss scaling, and
// the optimizer and schedule of its `optimizer` and `scheduler` sections. Appends to
// `refusals` what accelrun cannot run (NVMe offload, other optimizers, pipeline stages, ...).
plan::Sharding LowerDeepSpeed(const std::optional<spec::DeepSpeedPlugin>& plugin,
                              const std::optional<spec::DeepSpeedConfig>& json, const DeepSpeedJob& job,
                              plan::TrainLoop& loop, std::vector<Refusal>& refusals);

}  // namespace accel::lower

#endif  // ACCEL_COMPILER_LOWER_ENGINES_H_
