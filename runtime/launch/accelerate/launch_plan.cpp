// Accelerate's launch decisions (commands/launch.py: _validate_launch_command, launch_command;
// utils/launch.py: prepare_simple_launcher_cmd_env, prepare_multi_gpu_env,
// prepare_deepspeed_cmd_env), reproduced step by step so that a script launched by accelrun
// finds exactly the environment `accelerate launch` gives it. Where Accelerate's behaviour is
// surprising (a config value its argparse default hides, a string compared with an int), this
// keeps it and says so: docs/launch.md lists each.
#include "runtime/launch/accelerate/launch_plan.h"

#include <algorithm>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace accel::rt::launch::accelerate {
namespace {

llvm::Error Fail(const std::string& message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

// Python's int() of a value that is already a number (bools are ints in Python).
std::optional<int64_t> AsInt(const PyValue& value) {
  if (const auto* i = std::get_if<int64_t>(&value.value)) return *i;
  if (const auto* b = std::get_if<bool>(&value.value)) return *b ? 1 : 0;
  if (const std::string* s = value.String()) {
    try {
      size_t used = 0;
      long long parsed = std::stoll(*s, &used);
      if (used == s->size()) return parsed;
    } catch (...) {
    }
  }
  return std::nullopt;
}

std::string Lower(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(), [](unsigned char c) { return std::tolower(c); });
  return text;
}

std::string Upper(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(), [](unsigned char c) { return std::toupper(c); });
  return text;
}

const PyValue* Lookup(const PyDict& dict, const std::string& key) {
  for (const auto& [name, value] : dict)
    if (name == key) return &value;
  return nullptr;
}

PyValue Field(const PyDict& dict, const std::string& key) {
  const PyValue* value = Lookup(dict, key);
  return value ? *value : PyValue{};
}

void SetField(PyDict& dict, const std::string& key, PyValue value) {
  for (auto& [name, existing] : dict)
    if (name == key) {
      existing = std::move(value);
      return;
    }
  dict.emplace_back(key, std::move(value));
}

bool IsText(const PyValue& value, const char* text) {
  const std::string* s = value.String();
  return s && *s == text;
}

// ClusterConfig's fields in declaration order, with their defaults: `defaults.__dict__`.
const std::vector<std::pair<std::string, PyValue>>& ClusterConfigFields() {
  static const std::vector<std::pair<std::string, PyValue>> fields = {
      {"compute_environment", {}},
      {"distributed_type", {}},
      {"mixed_precision", {}},
      {"use_cpu", {}},
      {"debug", {}},
      {"num_processes", {int64_t{-1}}},
      {"machine_rank", {int64_t{0}}},
      {"num_machines", {int64_t{1}}},
      {"gpu_ids", {}},
      {"main_process_ip", {}},
      {"main_process_port", {}},
      {"rdzv_backend", {std::string("static")}},
      {"same_network", {false}},
      {"main_training_function", {std::string("main")}},
      {"enable_cpu_affinity", {false}},
      {"fp8_config", {PyDict{}}},
      {"deepspeed_config", {PyDict{}}},
      {"fsdp_config", {PyDict{}}},
      {"parallelism_config", {PyDict{}}},
      {"megatron_lm_config", {PyDict{}}},
      {"mpirun_config", {PyDict{}}},
      {"downcast_bf16", {false}},
      {"tpu_name", {}},
      {"tpu_zone", {}},
      {"tpu_use_cluster", {false}},
      {"tpu_use_sudo", {false}},
      {"command_file", {}},
      {"commands", {}},
      {"tpu_vm", {}},
      {"tpu_env", {}},
      {"dynamo_config", {PyDict{}}},
  };
  return fields;
}

bool IsSectionField(const std::string& name) {
  return name.size() > 7 && name.rfind("_config") == name.size() - 7;
}

const std::set<std::string>& DistributedTypes() {
  static const std::set<std::string> types = {
      "NO",        "MULTI_CPU", "MULTI_GPU", "MULTI_NPU", "MULTI_MLU",   "MULTI_SDAA", "MULTI_MUSA",
      "MULTI_XPU", "DEEPSPEED", "FSDP",      "XLA",       "MEGATRON_LM", "MULTI_HPU",  "MULTI_NEURON"};
  return types;
}

