#include "runtime/launch/accelerate/launch_flags.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace accel::rt::launch::accelerate {
namespace {

// How argparse treats an option's value.
enum class Kind {
  kTrue,        // store_true: takes no value
  kFalse,       // store_const False (`--no_tpu_cluster`)
  kText,        // type=str
  kInt,         // type=int
  kFloat,       // type=float
  kPyBool,      // type=bool: Python's bool() of the text, True for any non-empty text
  kStrToBool,   // Accelerate's str_to_bool: 1 or 0 (an int, not a bool)
  kBoolTriple,  // `a,b,c` of str_to_bool, as a tuple
  kAppend,      // action=append of str
};

struct Row {
  const char* name;  // the long name without `--`, as Accelerate spells it with underscores
  Kind kind;
  PyValue fallback;  // the argparse default, after argparse's conversion of string defaults
  std::vector<std::string> choices = {};
  const char* dest = nullptr;        // when not `name`
  const char* short_name = nullptr;  // `-q`, `-t`, `-m`
};

PyValue None() { return {}; }
PyValue B(bool b) { return {b}; }
PyValue I(int64_t i) { return {i}; }
PyValue F(double d) { return {d}; }
PyValue S(const char* s) { return {std::string(s)}; }

// `accelerate launch`'s options (commands/launch.py of Accelerate 1.15), in its order.
const std::vector<Row>& Table() {
  static const std::vector<Row> rows = {
      {"config_file", Kind::kText, None()},
      {"quiet", Kind::kTrue, None(), {}, nullptr, "-q"},
      {"cpu", Kind::kTrue, B(false)},
      {"multi_gpu", Kind::kTrue, B(false)},
      {"tpu", Kind::kTrue, B(false)},
      {"mixed_precision", Kind::kText, None(), {"no", "fp16", "bf16", "fp8"}},
      {"num_processes", Kind::kInt, None()},
      {"num_machines", Kind::kInt, None()},
      {"num_cpu_threads_per_process", Kind::kInt, None()},
      {"enable_cpu_affinity", Kind::kTrue, B(false)},
      {"dynamo_backend",
       Kind::kText,
       None(),
       {"no", "eager", "aot_eager", "inductor", "aot_ts_nvfuser", "nvprims_nvfuser", "cudagraphs", "ofi",
        "fx2trt", "onnxrt", "tensorrt", "aot_torchxla_trace_once", "torhchxla_trace_once", "tvm"}},
      {"dynamo_mode", Kind::kText, S("default"), {"default", "reduce-overhead", "max-autotune"}},
      {"dynamo_use_fullgraph", Kind::kTrue, B(false)},
      {"dynamo_use_dynamic", Kind::kTrue, B(false)},
      {"dynamo_use_regional_compilation", Kind::kTrue, B(false)},
      {"use_deepspeed", Kind::kTrue, B(false)},
      {"use_fsdp", Kind::kTrue, B(false)},
      {"use_parallelism_config", Kind::kTrue, B(false)},
      {"use_megatron_lm", Kind::kTrue, B(false)},
      {"gpu_ids", Kind::kText, None()},
      {"same_network", Kind::kTrue, B(false)},
      {"machine_rank", Kind::kInt, None()},
      {"main_process_ip", Kind::kText, None()},
      {"main_process_port", Kind::kInt, None()},
      {"tee", Kind::kText, S("0"), {}, nullptr, "-t"},
      {"log_dir", Kind::kText, None()},
      {"role", Kind::kText, S("default")},
      {"rdzv_backend", Kind::kText, S("static")},
      {"rdzv_conf", Kind::kText, S("")},
      {"max_restarts", Kind::kInt, I(0)},
      {"monitor_interval", Kind::kFloat, F(0.1)},
      {"module", Kind::kTrue, None(), {}, nullptr, "-m"},
      {"no_python", Kind::kTrue, None()},
      {"tpu_cluster", Kind::kTrue, B(false), {}, "tpu_use_cluster"},
      {"no_tpu_cluster", Kind::kFalse, B(true), {}, "tpu_use_cluster"},
      {"tpu_use_sudo", Kind::kTrue, B(false)},
      {"vm", Kind::kAppend, None()},
      {"env", Kind::kAppend, None()},
      {"main_training_function", Kind::kText, None()},
      {"downcast_bf16", Kind::kTrue, B(false)},
      {"deepspeed_config_file", Kind::kText, None()},
      {"zero_stage", Kind::kInt, None()},
      {"offload_optimizer_device", Kind::kText, None()},
      {"offload_param_device", Kind::kText, None()},
      {"offload_optimizer_nvme_path", Kind::kText, None()},
      {"offload_param_nvme_path", Kind::kText, None()},
      {"gradient_accumulation_steps", Kind::kInt, None()},
      {"gradient_clipping", Kind::kFloat, None()},
      {"zero3_init_flag", Kind::kText, None()},
      {"zero3_save_16bit_model", Kind::kText, None()},
      {"deepspeed_hostfile", Kind::kText, None()},
      {"deepspeed_exclusion_filter", Kind::kText, None()},
      {"deepspeed_inclusion_filter", Kind::kText, None()},
      {"deepspeed_multinode_launcher", Kind::kText, None()},
      {"deepspeed_moe_layer_cls_names", Kind::kText, None()},
      {"fsdp_version", Kind::kText, S("1"), {"1", "2"}},
      {"fsdp_offload_params", Kind::kText, S("false")},
      {"fsdp_min_num_params", Kind::kInt, I(100000000)},
      {"fsdp_sharding_strategy", Kind::kText, S("FULL_SHARD")},
      {"fsdp_reshard_after_forward", Kind::kText, S("true")},
      {"fsdp_auto_wrap_policy", Kind::kText, None()},
      {"fsdp_transformer_layer_cls_to_wrap", Kind::kText, None()},
      {"fsdp_backward_prefetch", Kind::kText, None()},
      {"fsdp_state_dict_type", Kind::kText, None()},
      {"fsdp_forward_prefetch", Kind::kText, S("false")},
      {"fsdp_use_orig_params", Kind::kText, S("true")},
      {"fsdp_cpu_ram_efficient_loading", Kind::kText, S("true")},
      {"fsdp_sync_module_states", Kind::kText, S("true")},
      {"fsdp_activation_checkpointing", Kind::kText, S("false")},
      {"fsdp_activation_checkpointing_offload", Kind::kText, S("false")},
      {"megatron_lm_tp_degree", Kind::kInt, I(1)},
      {"megatron_lm_use_custom_fsdp", Kind::kPyBool, B(false)},
      {"megatron_lm_no_load_optim", Kind::kPyBool, B(false)},
      {"megatron_lm_eod_mask_loss", Kind::kPyBool, B(false)},
      {"megatron_lm_overlap_cpu_optimizer_d2h_h2d", Kind::kPyBool, B(false)},
      {"megatron_lm_no_save_optim", Kind::kPyBool, B(false)},
      {"megatron_lm_optimizer_cpu_offload", Kind::kPyBool, B(false)},
      {"megatron_lm_use_precision_aware_optimizer", Kind::kPyBool, B(false)},
      {"megatron_lm_decoder_last_pipeline_num_layers", Kind::kInt, None()},
      {"megatron_lm_pp_degree", Kind::kInt, I(1)},
      {"megatron_lm_num_micro_batches", Kind::kInt, None()},
      {"megatron_lm_sequence_parallelism", Kind::kText, None()},
      {"megatron_lm_recompute_activations", Kind::kText, None()},
      {"megatron_lm_use_distributed_optimizer", Kind::kText, None()},
      {"megatron_lm_gradient_clipping", Kind::kFloat, F(1.0)},
      {"megatron_lm_recompute_granularity", Kind::kText, None()},
      {"megatron_lm_recompute_method", Kind::kText, None()},
      {"megatron_lm_recompute_num_layers", Kind::kInt, None()},
      {"megatron_lm_attention_backend", Kind::kText, None()},
      {"megatron_lm_expert_model_parallel_size", Kind::kInt, None()},
      {"megatron_lm_context_parallel_size", Kind::kInt, None()},
      {"megatron_lm_attention_dropout", Kind::kFloat, None()},
      {"megatron_lm_hidden_dropout", Kind::kFloat, None()},
      {"megatron_lm_attention_softmax_in_fp32", Kind::kText, None()},
      {"megatron_lm_expert_tensor_parallel_size", Kind::kInt, None()},
      {"megatron_lm_calculate_per_token_loss", Kind::kText, None()},
      {"megatron_lm_use_rotary_position_embeddings", Kind::kText, None()},
      {"fp8_backend", Kind::kText, None(), {"ao", "te", "msamp"}},
      {"fp8_use_autocast_during_eval", Kind::kTrue, B(false)},
      {"fp8_margin", Kind::kInt, I(0)},
      {"fp8_interval", Kind::kInt, I(1)},
      {"fp8_format", Kind::kText, S("HYBRID"), {"HYBRID", "E4M3", "E5M2"}},
      {"fp8_amax_history_len", Kind::kInt, I(1024)},
      {"fp8_amax_compute_algo", Kind::kText, S("most_recent"), {"max", "most_recent"}},
      {"fp8_override_linear_precision", Kind::kBoolTriple,
       PyValue{PyValue::Tuple{{B(false), B(false), B(false)}}}},
      {"fp8_opt_level", Kind::kText, S("O2"), {"O1", "O2"}},
      // argparse converts a string default with the option's type: str_to_bool("true") is 1.
      {"fp8_enable_fsdp_float8_all_gather", Kind::kStrToBool, I(1)},
      {"fp8_pad_inner_dim", Kind::kStrToBool, I(1)},
      {"aws_access_key_id", Kind::kText, None()},
      {"aws_secret_access_key", Kind::kText, None()},
      {"debug", Kind::kTrue, None()},
      {"mpirun_hostfile", Kind::kText, None()},
      {"parallelism_config_dp_replicate_size", Kind::kInt, I(1)},
      {"parallelism_config_dp_shard_size", Kind::kInt, I(1)},
      {"parallelism_config_tp_size", Kind::kInt, I(1)},
      {"parallelism_config_cp_size", Kind::kInt, I(1)},
      {"parallelism_config_cp_backend", Kind::kText, S("torch"), {"torch"}},
      {"parallelism_config_cp_comm_strategy", Kind::kText, S("allgather")},
      {"parallelism_config_sp_size", Kind::kInt, I(1)},
      {"parallelism_config_sp_backend", Kind::kText, S("deepspeed"), {"deepspeed"}},
      {"parallelism_config_sp_seq_length", Kind::kText, None()},
      {"parallelism_config_sp_seq_length_is_variable", Kind::kPyBool, B(true)},
      {"parallelism_config_sp_attn_implementation", Kind::kText, S("sdpa")},
  };
  return rows;
}

std::string Dest(const Row& row) { return row.dest ? row.dest : row.name; }

std::string Kebab(std::string name) {
  std::replace(name.begin(), name.end(), '_', '-');
  return name;
}

std::vector<std::string> Spellings(const Row& row) {
  std::vector<std::string> names;
  if (row.short_name) names.push_back(row.short_name);
  names.push_back(std::string("--") + row.name);
  if (Kebab(row.name) != row.name) names.push_back("--" + Kebab(row.name));
  return names;
}

const Row* Find(const std::string& spelling) {
  for (const Row& row : Table())
    for (const std::string& name : Spellings(row))
      if (name == spelling) return &row;
  return nullptr;
}

bool TakesValue(Kind kind) { return kind != Kind::kTrue && kind != Kind::kFalse; }

std::optional<int> StrToBool(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(), [](unsigned char c) { return std::tolower(c); });
  for (const char* yes : {"y", "yes", "t", "true", "on", "1"})
    if (text == yes) return 1;
  for (const char* no : {"n", "no", "f", "false", "off", "0"})
    if (text == no) return 0;
  return std::nullopt;
}

