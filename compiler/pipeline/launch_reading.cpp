#include "compiler/pipeline/launch_reading.h"

#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "compiler/sema/releases.h"

namespace accel::pipeline {
namespace {

// Top-level keys whose null launch reads as a value: what it then does, and what says the same.
// `distributed_type`: the loader refuses the key missing, not null, and launch matches None
// with no engine (accelerate/commands/launch.py _validate_launch_command).
struct NullKey {
  std::string_view key;
  std::string_view effect;
  std::string_view same_as;
};
constexpr NullKey kNullKeys[] = {
    {"distributed_type",
     "Accelerate's loader takes as set (it refuses only a missing key), and `accelerate launch` then starts "
     "one plain process with no distributed engine",
     "NO"},
};

// Keys `accelerate launch` hands its workers through `str()` in an environment variable, which
// the plugin splits at commas: a YAML list arrives as the text `['A', 'B']` and names no class.
// `read_when` is the setting under which the plugin reads the key (and raises on the name).
struct StringifiedKey {
  std::string_view section;    // the section's field, e.g. `fsdp_config`
  std::string_view field;      // e.g. `transformer_cls_names_to_wrap`
  std::string_view read_when;  // an enum field of the section ...
  std::string_view read_as;    // ... and the member under which the key is read
  std::string_view raises;     // what the plugin then does
};
constexpr StringifiedKey kStringifiedKeys[] = {
    {"fsdp_config", "transformer_cls_names_to_wrap", "auto_wrap_policy", "TRANSFORMER_BASED_WRAP",
     "`Accelerator.prepare` raises \"Could not find the transformer layer class\""},
};

// The launcher `accelerate launch` picks by the file's `distributed_type` (launch_command,
// accelerate/commands/launch.py; only the `--cpu` flag, not the file's `use_cpu`, overrides it).
enum class Launcher {
  kSimple,     // the script itself, or mpirun (NO, MULTI_CPU)
  kTorchrun,   // multi_gpu_launcher: prepare_multi_gpu_env, then torchrun
  kDeepSpeed,  // deepspeed_launcher: prepare_deepspeed_cmd_env
  kTpu,        // XLA
};

Launcher LauncherFor(const ast::Statement* engine) {
  if (engine == nullptr || engine->value->kind != ast::ExprKind::String) return Launcher::kSimple;
  const std::string& type = engine->value->text;
  if (type == "DEEPSPEED") return Launcher::kDeepSpeed;
  if (type == "XLA") return Launcher::kTpu;
  constexpr std::string_view kTorchrunTypes[] = {"MULTI_GPU",  "MULTI_NPU", "MULTI_MLU",    "MULTI_SDAA",
                                                 "MULTI_MUSA", "MULTI_XPU", "MULTI_HPU",    "MULTI_NEURON",
                                                 "FSDP",       "MEGATRON_LM"};
  for (std::string_view torchrun : kTorchrunTypes) {
    if (type == torchrun) return Launcher::kTorchrun;
  }
  return Launcher::kSimple;
}

// When a top-level null reaches code that fails on None.
enum class NullFailsWhen {
  kAlways,
  kSeveralMachinesThroughTorchrunOrDeepSpeed,
  kSimpleLauncher,
};

// Top-level keys whose null Accelerate reads as None where None fails, and what happens.
struct TopLevelNull {
  std::string_view key;
  NullFailsWhen when;
  std::string_view effect;
};
constexpr TopLevelNull kTopLevelNulls[] = {
    {"compute_environment", NullFailsWhen::kAlways,
     "Accelerate's loader takes as another environment than `LOCAL_MACHINE`, so it reads the file as a "
     "SageMaker config (load_config_from_file)"},
    {"num_machines", NullFailsWhen::kAlways,
     "`accelerate launch` compares with 1 and raises a TypeError (launch_command)"},
    // prepare_multi_gpu_env and prepare_deepspeed_cmd_env (accelerate/utils/launch.py) take
    // `int(args.machine_rank)` on several machines; the simple launcher does not read it.
    {"machine_rank", NullFailsWhen::kSeveralMachinesThroughTorchrunOrDeepSpeed,
     "`accelerate launch` passes to int() on several machines and raises a TypeError, unless "
     "`--machine_rank` is given"},
    // prepare_simple_launcher_cmd_env writes `str(args.cpu or args.use_cpu)`, "None", and reads it
    // back with str_to_bool; the other launchers write the flag only when it is true.
    {"use_cpu", NullFailsWhen::kSimpleLauncher,
     "`accelerate launch` writes as `ACCELERATE_USE_CPU=None` for this engine and then refuses with "
     "\"invalid truth value none\" (prepare_simple_launcher_cmd_env)"},
};

// Section keys that launch (accelerate/utils/launch.py) writes into the worker's environment with
// `str()` and no `is not None` guard, where the launcher that runs them does so: a null becomes
// the text `None`, on which the plugin that reads the variable raises (int() of a size, float()
// of a clipping norm, str_to_bool of a flag, the backends' and strategies' own checks).
// (The FSDP keys, which depend on `fsdp_version`, are kFsdpVariables below.)
enum LauncherMask : unsigned {
  kBySimple = 1u << static_cast<unsigned>(Launcher::kSimple),
  kByTorchrun = 1u << static_cast<unsigned>(Launcher::kTorchrun),
  kByDeepSpeed = 1u << static_cast<unsigned>(Launcher::kDeepSpeed),
};
struct SectionKey {
  std::string_view section;
  std::string_view key;
  std::string_view variable;
  std::string_view reader;  // what raises on the text
  unsigned launchers;       // LauncherMask: the launchers that write it
  std::string_view engine;  // the `distributed_type` it is written under; empty: any
  // The size that must be above 1 for the key to be written, or empty.
  std::string_view read_above_one;
  // None itself goes into the environment (no `str()`), and the worker's start fails on it.
  bool none_itself = false;
};
constexpr std::string_view kParallelism = "ParallelismConfig";
constexpr std::string_view kDynamo = "TorchDynamoPlugin";
constexpr std::string_view kMegatron = "MegatronLMPlugin";
constexpr SectionKey kSectionKeys[] = {
    // prepare_extend_env_parallelism_config, whenever the section is not empty.
    {"parallelism_config", "parallelism_config_dp_replicate_size", "PARALLELISM_CONFIG_DP_REPLICATE_SIZE",
     kParallelism, kByTorchrun | kByDeepSpeed, "", ""},
    {"parallelism_config", "parallelism_config_dp_shard_size", "PARALLELISM_CONFIG_DP_SHARD_SIZE",
     kParallelism, kByTorchrun | kByDeepSpeed, "", ""},
    {"parallelism_config", "parallelism_config_tp_size", "PARALLELISM_CONFIG_TP_SIZE", kParallelism,
     kByTorchrun | kByDeepSpeed, "", ""},
    {"parallelism_config", "parallelism_config_cp_size", "PARALLELISM_CONFIG_CP_SIZE", kParallelism,
     kByTorchrun | kByDeepSpeed, "", ""},
    {"parallelism_config", "parallelism_config_cp_backend", "PARALLELISM_CONFIG_CP_BACKEND", kParallelism,
     kByTorchrun | kByDeepSpeed, "", ""},
    {"parallelism_config", "parallelism_config_sp_size", "PARALLELISM_CONFIG_SP_SIZE", kParallelism,
     kByTorchrun | kByDeepSpeed, "", ""},
    {"parallelism_config", "parallelism_config_sp_backend", "PARALLELISM_CONFIG_SP_BACKEND", kParallelism,
     kByTorchrun | kByDeepSpeed, "", ""},
    {"parallelism_config", "parallelism_config_cp_comm_strategy", "PARALLELISM_CONFIG_CP_COMM_STRATEGY",
     kParallelism, kByTorchrun | kByDeepSpeed, "", "parallelism_config_cp_size"},
    {"parallelism_config", "parallelism_config_sp_attn_implementation",
     "PARALLELISM_CONFIG_SP_ATTN_IMPLEMENTATION", kParallelism, kByTorchrun | kByDeepSpeed, "",
     "parallelism_config_sp_size"},
    // prepare_simple_launcher_cmd_env and prepare_multi_gpu_env; the DeepSpeed launcher writes none.
    {"dynamo_config", "dynamo_use_fullgraph", "ACCELERATE_DYNAMO_USE_FULLGRAPH", kDynamo,
     kBySimple | kByTorchrun, "", ""},
    {"dynamo_config", "dynamo_use_dynamic", "ACCELERATE_DYNAMO_USE_DYNAMIC", kDynamo, kBySimple | kByTorchrun,
     "", ""},
    {"dynamo_config", "dynamo_use_regional_compilation", "ACCELERATE_DYNAMO_USE_REGIONAL_COMPILATION",
     kDynamo, kBySimple | kByTorchrun, "", ""},
    // The mode goes in as it is: the simple launcher's Popen refuses None; torchrun's
    // patch_environment makes it the text "None", which only torch.compile reads.
    {"dynamo_config", "dynamo_mode", "ACCELERATE_DYNAMO_MODE", kDynamo, kBySimple, "", "", true},
    // prepare_multi_gpu_env under MEGATRON_LM; its other keys are written only when not None.
    {"megatron_lm_config", "megatron_lm_tp_degree", "MEGATRON_LM_TP_DEGREE", kMegatron, kByTorchrun,
     "MEGATRON_LM", ""},
    {"megatron_lm_config", "megatron_lm_pp_degree", "MEGATRON_LM_PP_DEGREE", kMegatron, kByTorchrun,
     "MEGATRON_LM", ""},
    {"megatron_lm_config", "megatron_lm_use_custom_fsdp", "MEGATRON_LM_USE_CUSTOM_FSDP", kMegatron,
     kByTorchrun, "MEGATRON_LM", ""},
    {"megatron_lm_config", "megatron_lm_gradient_clipping", "MEGATRON_LM_GRADIENT_CLIPPING", kMegatron,
     kByTorchrun, "MEGATRON_LM", ""},
};

// `fsdp_config` keys that prepare_multi_gpu_env (accelerate/utils/launch.py) writes into the
// worker's environment under `distributed_type: FSDP` without an `is not None` guard, so a null
// becomes the text `None` (`none` where launch lower-cases a flag), on which
// FullyShardedDataParallelPlugin.__post_init__ raises where its `fsdp_version` reads the key.
struct FsdpVariable {
  std::string_view key;
  std::string_view variable;
  bool flag;         // written lower-cased
  int fsdp_version;  // the only `fsdp_version` whose plugin reads it; 0: both
};
constexpr FsdpVariable kFsdpVariables[] = {
    {"fsdp_version", "FSDP_VERSION", false, 0},
    {"fsdp_sharding_strategy", "FSDP_SHARDING_STRATEGY", false, 1},
    {"fsdp_reshard_after_forward", "FSDP_RESHARD_AFTER_FORWARD", true, 2},
    {"fsdp_offload_params", "FSDP_OFFLOAD_PARAMS", true, 0},
    {"fsdp_forward_prefetch", "FSDP_FORWARD_PREFETCH", true, 1},
    {"fsdp_use_orig_params", "FSDP_USE_ORIG_PARAMS", true, 1},
    {"fsdp_cpu_ram_efficient_loading", "FSDP_CPU_RAM_EFFICIENT_LOADING", true, 0},
    {"fsdp_sync_module_states", "FSDP_SYNC_MODULE_STATES", true, 1},
    {"fsdp_activation_checkpointing", "FSDP_ACTIVATION_CHECKPOINTING", true, 0},
    {"fsdp_activation_checkpointing_offload", "FSDP_ACTIVATION_CHECKPOINTING_OFFLOAD", true, 0},
};

// Only what the file wrote: a default has no place in the file to point at.
bool Written(const sema::Value* value) {
  return value != nullptr && value->provenance.kind == sema::Provenance::Kind::Spec &&
         value->provenance.file != nullptr;
}

// The statement that sets the top-level `key` among `statements`, or null.
const ast::Statement* Setting(const std::vector<ast::Statement>& statements, std::string_view key) {
  for (const ast::Statement& statement : statements) {
    if (statement.path.size() == 1 && statement.path[0].text == key) return &statement;
  }
  return nullptr;
}

// The statement among `statements`, the keys of `section`, that launch reads as `key`: written
// as it is, or without the prefix launch adds to that section's keys (`prefixes`, the release's
// LaunchKeyPrefixes). Null if none.
const ast::Statement* SectionSetting(const std::vector<ast::Statement>& statements, std::string_view section,
                                     std::string_view key, const std::vector<sema::SectionKeyPrefix>& prefixes) {
  const sema::SectionKeyPrefix* prefixing = nullptr;
  for (const sema::SectionKeyPrefix& p : prefixes) {
    if (p.section == section) prefixing = &p;
  }
  for (const ast::Statement& statement : statements) {
    if (statement.path.size() != 1) continue;
    const std::string& written = statement.path[0].text;
    bool prefixed = prefixing != nullptr && written.compare(0, prefixing->unless.size(), prefixing->unless) != 0;
    if ((prefixed ? prefixing->prefix + written : written) == key) return &statement;
  }
  return nullptr;
}

// A config on several machines: prepare_multi_gpu_env and prepare_deepspeed_cmd_env read
// `num_machines > 1` (unset is 1).
bool SeveralMachines(const std::vector<ast::Statement>& top) {
  const ast::Statement* machines = Setting(top, "num_machines");
  return machines != nullptr && machines->value->kind == ast::ExprKind::Int && machines->value->int_value > 1;
}

// Python's truth of a YAML value: launch tests `args.cpu` (the file's `use_cpu`) with `if`.
bool PythonTruthy(const ast::Expr& value) {
  switch (value.kind) {
    case ast::ExprKind::None:
      return false;
    case ast::ExprKind::Bool:
      return value.bool_value;
    case ast::ExprKind::Int:
      return value.int_value != 0;
    case ast::ExprKind::Float:
      return value.float_value != 0;
    case ast::ExprKind::String:
      return !value.text.empty();
    case ast::ExprKind::List:
      return !value.operands.empty();
    default:
      return true;
  }
}

}  // namespace

// How `accelerate launch` copies a config file's sections onto its arguments
// (`_validate_launch_command` in accelerate/commands/launch.py): `fsdp_config`, `fp8_config` and
// `dynamo_config` keys get their section's prefix unless they start with it, so published files
// write `auto_wrap_policy` and `fsdp_auto_wrap_policy`, `backend` and `dynamo_backend`, alike.
std::vector<sema::SectionKeyPrefix> LaunchKeyPrefixes(const sema::Release* accelerate) {
  // Each with the first Accelerate release that adds it ("": every covered one): 1.12 and 1.13
  // copy `dynamo_config` keys as written, so `backend` there is read by nothing.
  struct Prefixing {
    sema::SectionKeyPrefix prefix;
    std::string_view since;
  };
  static const std::vector<Prefixing> kPrefixes = {
      {{"fsdp_config", "fsdp", "fsdp_"}, ""},
      {{"fp8_config", "fp8", "fp8_"}, ""},
      {{"dynamo_config", "dynamo_", "dynamo_"}, "1.14.0"},
  };
  std::vector<sema::SectionKeyPrefix> applied;
  for (const Prefixing& p : kPrefixes) {
    const sema::Release* first = p.since.empty() ? nullptr : sema::FindRelease(sema::Tool::kAccelerate, p.since);
    if (accelerate == nullptr || first == nullptr || first->index <= accelerate->index) applied.push_back(p.prefix);
  }
  return applied;
}

void ReadNullKeysAsLaunchDoes(config::ConfigFile& config, diag::DiagnosticEngine& diagnostics) {
  for (const ast::Name& name : config.null_keys) {
    for (const NullKey& null : kNullKeys) {
      if (name.text != null.key) continue;
      diagnostics.Emit(diag::Kind::NullReadAsValue, config.file.source, name.span, name.text, null.effect,
                       null.same_as);
      for (ast::Statement& statement : config.file.jobs.front().body.statements) {
        if (statement.path.size() != 1 || statement.path[0].text != null.key) continue;
        statement.value->kind = ast::ExprKind::String;
        statement.value->text = std::string(null.same_as);
      }
    }
  }
}

std::vector<sema::AutoPassedOn> AutosPassedOn(const ast::File& file) {
  if (file.jobs.empty()) return {};
  const std::vector<ast::Statement>& top = file.jobs.front().body.statements;
  // With `use_cpu`, _validate_launch_command compares the count with 1 (TypeError on text).
  if (const ast::Statement* cpu = Setting(top, "use_cpu"); cpu != nullptr && PythonTruthy(*cpu->value)) return {};
  switch (LauncherFor(Setting(top, "distributed_type"))) {
    case Launcher::kTorchrun:
    case Launcher::kDeepSpeed:
      // Several machines divide the total by their number (TypeError on text).
      if (SeveralMachines(top)) return {};
      return {{"num_processes",
               "on one machine launch passes it to torchrun as `--nproc_per_node auto`, which starts one "
               "process per GPU (per CPU without a GPU), as accelrun does"}};
    case Launcher::kTpu:
      return {{"num_processes", "the TPU launcher does not read `num_processes`"}};
    case Launcher::kSimple:
      return {};  // launch compares the count with 1 (TypeError on text)
  }
  return {};
}

void CheckNullsLaunchReads(const ast::File& file, const sema::Release* accelerate,
                           diag::DiagnosticEngine& diagnostics) {
  if (file.jobs.empty()) return;
  const std::vector<sema::SectionKeyPrefix> prefixes = LaunchKeyPrefixes(accelerate);
  const std::vector<ast::Statement>& top = file.jobs.front().body.statements;
  auto is_null = [](const ast::Statement* setting) {
    return setting != nullptr && setting->value->kind == ast::ExprKind::None;
  };
  const ast::Statement* engine = Setting(top, "distributed_type");
  Launcher launcher = LauncherFor(engine);
  bool several_machines = SeveralMachines(top);
  for (const TopLevelNull& null : kTopLevelNulls) {
    const ast::Statement* setting = Setting(top, null.key);
    if (!is_null(setting)) continue;
    bool fails = false;
    switch (null.when) {
      case NullFailsWhen::kAlways:
        fails = true;
        break;
      case NullFailsWhen::kSeveralMachinesThroughTorchrunOrDeepSpeed:
        fails = several_machines && (launcher == Launcher::kTorchrun || launcher == Launcher::kDeepSpeed);
        break;
      case NullFailsWhen::kSimpleLauncher:
        fails = launcher == Launcher::kSimple;
        break;
    }
    if (fails)
      diagnostics.Emit(diag::Kind::NullReadAsNone, file.source, setting->value->span, null.key, null.effect);
  }

  for (const SectionKey& key : kSectionKeys) {
    if ((key.launchers & (1u << static_cast<unsigned>(launcher))) == 0) continue;
    if (!key.engine.empty() && (engine == nullptr || engine->value->text != key.engine)) continue;
    const ast::Statement* section = Setting(top, key.section);
    if (section == nullptr || section->value->kind != ast::ExprKind::Record || !section->value->block)
      continue;
    const std::vector<ast::Statement>& keys = section->value->block->statements;
    const ast::Statement* setting = SectionSetting(keys, key.section, key.key, prefixes);
    if (!is_null(setting)) continue;
    if (!key.read_above_one.empty()) {
      const ast::Statement* size = SectionSetting(keys, key.section, key.read_above_one, prefixes);
      if (size == nullptr || size->value->kind != ast::ExprKind::Int || size->value->int_value <= 1) continue;
    }
    std::string effect =
        key.none_itself
            ? fmt::format("`accelerate launch` puts into the worker's environment as `{}` without making "
                          "it text, and starting the worker raises a TypeError",
                          key.variable)
            : fmt::format("`accelerate launch` passes on as `{}=None`, and {} raises on that text",
                          key.variable, key.reader);
    diagnostics.Emit(diag::Kind::NullReadAsNone, file.source, setting->value->span, key.key, effect);
  }

  const ast::Statement* section = Setting(top, "fsdp_config");
  if (engine == nullptr || engine->value->text != "FSDP" || section == nullptr ||
      section->value->kind != ast::ExprKind::Record || !section->value->block)
    return;
  const std::vector<ast::Statement>& keys = section->value->block->statements;
  const ast::Statement* version = SectionSetting(keys, "fsdp_config", "fsdp_version", prefixes);
  // Unset, the plugin's version is 1; launch passes a quoted '2' on as the same text.
  int64_t read_as = 1;
  if (version != nullptr && version->value->kind == ast::ExprKind::Int) read_as = version->value->int_value;
  if (version != nullptr && version->value->kind == ast::ExprKind::String && version->value->text == "2")
    read_as = 2;
  for (const FsdpVariable& fsdp : kFsdpVariables) {
    if (fsdp.fsdp_version != 0 && fsdp.fsdp_version != read_as) continue;
    const ast::Statement* setting = SectionSetting(keys, "fsdp_config", fsdp.key, prefixes);
    if (!is_null(setting)) continue;
    std::string effect = fmt::format(
        "`accelerate launch` passes on as `{}={}`, and FullyShardedDataParallelPlugin raises on that text",
        fsdp.variable, fsdp.flag ? "none" : "None");
    diagnostics.Emit(diag::Kind::NullReadAsNone, file.source, setting->value->span, fsdp.key, effect);
  }
}

void CheckListsPassedAsText(const sema::Value& launch, diag::DiagnosticEngine& diagnostics) {
  for (const StringifiedKey& key : kStringifiedKeys) {
    const sema::Value* section = launch.Field(key.section);
    const sema::Value* value = section ? section->Field(key.field) : nullptr;
    const sema::Value* policy = section ? section->Field(key.read_when) : nullptr;
    if (!Written(value) || value->kind != sema::Value::Kind::List || policy == nullptr ||
        policy->text != key.read_as)
      continue;
    std::vector<std::string> names, quoted;
    for (const sema::Value& item : value->items) {
      names.push_back(item.text);
      quoted.push_back("'" + item.text + "'");
    }
    diagnostics.Emit(diag::Kind::ListPassedAsText, value->provenance.file, value->provenance.span,
                     fmt::format("[{}]", fmt::join(quoted, ", ")), key.raises,
                     fmt::format("{}", fmt::join(names, ",")));
  }
}

}  // namespace accel::pipeline