// `load_config_from_file` and `process_config`: the ClusterConfig, every field present.
llvm::Expected<PyDict> LoadClusterConfig(const ConfigFile& file) {
  PyDict raw = file.values;
  if (!Lookup(raw, "compute_environment"))
    SetField(raw, "compute_environment", {std::string("LOCAL_MACHINE")});
  if (!Lookup(raw, "distributed_type"))
    return Fail(fmt::format("{}: A `distributed_type` must be specified in the config file.", file.path));
  if (!Lookup(raw, "num_processes") && IsText(Field(raw, "distributed_type"), "NO"))
    SetField(raw, "num_processes", {int64_t{1}});
  if (!Lookup(raw, "mixed_precision"))
    SetField(raw, "mixed_precision", Truthy(Field(raw, "fp16")) ? PyValue{std::string("fp16")} : PyValue{});
  PyDict processed;
  std::optional<PyValue> dynamo_backend;
  for (auto& [key, value] : raw) {
    if (key == "fp16") continue;
    if (key == "dynamo_backend") {
      dynamo_backend = value;
      continue;
    }
    processed.emplace_back(key, value);
  }
  if (dynamo_backend) {
    PyDict section;
    if (!IsText(*dynamo_backend, "NO")) section.emplace_back("dynamo_backend", *dynamo_backend);
    SetField(processed, "dynamo_config", {section});
  }
  for (const char* flag : {"use_cpu", "debug", "enable_cpu_affinity"})
    if (!Lookup(processed, flag)) SetField(processed, flag, {false});

  std::vector<std::string> unknown;
  for (const auto& [key, value] : processed) {
    bool known = std::any_of(ClusterConfigFields().begin(), ClusterConfigFields().end(),
                             [&](const auto& field) { return field.first == key; });
    if (!known) unknown.push_back(key);
  }
  if (!IsText(Field(processed, "compute_environment"), "LOCAL_MACHINE"))
    return Fail(
        fmt::format("{}: `compute_environment: {}` launches on Amazon SageMaker through its Python SDK, "
                    "which accelrun does "
                    "not drive; run `accelerate launch` for it",
                    file.path, Str(Field(processed, "compute_environment"))));
  if (!unknown.empty()) {
    std::sort(unknown.begin(), unknown.end());
    PyList names;
    for (const std::string& name : unknown) names.push_back({name});
    return Fail(
        fmt::format("The config file at {} had unknown keys ({}), please try upgrading your `accelerate` "
                    "version or fix (and potentially remove) these keys from your config file.",
                    file.path, Repr({names})));
  }
  const PyValue& type = Field(processed, "distributed_type");
  if (const std::string* text = type.String(); text && !DistributedTypes().count(*text))
    return Fail(fmt::format("{}: '{}' is not a valid DistributedType", file.path, *text));

  // Every field, in declaration order; a section written as null is an empty one.
  PyDict config;
  for (const auto& [name, fallback] : ClusterConfigFields()) {
    const PyValue* given = Lookup(processed, name);
    PyValue value = given ? *given : fallback;
    if (IsSectionField(name) && value.IsNone()) value = PyValue{PyDict{}};
    config.emplace_back(name, std::move(value));
  }
  return config;
}

int GetIntFromEnv(const std::map<std::string, std::string>& env, const std::vector<std::string>& names,
                  int fallback) {
  for (const std::string& name : names) {
    auto it = env.find(name);
    if (it == env.end()) continue;
    std::optional<int64_t> value = AsInt(PyValue{it->second});
    if (value && *value >= 0) return static_cast<int>(*value);
  }
  return fallback;
}

// The distributed types whose scripts torchrun starts as one process per GPU.
bool IsMultiDevice(const std::string& type) {
  return type == "MULTI_GPU" || type == "MULTI_NPU" || type == "MULTI_MLU" || type == "MULTI_SDAA" ||
         type == "MULTI_MUSA" || type == "MULTI_XPU" || type == "MULTI_HPU" || type == "MULTI_NEURON";
}

struct Validated {
  LaunchNamespace ns;
  std::optional<PyDict> defaults;
  bool mp_from_config = false;
  std::vector<std::string> warnings;
};

bool Flag(const LaunchNamespace& ns, const char* name) { return Truthy(ns.Get(name)); }