// The value argparse stores for `text`, or an error in argparse's words.
std::string Convert(const Row& row, std::string_view flag, std::string_view text, PyValue& out) {
  std::string value(text);
  switch (row.kind) {
    case Kind::kTrue:
      out = B(true);
      return "";
    case Kind::kFalse:
      out = B(false);
      return "";
    case Kind::kText:
    case Kind::kAppend:
      out = PyValue{value};
      break;
    case Kind::kInt: {
      // Python's int() takes surrounding blanks, a sign and underscores between digits.
      std::string digits;
      for (char c : value)
        if (c != '_' && c != ' ') digits += c;
      int64_t parsed = 0;
      auto [end, error] = std::from_chars(digits.data() + (digits.size() && digits[0] == '+'),
                                          digits.data() + digits.size(), parsed);
      if (digits.empty() || error != std::errc() || end != digits.data() + digits.size())
        return fmt::format("`{}`: invalid int value: '{}'", flag, value);
      out = I(parsed);
      break;
    }
    case Kind::kFloat: {
      char* end = nullptr;
      double parsed = std::strtod(value.c_str(), &end);
      if (value.empty() || end != value.c_str() + value.size())
        return fmt::format("`{}`: invalid float value: '{}'", flag, value);
      out = F(parsed);
      break;
    }
    case Kind::kPyBool:
      out = B(!value.empty());
      break;
    case Kind::kStrToBool: {
      std::optional<int> parsed = StrToBool(value);
      if (!parsed) return fmt::format("`{}`: invalid str_to_bool value: '{}'", flag, value);
      out = I(*parsed);
      break;
    }
    case Kind::kBoolTriple: {
      PyValue::Tuple tuple;
      size_t start = 0;
      while (true) {
        size_t comma = value.find(',', start);
        std::optional<int> parsed = StrToBool(value.substr(start, comma - start));
        if (!parsed) return fmt::format("`{}`: invalid <lambda> value: '{}'", flag, value);
        tuple.items.push_back(I(*parsed));
        if (comma == std::string::npos) break;
        start = comma + 1;
      }
      out = PyValue{std::move(tuple)};
      break;
    }
  }
  if (!row.choices.empty() && std::find(row.choices.begin(), row.choices.end(), value) == row.choices.end())
    return fmt::format("`{}`: invalid choice: '{}' (choose from {})", flag, value,
                       fmt::join(row.choices, ", "));
  return "";
}

}  // namespace

