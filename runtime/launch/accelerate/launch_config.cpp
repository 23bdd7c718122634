// Reading the config file as Accelerate reads it (`load_config_from_file`, `process_config`)
// and merging it into the command line (`_validate_launch_command`): which file values fill
// which options, the defaults Accelerate fills in and warns about, and the config mistakes it
// raises on. What the launch then does with the options is launch_plan.cpp's.
#include <algorithm>
#include <set>

#include <fmt/format.h>

#include "runtime/launch/accelerate/launch_plan_internal.h"

namespace accel::rt::launch::accelerate {
namespace {

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

}  // namespace

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

}  // namespace accel::rt::launch::accelerate