// `_validate_launch_command`.
llvm::Expected<Validated> Validate(LaunchNamespace ns, const std::optional<ConfigFile>& file,
                                   const Host& host) {
  Validated out;
  int chosen = 0;
  for (const char* flag : {"multi_gpu", "cpu", "tpu", "use_deepspeed", "use_fsdp"}) chosen += Flag(ns, flag);
  if (chosen > 1)
    return Fail(
        "You can only use one of `--cpu`, `--multi_gpu`, `--tpu`, `--use_deepspeed`, `--use_fsdp` at a "
        "time.");
  std::optional<int64_t> num_processes = AsInt(ns.Get("num_processes"));
  if (Flag(ns, "multi_gpu") && num_processes && *num_processes < 2)
    return Fail("You need to use at least 2 processes to use `--multi_gpu`.");
  // Accelerate compares the option's text with the number 1, which is never equal: only a
  // launch without FSDP refuses the parallelism config here.
  if (!Flag(ns, "use_fsdp") && Flag(ns, "use_parallelism_config"))
    return Fail("You cannot use `--use_parallelism_config` without `--use_fsdp` and `--fsdp_version=2`. ");

  if (file) {
    llvm::Expected<PyDict> loaded = LoadClusterConfig(*file);
    if (!loaded) return loaded.takeError();
    const PyDict& defaults = *loaded;
    std::string type =
        Field(defaults, "distributed_type").String() ? *Field(defaults, "distributed_type").String() : "";
    if (!Flag(ns, "multi_gpu") && !Flag(ns, "tpu") && !Flag(ns, "tpu_use_cluster") &&
        !Flag(ns, "use_deepspeed") && !Flag(ns, "use_fsdp") && !Flag(ns, "use_megatron_lm")) {
      ns.Set("use_deepspeed", {type == "DEEPSPEED"});
      ns.Set("multi_gpu", {IsMultiDevice(type)});
      ns.Set("tpu", {type == "XLA"});
      ns.Set("use_fsdp", {type == "FSDP"});
      ns.Set("use_megatron_lm", {type == "MEGATRON_LM"});
      ns.Set("tpu_use_cluster", type == "XLA" ? Field(defaults, "tpu_use_cluster") : PyValue{false});
      const PyValue* parallelism = Lookup(defaults, "parallelism_config");
      const auto* section = parallelism ? std::get_if<PyDict>(&parallelism->value) : nullptr;
      ns.Set("use_parallelism_config", {!(section && section->empty())});
    }
    if (ns.Get("gpu_ids").IsNone())
      ns.Set("gpu_ids",
             Field(defaults, "gpu_ids").IsNone() ? PyValue{std::string("all")} : Field(defaults, "gpu_ids"));
    if (Flag(ns, "multi_gpu") && ns.Get("num_machines").IsNone())
      ns.Set("num_machines", Field(defaults, "num_machines"));
    const std::string* gpu_ids = ns.Get("gpu_ids").String();
    if (gpu_ids == nullptr)
      return Fail(
          fmt::format("{}: `gpu_ids: {}` must be text: Accelerate splits it at commas and fails on a number; "
                      "quote it (`gpu_ids: \"{}\"`) or write `all`",
                      file->path, Str(ns.Get("gpu_ids")), Str(ns.Get("gpu_ids"))));
    if (*gpu_ids != "all" && gpu_ids->find(',') == std::string::npos && Flag(ns, "multi_gpu") &&
        AsInt(ns.Get("num_machines")).value_or(1) <= 1)
      return Fail(
          "Less than two GPU ids were configured and tried to run on multiple GPUs. Please ensure at least "
          "two are "
          "specified for `--gpu_ids`, or use `--gpu_ids='all'`.");
    for (const auto& [name, attr] : defaults) {
      if (const auto* section = std::get_if<PyDict>(&attr.value)) {
        for (const auto& [raw_key, value] : *section) {
          std::string key = raw_key;
          if (name == "fsdp_config" && key.rfind("fsdp", 0) != 0) key = "fsdp_" + key;
          if (name == "fp8_config" && key.rfind("fp8", 0) != 0) key = "fp8_" + key;
          if (name == "dynamo_config" && key.rfind("dynamo_", 0) != 0) key = "dynamo_" + key;
          if (!ns.given.count(key)) ns.Set(key, value);
        }
      } else if (name != "compute_environment" && name != "mixed_precision" && name != "distributed_type" &&
                 ns.Get(name).IsNone()) {
        ns.Set(name, attr);
      }
    }
    if (!Flag(ns, "debug")) ns.Set("debug", Field(defaults, "debug"));
    if (!Flag(ns, "mixed_precision")) {
      const PyValue& mixed = Field(defaults, "mixed_precision");
      ns.Set("mixed_precision", mixed.IsNone() ? PyValue{std::string("no")} : mixed);
      out.mp_from_config = !mixed.IsNone();
    }
    if (ns.Get("dynamo_backend").IsNone()) ns.Set("dynamo_backend", {std::string("no")});
    if (AsInt(ns.Get("num_processes")) == std::optional<int64_t>(-1))
      return Fail(fmt::format("{}: You need to manually pass in `--num_processes` using this config yaml.",
                              file->path));
    out.defaults = defaults;
  } else {
    if (ns.Get("num_processes").IsNone()) {
      ns.Set("num_processes", {int64_t{host.cuda_devices}});
      out.warnings.push_back(fmt::format("`--num_processes` was set to a value of `{}`", host.cuda_devices));
    }
    if (ns.Get("debug").IsNone()) ns.Set("debug", {false});
    if (!Flag(ns, "multi_gpu") && AsInt(ns.Get("num_processes")).value_or(0) > 1 && host.cuda_devices > 1) {
      out.warnings.push_back("More than one GPU was found, enabling multi-GPU training.");
      ns.Set("multi_gpu", {true});
    }
    if (ns.Get("num_machines").IsNone()) {
      out.warnings.push_back("`--num_machines` was set to a value of `1`");
      ns.Set("num_machines", {int64_t{1}});
    }
    if (ns.Get("mixed_precision").IsNone()) {
      out.warnings.push_back("`--mixed_precision` was set to a value of `'no'`");
      ns.Set("mixed_precision", {std::string("no")});
    }
    if (!ns.Has("use_cpu") || ns.Get("use_cpu").IsNone()) ns.Set("use_cpu", ns.Get("cpu"));
    if (ns.Get("dynamo_backend").IsNone()) {
      out.warnings.push_back("`--dynamo_backend` was set to a value of `'no'`");
      ns.Set("dynamo_backend", {std::string("no")});
    }
  }
  if (ns.Get("num_cpu_threads_per_process").IsNone()) {
    ns.Set("num_cpu_threads_per_process", {int64_t{GetIntFromEnv(host.env, {"OMP_NUM_THREADS"}, 1)}});
    int64_t processes = AsInt(ns.Get("num_processes")).value_or(0);
    if (Flag(ns, "use_cpu") && processes >= 1 && GetIntFromEnv(host.env, {"OMP_NUM_THREADS"}, 0) == 0) {
      int64_t machines = std::max<int64_t>(AsInt(ns.Get("num_machines")).value_or(1), 1);
      int local_size = GetIntFromEnv(
          host.env, {"MPI_LOCALNRANKS", "OMPI_COMM_WORLD_LOCAL_SIZE", "MV2_COMM_WORLD_LOCAL_SIZE"},
          static_cast<int>(std::max<int64_t>(processes / machines, 1)));
      int per_process = local_size > 0 ? host.physical_cores / local_size : host.physical_cores;
      if (per_process > 1) {
        ns.Set("num_cpu_threads_per_process", {int64_t{per_process}});
        out.warnings.push_back(
            fmt::format("`--num_cpu_threads_per_process` was set to `{}` to improve out-of-box "
                        "performance when training on CPUs",
                        per_process));
      }
    }
  }
  out.ns = std::move(ns);
  return out;
}