const PyValue& LaunchNamespace::Get(const std::string& dest) const {
  static const PyValue none;
  for (const auto& [name, value] : values)
    if (name == dest) return value;
  return none;
}

void LaunchNamespace::Set(const std::string& dest, PyValue value) {
  for (auto& [name, existing] : values)
    if (name == dest) {
      existing = std::move(value);
      return;
    }
  values.emplace_back(dest, std::move(value));
}

bool LaunchNamespace::Has(const std::string& dest) const {
  return std::any_of(values.begin(), values.end(), [&](const auto& entry) { return entry.first == dest; });
}

LaunchNamespace DefaultNamespace() {
  LaunchNamespace ns;
  for (const Row& row : Table())
    if (!ns.Has(Dest(row))) ns.Set(Dest(row), row.fallback);
  return ns;
}

std::vector<cli::Option> LaunchOptions(LaunchNamespace& ns) {
  std::vector<cli::Option> options;
  for (const Row& row : Table()) {
    options.push_back(
        cli::Option{.names = Spellings(row),
                    .value_name = TakesValue(row.kind) ? "<value>" : "",
                    .help = "",
                    .apply = [&ns, &row](std::string_view flag, std::string_view text) -> std::string {
                      PyValue value;
                      if (std::string error = Convert(row, flag, text, value); !error.empty()) return error;
                      if (row.kind == Kind::kAppend) {
                        PyValue list = ns.Get(Dest(row));
                        if (!std::holds_alternative<PyList>(list.value)) list = PyValue{PyList{}};
                        std::get<PyList>(list.value).push_back(std::move(value));
                        value = std::move(list);
                      }
                      ns.Set(Dest(row), std::move(value));
                      ns.given.insert(Dest(row));
                      return "";
                    },
                    .needs = "a value",
                    .allow_empty = true});
  }
  return options;
}

bool IsLaunchOption(const std::string& name) { return Find(name) != nullptr; }

bool LaunchOptionTakesValue(const std::string& name) {
  const Row* row = Find(name);
  return row && TakesValue(row->kind);
}

std::vector<std::string> LaunchOptionNames() {
  std::vector<std::string> names;
  for (const Row& row : Table()) names.push_back(std::string("--") + row.name);
  return names;
}

}  // namespace accel::rt::launch::accelerate
