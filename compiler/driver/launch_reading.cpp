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

// Top-level keys whose null Accelerate reads as None where None fails, and what happens.
struct TopLevelNull {
  std::string_view key;
  std::string_view effect;
};
constexpr TopLevelNull kTopLevelNulls[] = {
    {"compute_environment",
     "Accelerate's loader takes as another environment than `LOCAL_MACHINE`, so it reads the file as a "
     "SageMaker config (load_config_from_file)"},
    {"num_machines", "`accelerate launch` compares with 1 and raises a TypeError (launch_command)"},
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

void CheckNullsLaunchReads(const ast::File& file, diag::DiagnosticEngine& diagnostics) {
  if (file.jobs.empty()) return;
  const std::vector<ast::Statement>& top = file.jobs.front().body.statements;
  auto is_null = [](const ast::Statement* setting) {
    return setting != nullptr && setting->value->kind == ast::ExprKind::None;
  };
  for (const TopLevelNull& null : kTopLevelNulls) {
    const ast::Statement* setting = Setting(top, null.key);
    if (is_null(setting))
      diagnostics.Emit(diag::Kind::NullReadAsNone, file.source, setting->value->span, null.key, null.effect);
  }

  const ast::Statement* engine = Setting(top, "distributed_type");
  const ast::Statement* section = Setting(top, "fsdp_config");
  if (engine == nullptr || engine->value->text != "FSDP" || section == nullptr ||
      section->value->kind != ast::ExprKind::Record || !section->value->block)
    return;
  const std::vector<ast::Statement>& keys = section->value->block->statements;
  const ast::Statement* version = Setting(keys, "fsdp_version", "version");
  // Unset, the plugin's version is 1; launch passes a quoted '2' on as the same text.
  int64_t read_as = 1;
  if (version != nullptr && version->value->kind == ast::ExprKind::Int) read_as = version->value->int_value;
  if (version != nullptr && version->value->kind == ast::ExprKind::String && version->value->text == "2")
    read_as = 2;
  for (const FsdpVariable& fsdp : kFsdpVariables) {
    if (fsdp.fsdp_version != 0 && fsdp.fsdp_version != read_as) continue;
    const ast::Statement* setting = Setting(keys, fsdp.key, fsdp.key.substr(5));
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

}  // namespace accel::driver