// CUDA_VISIBLE_DEVICES from `gpu_ids` (Accelerate picks another variable for XPU, NPU and the
// other accelerators, whose torch extensions accelrun cannot ask about).
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

// The script's command: `python [-m] script args`, or the program itself with --no_python.
// torchrun adds `-u` for its workers.
llvm::Expected<std::vector<std::string>> ScriptCommand(const LaunchNamespace& ns, const std::string& script,
                                                       const std::vector<std::string>& script_args,
                                                       const Host& host, bool unbuffered) {
  bool module = Flag(ns, "module");
  bool no_python = Flag(ns, "no_python");
  if (module && no_python) return Fail("--module and --no_python cannot be used together");
  std::vector<std::string> command;
  if (!no_python) {
    command.push_back(host.python);
    if (unbuffered) command.push_back("-u");
    if (module) command.push_back("-m");
  }
  command.push_back(script);
  command.insert(command.end(), script_args.begin(), script_args.end());
  return command;
}

// The rendezvous of the torchrun launches (prepare_multi_gpu_env, prepare_deepspeed_cmd_env).
llvm::Error PlaceTorchrun(LaunchNamespace& ns, const Host& host, ScriptLaunch& launch) {
  std::optional<int64_t> port = AsInt(ns.Get("main_process_port"));
  int64_t chosen_port = !port ? 29500 : *port == 0 ? host.free_port() : *port;
  ns.Set("main_process_port", {chosen_port});
  int64_t processes = AsInt(ns.Get("num_processes")).value_or(1);
  int64_t machines = AsInt(ns.Get("num_machines")).value_or(1);
  int64_t machine_rank = AsInt(ns.Get("machine_rank")).value_or(0);
  launch.master_port = static_cast<int>(chosen_port);
  if (machines > 1) {
    launch.nproc_per_node = static_cast<int>(processes / machines);
    launch.nnodes = static_cast<int>(machines);
    launch.node_rank = static_cast<int>(machine_rank);
    // torchrun's static rendezvous reads the address from the endpoint (or --master_addr with
    // same_network): either way the main process's.
    launch.master_addr = Str(ns.Get("main_process_ip"));
  } else {
    launch.nproc_per_node = static_cast<int>(processes);
  }
  launch.max_restarts = static_cast<int>(AsInt(ns.Get("max_restarts")).value_or(0));
  launch.role = Str(ns.Get("role"));
  if (launch.nproc_per_node < 1)
    return Fail(fmt::format("`num_processes` is {}: nothing to start", processes));
  return llvm::Error::success();
}

