#include "compiler/plan/runtime_limits.h"

#include <fmt/format.h>

namespace accel::plan {

bool WritesShardedCheckpoints(const Plan& plan) {
  const TrainLoop* loop = plan.Find<TrainLoop>();
  return plan.Find<Checkpoint>() != nullptr && loop != nullptr && loop->sharding.stage > 0 &&
         loop->sharding.state_dict_type == StateDictType::sharded;
}

std::vector<RuntimeLimit> RuntimeLimitsBroken(const Plan& plan, std::optional<int64_t> machines) {
  std::vector<RuntimeLimit> broken;
  const InitProcessGroup* init = plan.Find<InitProcessGroup>();
  const int64_t runs_on = machines.value_or(init != nullptr ? init->num_machines : 1);
  // Each machine runs num_processes / num_machines, rounded down (the plan reader refuses 0 in a
  // plan file; lowering divides).
  if (init != nullptr && init->processes_per_machine < 1) {
    broken.push_back({diag::Kind::NativeNoProcessesPerMachine, LimitedSetting::kProcesses,
                      fmt::format("fewer processes than the {} machines", init->num_machines),
                      "; `num_processes` counts every machine's processes: make it at least `num_machines`"});
  }
  const TrainLoop* loop = plan.Find<TrainLoop>();
  if (loop == nullptr) return broken;  // the plan reader refuses a plan without one
  const Sharding& sharding = loop->sharding;
  const Checkpoint* checkpoint = plan.Find<Checkpoint>();
  const BuildModel* model = plan.Find<BuildModel>();
  const bool sharded_checkpoints = WritesShardedCheckpoints(plan);
  const int64_t tp = sharding.tensor_parallel;

  if (sharding.stage > 3) {
    broken.push_back({diag::Kind::NativeShardingStage, LimitedSetting::kShardingStage,
                      fmt::format("sharding stage {}", sharding.stage),
                      "; stages are 0 (DDP) to 3 (parameters sharded): rebuild the plan from its spec"});
  }
  if (tp > 1) {
    // Tensor parallelism splits the model by its tensor-parallel plan, which a TorchScript file
    // does not carry (Accelerate requires a model prepared with a `tp_plan`).
    if (model != nullptr && std::holds_alternative<TorchScript>(model->model)) {
      broken.push_back(
          {diag::Kind::NativeParallelism, LimitedSetting::kTensorParallel,
           fmt::format("`parallelism_config.tp_size = {}` with a TorchScript model", tp),
           "; tensor parallelism needs the model's tensor-parallel plan (Accelerate requires a model "
           "prepared with a `tp_plan`), and a TorchScript file carries none: use tp_size 1, or the "
           "built-in MLP"});
    }
    if (loop->max_grad_norm > 0) {
      broken.push_back(
          {diag::Kind::NativeParallelism, LimitedSetting::kMaxGradNorm,
           fmt::format("`train.max_grad_norm` with `parallelism_config.tp_size = {}`", tp),
           "; the global norm over tensor-parallel slices is not computed yet: drop `max_grad_norm` "
           "or use tp_size 1"});
    }
    // The sharded layout has coordinates for a rank's data-parallel shard only, not for the
    // tensor-parallel slice inside it.
    if (sharded_checkpoints) {
      broken.push_back(
          {diag::Kind::NativeShardedTensorParallel, LimitedSetting::kStateDictType,
           fmt::format("sharded checkpoints with `parallelism_config.tp_size = {}`", tp),
           "; the sharded layout has no coordinates for tensor-parallel slices: set the FSDP state dict type "
           "to FULL_STATE_DICT (rank 0 writes whole tensors, which resume on any mesh)"});
    }
  }
  // Every rank writes its slices into one folder, which rank 0 finishes: each machine's own copy
  // would hold only its own ranks' slices.
  if (sharded_checkpoints && checkpoint->save_on_each_node && runs_on > 1) {
    broken.push_back(
        {diag::Kind::NativeShardedPerNode, LimitedSetting::kSaveOnEachNode,
         fmt::format("sharded checkpoints saved on each of {} machines (`project_config.save_on_each_node`)",
                     runs_on),
         "; every machine's ranks write into one folder: unset `save_on_each_node` and put `project_dir` "
         "on a shared file system, or set the FSDP state dict type to FULL_STATE_DICT"});
  }
  return broken;
}

std::string Describe(const RuntimeLimit& limit) {
  const diag::KindInfo& info = diag::Info(limit.kind);
  return fmt::format("{} [{}]", diag::DiagnosticEngine::Format(info, limit.what, limit.fix), info.code);
}

}  // namespace accel::plan
