#include "compiler/driver/launch_reading.h"

#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace accel::driver {
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

// Keys whose null launch reads as None where None fails (accelerate/commands/launch.py,
// accelerate/utils/launch.py), each with what happens. `engine`: the `distributed_type` under
// which launch reads the key, empty for any. The FSDP keys are variables prepare_multi_gpu_env
// sets without an `is not None` guard; FullyShardedDataParallelPlugin.__post_init__ then reads
// `None` as a strategy, a number or a flag and raises, where its `fsdp_version` reads the key.
struct NullReadAsNone {
  std::string_view engine;
  std::string_view section;  // the section's key, empty at the top level
  std::string_view key;
  int fsdp_version;  // the only `fsdp_version` under which the plugin reads it; 0: both
  std::string_view effect;
};
constexpr std::string_view kPluginRaises = "and FullyShardedDataParallelPlugin raises on that text";
constexpr NullReadAsNone kNullsReadAsNone[] = {
    {"", "", "compute_environment", 0,
     "Accelerate's loader takes as another environment than `LOCAL_MACHINE`, so it reads the file as a "
     "SageMaker config (load_config_from_file)"},
    {"", "", "num_machines", 0,
     "`accelerate launch` compares with 1 and raises a TypeError (launch_command)"},
    {"FSDP", "fsdp_config", "fsdp_version", 0, "`accelerate launch` passes on as `FSDP_VERSION=None`"},
    {"FSDP", "fsdp_config", "fsdp_sharding_strategy", 1,
     "`accelerate launch` passes on as `FSDP_SHARDING_STRATEGY=None`"},
    {"FSDP", "fsdp_config", "fsdp_reshard_after_forward", 2,
     "`accelerate launch` passes on as `FSDP_RESHARD_AFTER_FORWARD=none`"},
    {"FSDP", "fsdp_config", "fsdp_offload_params", 0,
     "`accelerate launch` passes on as `FSDP_OFFLOAD_PARAMS=none`"},
    {"FSDP", "fsdp_config", "fsdp_forward_prefetch", 1,
     "`accelerate launch` passes on as `FSDP_FORWARD_PREFETCH=none`"},
    {"FSDP", "fsdp_config", "fsdp_use_orig_params", 1,
     "`accelerate launch` passes on as `FSDP_USE_ORIG_PARAMS=none`"},
    {"FSDP", "fsdp_config", "fsdp_cpu_ram_efficient_loading", 0,
     "`accelerate launch` passes on as `FSDP_CPU_RAM_EFFICIENT_LOADING=none`"},
    {"FSDP", "fsdp_config", "fsdp_sync_module_states", 1,
     "`accelerate launch` passes on as `FSDP_SYNC_MODULE_STATES=none`"},
    {"FSDP", "fsdp_config", "fsdp_activation_checkpointing", 0,
     "`accelerate launch` passes on as `FSDP_ACTIVATION_CHECKPOINTING=none`"},
    {"FSDP", "fsdp_config", "fsdp_activation_checkpointing_offload", 0,
     "`accelerate launch` passes on as `FSDP_ACTIVATION_CHECKPOINTING_OFFLOAD=none`"},
};

// Only what the file wrote: a default has no place in the file to point at.
bool Written(const sema::Value* value) {
  return value != nullptr && value->provenance.kind == sema::Provenance::Kind::Spec &&
         value->provenance.file != nullptr;
}

// The statement that sets `key` among `statements`, or null. `fsdp_config` keys may leave out
// their prefix, which launch adds (driver::LaunchKeyPrefixes): `bare` is the key without it.
const ast::Statement* Setting(const std::vector<ast::Statement>& statements, std::string_view key,
                              std::string_view bare = {}) {
  for (const ast::Statement& statement : statements) {
    if (statement.path.size() != 1) continue;
    if (statement.path[0].text == key || (!bare.empty() && statement.path[0].text == bare)) return &statement;
  }
  return nullptr;
}

}  // namespace

void ReadNullKeysAsLaunchDoes(config::ConfigFile& config, diag::DiagnosticEngine& diagnostics) {
  for (const ast::Name& name : config.null_keys) {
    for (const NullKey& null : kNullKeys) {
      if (name.text != null.key) continue;
      diagnostics.Emit(diag::Kind::NullKeyTakenAsUnset, config.file.source, name.span, name.text, null.effect,
                       null.same_as);
      for (ast::Statement& statement : config.file.jobs.front().body.statements) {
        if (statement.path.size() != 1 || statement.path[0].text != null.key) continue;
        statement.value->kind = ast::ExprKind::String;
        statement.value->text = std::string(null.same_as);
      }
    }
  }
}

void CheckNullsLaunchReads(const ast::File& file, diag::DiagnosticEngine& diagnostics) {
  if (file.jobs.empty()) return;
  const std::vector<ast::Statement>& top = file.jobs.front().body.statements;
  const ast::Statement* engine = Setting(top, "distributed_type");
  for (const NullReadAsNone& null : kNullsReadAsNone) {
    if (!null.engine.empty() && (engine == nullptr || engine->value->text != null.engine)) continue;
    const std::vector<ast::Statement>* statements = &top;
    if (!null.section.empty()) {
      const ast::Statement* section = Setting(top, null.section);
      if (section == nullptr || section->value->kind != ast::ExprKind::Record || !section->value->block)
        continue;
      statements = &section->value->block->statements;
    }
    std::string_view bare = null.key;
    if (!null.section.empty() && bare.substr(0, 5) == "fsdp_") bare.remove_prefix(5);
    const ast::Statement* setting = Setting(*statements, null.key, bare);
    if (setting == nullptr || setting->value->kind != ast::ExprKind::None) continue;
    if (null.fsdp_version != 0) {
      // Unset, the plugin's version is 1.
      const ast::Statement* version = Setting(*statements, "fsdp_version", "version");
      bool written = version && version->value->kind == ast::ExprKind::Int;
      if ((written ? version->value->int_value : 1) != null.fsdp_version) continue;
    }
    std::string effect(null.effect);
    if (null.section == "fsdp_config") effect += fmt::format(", {}", kPluginRaises);
    diagnostics.Emit(diag::Kind::NullReadAsNone, file.source, setting->value->span, null.key, effect);
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

}  // namespace accel::driver