llvm::Expected<ScriptLaunch> SimpleLaunch(const LaunchNamespace& ns, const std::string& script,
                                          const std::vector<std::string>& script_args, const Host& host) {
  ScriptLaunch launch;
  launch.launcher = "simple";
  if (Flag(ns, "no_python") && Flag(ns, "module"))
    return Fail("--module and --no_python cannot be used together");
  std::optional<int64_t> processes = AsInt(ns.Get("num_processes"));
  int64_t machines = AsInt(ns.Get("num_machines")).value_or(1);
  if (!ns.Get("mpirun_hostfile").IsNone()) {
    // mpirun starts the processes: its flavour (Open MPI, or Intel MPI and MVAPICH) picks the flags.
    llvm::Expected<Mpirun> mpirun = host.find_mpirun();
    if (!mpirun) return mpirun.takeError();
    launch.launcher = "mpirun";
    int per_node = processes && *processes && machines ? static_cast<int>(*processes / machines) : 1;
    launch.command = MpirunCommand(mpirun->path, mpirun->flavor, Str(ns.Get("mpirun_hostfile")), per_node,
                                   static_cast<int>(processes.value_or(0)), {});
    // Accelerate leaves the total out when it has none.
    if (!processes || *processes == 0) {
      auto n = std::find(launch.command.begin(), launch.command.end(), "-n");
      launch.command.erase(n, n + 2);
    }
  }
  llvm::Expected<std::vector<std::string>> command = ScriptCommand(ns, script, script_args, host, false);
  if (!command) return command.takeError();
  launch.command.insert(launch.command.end(), command->begin(), command->end());

  std::map<std::string, std::string>& env = launch.env;
  bool use_cpu = Truthy(ns.Get("cpu")) || Truthy(ns.Get("use_cpu"));
  env["ACCELERATE_USE_CPU"] = Str(Truthy(ns.Get("cpu")) ? ns.Get("cpu") : ns.Get("use_cpu"));
  if (Flag(ns, "debug")) env["ACCELERATE_DEBUG_MODE"] = "true";
  SetVisibleDevices(ns, env);
  if (machines > 1) {
    if (ns.Get("main_process_ip").IsNone())
      return Fail("When using multiple machines, you need to specify the main process IP.");
    if (ns.Get("main_process_port").IsNone())
      return Fail("When using multiple machines, you need to specify the main process port.");
  }
  if ((processes && *processes > 1) || machines > 1) {
    env["MASTER_ADDR"] = ns.Get("main_process_ip").IsNone() ? "127.0.0.1" : Str(ns.Get("main_process_ip"));
    env["MASTER_PORT"] = ns.Get("main_process_port").IsNone() ? "29500" : Str(ns.Get("main_process_port"));
  }
  if (use_cpu) {
    env["KMP_AFFINITY"] = "granularity=fine,compact,1,0";
    env["KMP_BLOCKTIME"] = "1";
  }
  if (llvm::Error error = SetMixedPrecision(ns, env)) return error;
  if (llvm::Error error = SetDynamo(ns, env)) return error;
  env["OMP_NUM_THREADS"] = Str(ns.Get("num_cpu_threads_per_process"));
  if (Flag(ns, "enable_cpu_affinity")) env["ACCELERATE_CPU_AFFINITY"] = "1";
  return launch;
}

