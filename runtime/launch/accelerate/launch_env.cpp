// The variables Accelerate's launcher sets for each feature a launch uses: the visible
// devices, mixed precision (with fp8's settings), TorchDynamo, the parallelism config, FSDP and
// Megatron-LM, each named as `prepare_*_env` names it. Which launch sets which is
// launch_plan.cpp's; a variable's name and value are decided here.
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "runtime/launch/accelerate/launch_plan_internal.h"

namespace accel::rt::launch::accelerate {

void SetVisibleDevices(const LaunchNamespace& ns, std::map<std::string, std::string>& env) {
  const PyValue& ids = ns.Get("gpu_ids");
  if (!ids.IsNone() && !IsText(ids, "all")) env["CUDA_VISIBLE_DEVICES"] = Str(ids);
}

llvm::Error SetMixedPrecision(const LaunchNamespace& ns, std::map<std::string, std::string>& env) {
  std::string mixed = Lower(Str(ns.Get("mixed_precision")));
  if (mixed != "no" && mixed != "fp8" && mixed != "fp16" && mixed != "bf16")
    return Fail(fmt::format("Unknown mixed_precision mode: {}. Choose between ['no', 'fp8', 'fp16', 'bf16'].",
                            mixed));
  env["ACCELERATE_MIXED_PRECISION"] = mixed;
  if (mixed != "fp8") return llvm::Error::success();
  // setup_fp8_env: every fp8_ setting that is set, by its name.
  for (const auto& [name, value] : ns.values) {
    if (name.rfind("fp8_", 0) != 0 || value.IsNone()) continue;
    if (name == "fp8_override_linear_precision") {
      PyList items;
      if (const auto* tuple = std::get_if<PyValue::Tuple>(&value.value)) items = tuple->items;
      if (const auto* list = std::get_if<PyList>(&value.value)) items = *list;
      // A string (a config file's `(false, false, false)`) is indexed as Accelerate indexes it:
      // one character each.
      if (const std::string* text = value.String())
        for (char c : *text) items.push_back(PyValue{std::string(1, c)});
      const char* parts[] = {"FPROP", "DGRAD", "WGRAD"};
      for (size_t i = 0; i < 3 && i < items.size(); ++i)
        env[fmt::format("ACCELERATE_FP8_OVERRIDE_{}", parts[i])] = Str(items[i]);
      continue;
    }
    env["ACCELERATE_" + Upper(name)] = Str(value);
  }
  return llvm::Error::success();
}

llvm::Error SetDynamo(const LaunchNamespace& ns, std::map<std::string, std::string>& env) {
  static const std::set<std::string> backends = {"NO",
                                                 "EAGER",
                                                 "AOT_EAGER",
                                                 "INDUCTOR",
                                                 "AOT_TS_NVFUSER",
                                                 "NVPRIMS_NVFUSER",
                                                 "CUDAGRAPHS",
                                                 "OFI",
                                                 "FX2TRT",
                                                 "ONNXRT",
                                                 "TENSORRT",
                                                 "AOT_TORCHXLA_TRACE_ONCE",
                                                 "TORCHXLA_TRACE_ONCE",
                                                 "TVM",
                                                 "HPU_BACKEND",
                                                 "NEURON"};
  std::string backend = Upper(Str(ns.Get("dynamo_backend")));
  if (!backends.count(backend))
    return Fail(fmt::format("Unknown dynamo backend: {}. Choose between {}.", backend,
                            fmt::join(std::vector<std::string>(backends.begin(), backends.end()), ", ")));
  env["ACCELERATE_DYNAMO_BACKEND"] = backend;
  env["ACCELERATE_DYNAMO_MODE"] = Str(ns.Get("dynamo_mode"));
  env["ACCELERATE_DYNAMO_USE_FULLGRAPH"] = Str(ns.Get("dynamo_use_fullgraph"));
  env["ACCELERATE_DYNAMO_USE_DYNAMIC"] = Str(ns.Get("dynamo_use_dynamic"));
  env["ACCELERATE_DYNAMO_USE_REGIONAL_COMPILATION"] = Str(ns.Get("dynamo_use_regional_compilation"));
  return llvm::Error::success();
}

void SetParallelismConfig(const LaunchNamespace& ns, std::map<std::string, std::string>& env) {
  if (!Flag(ns, "use_parallelism_config")) return;
  env["ACCELERATE_USE_PARALLELISM_CONFIG"] = "true";
  for (const char* name :
       {"dp_replicate_size", "dp_shard_size", "tp_size", "cp_size", "cp_backend", "sp_size", "sp_backend"})
    env["PARALLELISM_CONFIG_" + Upper(name)] = Str(ns.Get(std::string("parallelism_config_") + name));
  if (AsInt(ns.Get("parallelism_config_cp_size")).value_or(1) > 1)
    env["PARALLELISM_CONFIG_CP_COMM_STRATEGY"] = Str(ns.Get("parallelism_config_cp_comm_strategy"));
  if (AsInt(ns.Get("parallelism_config_sp_size")).value_or(1) > 1)
    for (const char* name : {"sp_seq_length", "sp_seq_length_is_variable", "sp_attn_implementation"})
      env["PARALLELISM_CONFIG_" + Upper(name)] = Str(ns.Get(std::string("parallelism_config_") + name));
}

void SetFsdp(const LaunchNamespace& ns, std::map<std::string, std::string>& env) {
  env["ACCELERATE_USE_FSDP"] = "true";
  env["FSDP_VERSION"] = Str(ns.Get("fsdp_version"));
  env["FSDP_SHARDING_STRATEGY"] = Str(ns.Get("fsdp_sharding_strategy"));
  env["FSDP_MIN_NUM_PARAMS"] = Str(ns.Get("fsdp_min_num_params"));
  for (const char* name : {"reshard_after_forward", "offload_params", "forward_prefetch", "use_orig_params",
                           "cpu_ram_efficient_loading", "sync_module_states", "activation_checkpointing",
                           "activation_checkpointing_offload"})
    env["FSDP_" + Upper(name)] = Lower(Str(ns.Get(std::string("fsdp_") + name)));
  // Set only when given, under these names.
  const std::pair<const char*, const char*> optional[] = {
      {"fsdp_auto_wrap_policy", "FSDP_AUTO_WRAP_POLICY"},
      {"fsdp_transformer_layer_cls_to_wrap", "FSDP_TRANSFORMER_CLS_TO_WRAP"},
      {"fsdp_backward_prefetch", "FSDP_BACKWARD_PREFETCH"},
      {"fsdp_state_dict_type", "FSDP_STATE_DICT_TYPE"},
      {"fsdp_ignored_modules", "FSDP_IGNORED_MODULES"}};
  for (const auto& [dest, variable] : optional)
    if (!ns.Get(dest).IsNone()) env[variable] = Str(ns.Get(dest));
}

void SetMegatron(const LaunchNamespace& ns, std::map<std::string, std::string>& env) {
  env["ACCELERATE_USE_MEGATRON_LM"] = "true";
  for (const char* always : {"tp_degree", "use_custom_fsdp", "pp_degree", "gradient_clipping"})
    env[std::string("MEGATRON_LM_") + Upper(always)] = Str(ns.Get(std::string("megatron_lm_") + always));
  for (const char* when_set : {"no_load_optim",
                               "eod_mask_loss",
                               "no_save_optim",
                               "optimizer_cpu_offload",
                               "use_precision_aware_optimizer",
                               "overlap_cpu_optimizer_d2h_h2d",
                               "decoder_last_pipeline_num_layers",
                               "num_micro_batches",
                               "sequence_parallelism",
                               "recompute_activations",
                               "use_distributed_optimizer",
                               "recompute_granularity",
                               "recompute_method",
                               "recompute_num_layers",
                               "attention_backend",
                               "expert_model_parallel_size",
                               "context_parallel_size",
                               "attention_dropout",
                               "hidden_dropout",
                               "attention_softmax_in_fp32",
                               "expert_tensor_parallel_size",
                               "calculate_per_token_loss",
                               "use_rotary_position_embeddings"}) {
    const PyValue& value = ns.Get(std::string("megatron_lm_") + when_set);
    if (!value.IsNone()) env[std::string("MEGATRON_LM_") + Upper(when_set)] = Str(value);
  }
}

}  // namespace accel::rt::launch::accelerate