llvm::Expected<ScriptLaunch> MultiGpuLaunch(LaunchNamespace ns, const std::string& script,
                                            const std::vector<std::string>& script_args, const Host& host) {
  ScriptLaunch launch;
  launch.runner = Runner::kTorchrun;
  launch.launcher = "torchrun";
  if (llvm::Error error = PlaceTorchrun(ns, host, launch)) return error;
  llvm::Expected<std::vector<std::string>> command = ScriptCommand(ns, script, script_args, host, true);
  if (!command) return command.takeError();
  launch.command = std::move(*command);
  std::map<std::string, std::string>& env = launch.env;
  if (Flag(ns, "debug")) env["ACCELERATE_DEBUG_MODE"] = "true";
  SetVisibleDevices(ns, env);
  if (llvm::Error error = SetMixedPrecision(ns, env)) return error;
  if (llvm::Error error = SetDynamo(ns, env)) return error;
  if (Flag(ns, "use_fsdp")) {
    if (Truthy(ns.Get("fsdp_cpu_ram_efficient_loading")) && !Truthy(ns.Get("fsdp_sync_module_states")))
      return Fail("When using `--fsdp_cpu_ram_efficient_loading` set `--fsdp_sync_module_states` to `True`");
    SetFsdp(ns, env);
  }
  if (Flag(ns, "use_megatron_lm")) SetMegatron(ns, env);
  env["OMP_NUM_THREADS"] = Str(ns.Get("num_cpu_threads_per_process"));
  if (Flag(ns, "enable_cpu_affinity")) env["ACCELERATE_CPU_AFFINITY"] = "1";
  SetParallelismConfig(ns, env);
  return launch;
}

llvm::Expected<ScriptLaunch> DeepSpeedLaunch(LaunchNamespace ns, const Validated& validated,
                                             const std::string& script,
                                             const std::vector<std::string>& script_args, const Host& host) {
  ScriptLaunch launch;
  launch.runner = Runner::kTorchrun;
  launch.launcher = "torchrun";
  std::string multinode = ns.Get("deepspeed_multinode_launcher").IsNone()
                              ? std::string("pdsh")
                              : Str(ns.Get("deepspeed_multinode_launcher"));
  if (llvm::Error error = PlaceTorchrun(ns, host, launch)) return error;
  llvm::Expected<std::vector<std::string>> command = ScriptCommand(ns, script, script_args, host, true);
  if (!command) return command.takeError();
  launch.command = std::move(*command);
  if (launch.nnodes > 1 && multinode != "standard") {
    // DeepSpeed's runner starts every machine's ranks from here (over pdsh, ssh, MPI, ...).
    launch.runner = Runner::kProcess;
    launch.launcher = "deepspeed";
    launch.command = {"deepspeed", "--hostfile", Str(ns.Get("deepspeed_hostfile"))};
    if (multinode == "nossh")
      launch.command.insert(launch.command.end(), {"--node_rank", Str(ns.Get("machine_rank")), "--no_ssh"});
    else
      launch.command.insert(launch.command.end(), {"--no_local_rank", "--launcher", multinode});
    if (!ns.Get("deepspeed_exclusion_filter").IsNone())
      launch.command.insert(launch.command.end(), {"--exclude", Str(ns.Get("deepspeed_exclusion_filter"))});
    else if (!ns.Get("deepspeed_inclusion_filter").IsNone())
      launch.command.insert(launch.command.end(), {"--include", Str(ns.Get("deepspeed_inclusion_filter"))});
    else
      launch.command.insert(launch.command.end(), {"--num_gpus", std::to_string(launch.nproc_per_node)});
    if (Truthy(ns.Get("main_process_ip")))
      launch.command.insert(launch.command.end(), {"--master_addr", Str(ns.Get("main_process_ip"))});
    launch.command.insert(launch.command.end(), {"--master_port", std::to_string(launch.master_port)});
    if (Flag(ns, "module")) launch.command.push_back("--module");
    if (Flag(ns, "no_python")) launch.command.push_back("--no_python");
    launch.command.push_back(script);
    launch.command.insert(launch.command.end(), script_args.begin(), script_args.end());
    launch.deepspeed_env_file = true;
  }
  std::map<std::string, std::string>& env = launch.env;
  if (Flag(ns, "debug")) env["ACCELERATE_DEBUG_MODE"] = "true";
  SetVisibleDevices(ns, env);
  // env_var_path_add: the inherited PYTHONPATH's non-empty entries, then the working directory.
  std::string pythonpath;
  auto inherited = host.env.find("PYTHONPATH");
  if (inherited != host.env.end()) {
    size_t start = 0;
    const std::string& paths = inherited->second;
    while (start <= paths.size()) {
      size_t colon = std::min(paths.find(':', start), paths.size());
      if (colon > start) pythonpath += paths.substr(start, colon - start) + ":";
      start = colon + 1;
    }
  }
  env["PYTHONPATH"] = pythonpath + host.cwd;
  // What importing DeepSpeed in Accelerate's process sets (os.environ.setdefault), which its
  // workers inherit.
  if (!host.env.count("PYTORCH_NVML_BASED_CUDA_CHECK")) env["PYTORCH_NVML_BASED_CUDA_CHECK"] = "1";
  if (llvm::Error error = SetMixedPrecision(ns, env)) return error;
  // The DeepSpeed settings the config file's section gave (the script's DeepSpeedPlugin must not
  // also take them from a DeepSpeed JSON), and the mixed precision when the file chose it.
  std::vector<std::string> fields;
  if (validated.defaults) {
    const PyValue* section = Lookup(*validated.defaults, "deepspeed_config");
    if (const auto* dict = section ? std::get_if<PyDict>(&section->value) : nullptr)
      for (const auto& [key, value] : *dict) fields.push_back(key);
  }
  if (validated.mp_from_config) fields.push_back("mixed_precision");
  env["ACCELERATE_CONFIG_DS_FIELDS"] = Lower(fmt::format("{}", fmt::join(fields, ",")));
  env["ACCELERATE_USE_DEEPSPEED"] = "true";
  const std::tuple<const char*, const char*, bool> settings[] = {
      {"zero_stage", "ACCELERATE_DEEPSPEED_ZERO_STAGE", false},
      {"gradient_accumulation_steps", "ACCELERATE_GRADIENT_ACCUMULATION_STEPS", false},
      {"gradient_clipping", "ACCELERATE_GRADIENT_CLIPPING", true},
      {"offload_optimizer_device", "ACCELERATE_DEEPSPEED_OFFLOAD_OPTIMIZER_DEVICE", true},
      {"offload_param_device", "ACCELERATE_DEEPSPEED_OFFLOAD_PARAM_DEVICE", true},
      {"zero3_init_flag", "ACCELERATE_DEEPSPEED_ZERO3_INIT", true},
      {"zero3_save_16bit_model", "ACCELERATE_DEEPSPEED_ZERO3_SAVE_16BIT_MODEL", true},
      {"deepspeed_config_file", "ACCELERATE_DEEPSPEED_CONFIG_FILE", false},
  };
  for (const auto& [dest, variable, lower] : settings) {
    const PyValue& value = ns.Get(dest);
    if (!value.IsNone()) env[variable] = lower ? Lower(Str(value)) : Str(value);
  }
  if (Flag(ns, "enable_cpu_affinity")) env["ACCELERATE_CPU_AFFINITY"] = "1";
  if (!ns.Get("deepspeed_moe_layer_cls_names").IsNone())
    env["ACCELERATE_DEEPSPEED_MOE_LAYER_CLS_NAMES"] = Str(ns.Get("deepspeed_moe_layer_cls_names"));
  SetParallelismConfig(ns, env);
  return launch;
}

}  // namespace

llvm::Error CheckPort(ScriptLaunch& launch, const Host& host, bool starts_every_rank) {
  bool rendezvous = launch.runner == Runner::kTorchrun || launch.launcher == "deepspeed";
  if (!rendezvous || launch.node_rank != 0) return llvm::Error::success();
  if (!host.port_in_use(launch.master_port)) return llvm::Error::success();
  if (launch.nnodes > 1 || !starts_every_rank)
    return Fail(fmt::format(
        "Tried to launch distributed communication on port `{}`, but another process is utilizing it. Please "
        "specify a different port (such as using the `--main_process_port` flag or specifying a different "
        "`main_process_port` in your config file) and rerun your script. To automatically use the next open "
        "port "
        "(on a single node), you can set this to `0`.",
        launch.master_port));
  // Accelerate's standalone mode: a free port of this machine, and torchrun's new run id.
  int requested = launch.master_port;
  launch.master_port = host.free_port();
  launch.run_id = host.new_run_id();
  launch.warnings.push_back(fmt::format("Port `{}` is already in use; using the free port {} instead",
                                        requested, launch.master_port));
  return llvm::Error::success();
}

llvm::Expected<ScriptLaunch> PlanScriptLaunch(LaunchNamespace ns, const std::optional<ConfigFile>& config,
                                              const std::string& script,
                                              const std::vector<std::string>& script_args, const Host& host) {
  llvm::Expected<Validated> validated = Validate(std::move(ns), config, host);
  if (!validated) return validated.takeError();
  const LaunchNamespace& args = validated->ns;
  bool cpu = Flag(args, "cpu");
  llvm::Expected<ScriptLaunch> launch = [&]() -> llvm::Expected<ScriptLaunch> {
    if (Flag(args, "use_deepspeed") && !cpu)
      return DeepSpeedLaunch(args, *validated, script, script_args, host);
    if ((Flag(args, "use_fsdp") || Flag(args, "use_megatron_lm") || Flag(args, "multi_gpu")) && !cpu)
      return MultiGpuLaunch(args, script, script_args, host);
    if (Flag(args, "tpu") && !cpu)
      return Fail(
          "XLA (TPU) launches run the script inside Accelerate's own Python process (torch_xla's xmp.spawn), "
          "which accelrun does not start; run `accelerate launch` for them");
    return SimpleLaunch(args, script, script_args, host);
  }();
  if (!launch) return launch.takeError();
  launch->distributed_type = Flag(args, "use_deepspeed")     ? "DEEPSPEED"
                             : Flag(args, "use_fsdp")        ? "FSDP"
                             : Flag(args, "use_megatron_lm") ? "MEGATRON_LM"
                             : Flag(args, "multi_gpu")       ? "MULTI_GPU"
                                                             : "NO";
  launch->warnings.insert(launch->warnings.begin(), validated->warnings.begin(), validated->warnings.end());
  // Only what Accelerate changes: a variable it sets to the inherited value is no change.
  for (auto it = launch->env.begin(); it != launch->env.end();) {
    auto inherited = host.env.find(it->first);
    it = inherited != host.env.end() && inherited->second == it->second ? launch->env.erase(it)
                                                                        : std::next(it);
  }
  return launch;
}

std::vector<WorkerPlace> LocalPlaces(const ScriptLaunch& launch) {
  std::vector<WorkerPlace> places;
  for (int local = 0; local < launch.nproc_per_node; ++local)
    places.push_back({launch.node_rank * launch.nproc_per_node + local, local, launch.nproc_per_node,
                      launch.nproc_per_node * launch.nnodes, launch.node_rank, launch.nnodes});
  return places;
}

std::map<std::string, std::string> TorchrunWorkerEnvironment(
    const ScriptLaunch& launch, const WorkerPlace& place, int restart_count, const std::string& error_file,
    const std::map<std::string, std::string>& inherited) {
  std::map<std::string, std::string> env = {
      {"RANK", std::to_string(place.rank)},
      {"LOCAL_RANK", std::to_string(place.local_rank)},
      {"GROUP_RANK", std::to_string(place.node_rank)},
      {"ROLE_RANK", std::to_string(place.rank)},
      {"ROLE_NAME", launch.role},
      {"LOCAL_WORLD_SIZE", std::to_string(place.local_world_size)},
      {"WORLD_SIZE", std::to_string(place.world_size)},
      {"GROUP_WORLD_SIZE", std::to_string(place.nnodes)},
      {"ROLE_WORLD_SIZE", std::to_string(place.world_size)},
      {"MASTER_ADDR", launch.master_addr},
      {"MASTER_PORT", std::to_string(launch.master_port)},
      {"TORCHELASTIC_RESTART_COUNT", std::to_string(restart_count)},
      {"TORCHELASTIC_MAX_RESTARTS", std::to_string(launch.max_restarts)},
      {"TORCHELASTIC_RUN_ID", launch.run_id},
      // torchrun's agent sets it in its own environment, which its workers inherit.
      {"TORCHELASTIC_SIGNALS_TO_HANDLE", "SIGTERM,SIGINT,SIGHUP,SIGQUIT"},
  };
  if (!error_file.empty()) env["TORCHELASTIC_ERROR_FILE"] = error_file;
  // torchrun limits each of several workers to one OpenMP thread unless the variable is set.
  if (place.local_world_size > 1 && !inherited.count("OMP_NUM_THREADS") &&
      !launch.env.count("OMP_NUM_THREADS"))
    env["OMP_NUM_THREADS"] = "1";
  auto async = inherited.find("TORCH_NCCL_ASYNC_ERROR_HANDLING");
  if (async == inherited.end()) env["TORCH_NCCL_ASYNC_ERROR_HANDLING"] = "1";
  return env;
}

}  // namespace accel::rt::launch::accelerate
