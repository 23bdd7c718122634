#include "compiler/plan/describe.h"

#include <algorithm>
#include <map>

#include <fmt/format.h>

namespace accel::plan {
namespace {

namespace json = llvm::json;

// JSON text on one line, with floats in their shortest round-trip form (`0.003`, not
// LLVM's `0.0030000000000000001`).
std::string Compact(const json::Value& value) {
  if (value.kind() == json::Value::Number && !value.getAsInteger()) {
    return fmt::format("{}", value.getAsNumber().getValueOr(0));
  }
  if (const json::Array* array = value.getAsArray()) {
    std::vector<std::string> items;
    for (const json::Value& item : *array) items.push_back(Compact(item));
    return fmt::format("[{}]", fmt::join(items, ", "));
  }
  if (const json::Object* object = value.getAsObject()) {
    std::vector<std::string> keys;
    for (const auto& entry : *object) keys.push_back(entry.first.str());
    std::sort(keys.begin(), keys.end());
    std::vector<std::string> items;
    for (const std::string& key : keys)
      items.push_back(fmt::format("\"{}\": {}", key, Compact(*object->get(key))));
    return fmt::format("{{{}}}", fmt::join(items, ", "));
  }
  std::string out;
  llvm::raw_string_ostream stream(out);
  stream << value;
  return stream.str();
}

// A leaf of the config tree is {"from": ..., "value": ...}; a record is {"type": "Name", fields}.
// A record's type is a setting of its own only where `with_types`: `diff` must see AdamW become
// Adam, `explain` shows the type with the record's fields. A field that happens to be called
// `type` (DeepSpeed's optimizer.type) is a leaf like any other.
void Walk(const json::Value& node, const std::string& prefix, bool with_types, std::vector<Setting>& out) {
  const json::Object* object = node.getAsObject();
  if (object == nullptr) return;
  if (object->get("value") != nullptr && object->get("from") != nullptr) {
    out.push_back({prefix, Compact(*object->get("value")), object->getString("from").getValueOr("").str()});
    return;
  }
  std::vector<std::string> keys;
  for (const auto& entry : *object) {
    if (entry.first == "type" && entry.second.getAsString()) {
      if (with_types && !prefix.empty())
        out.push_back({prefix + ".type", entry.second.getAsString()->str(), ""});
      continue;
    }
    keys.push_back(entry.first.str());
  }
  std::sort(keys.begin(), keys.end());
  for (const std::string& key : keys)
    Walk(*object->get(key), prefix.empty() ? key : prefix + "." + key, with_types, out);
}

template <typename T>
std::string Show(const T& value, std::string_view unit = "");

// `name=value` for every field of a record, in table order.
template <typename R>
std::string ShowFields(const R& record) {
  std::vector<std::string> fields;
  ForEachField(record, [&](const FieldInfo& field, const auto& member) {
    fields.push_back(fmt::format("{}={}", field.name, Show(member, field.unit)));
  });
  return fmt::format("{}", fmt::join(fields, " "));
}

// A plan value as `explain` shows it: numbers in their shortest form with their unit, lists in
// brackets, records in braces, a variant as its tag and its alternative's fields.
template <typename T>
std::string Show(const T& value, std::string_view unit) {
  if constexpr (std::is_same_v<T, bool>) {
    return value ? "true" : "false";
  } else if constexpr (std::is_same_v<T, int64_t> || std::is_same_v<T, double>) {
    return unit.empty() ? fmt::format("{}", value) : fmt::format("{} {}", value, unit);
  } else if constexpr (std::is_same_v<T, std::string>) {
    return value.empty() ? "\"\"" : value;  // a `path` unit needs no suffix
  } else if constexpr (std::is_enum_v<T>) {
    return std::string(EnumName(value));
  } else if constexpr (kIsRecord<T>) {
    return fmt::format("{{{}}}", ShowFields(value));
  } else if constexpr (VariantInfo<T>::kIsVariant) {
    return std::visit(
        [](const auto& alternative) {
          return fmt::format("{} {{{}}}", alternative.kTag, ShowFields(alternative));
        },
        value);
  } else {
    std::vector<std::string> items;
    for (const auto& item : value) items.push_back(Show(item, unit));
    return fmt::format("[{}]", fmt::join(items, ", "));
  }
}

// `op` and every field of the step, from the plan's table.
std::string StepLine(const Step& step) {
  return std::visit([](const auto& s) { return fmt::format("{:<19} {}", s.kTag, ShowFields(s)); }, step);
}

// What a setting affects, by where it sits in the job. The first matching prefix wins.
unsigned ImpactOf(const std::string& path) {
  using I = Impact;
  static const std::vector<std::pair<std::string, unsigned>> table = {
      {"model.", unsigned(I::Checkpoint) | unsigned(I::Numerics)},
      {"compute.deepspeed_config.zero_stage", unsigned(I::Topology) | unsigned(I::Checkpoint)},
      {"compute.fsdp_config.state_dict_type", unsigned(I::Checkpoint)},
      {"compute.fsdp_config.sharding_strategy", unsigned(I::Topology) | unsigned(I::Checkpoint)},
      {"compute.mixed_precision", unsigned(I::Numerics)},
      {"compute.fp8_config", unsigned(I::Numerics)},
      {"compute.dynamo_config", unsigned(I::Numerics)},
      {"compute.", unsigned(I::Topology)},
      {"accelerator.init_process_group", unsigned(I::Topology)},
      {"accelerator.project_config", unsigned(I::Checkpoint)},
      {"accelerator.project_dir", unsigned(I::Checkpoint)},
      // Where results are logged changes no number the run computes.
      {"accelerator.log_with", unsigned(I::Other)},
      {"accelerator.", unsigned(I::Numerics)},
      {"data.", unsigned(I::Numerics)},
      {"train.log_every", unsigned(I::Other)},
      {"train.checkpoint_every", unsigned(I::Checkpoint)},
      {"train.", unsigned(I::Numerics)},
      // A DeepSpeed JSON on its own (`accelc explain/diff ds.json`).
      {"deepspeed.zero_optimization.stage3_gather_16bit_weights_on_model_save", unsigned(I::Checkpoint)},
      {"deepspeed.zero_optimization.stage3_", unsigned(I::Topology)},
      {"deepspeed.zero_optimization.stage", unsigned(I::Topology) | unsigned(I::Checkpoint)},
      {"deepspeed.zero_optimization.", unsigned(I::Topology)},
      {"deepspeed.checkpoint", unsigned(I::Checkpoint)},
      {"deepspeed.fp16", unsigned(I::Numerics)},
      {"deepspeed.bf16", unsigned(I::Numerics)},
      {"deepspeed.optimizer", unsigned(I::Numerics)},
      {"deepspeed.scheduler", unsigned(I::Numerics)},
      {"deepspeed.gradient_", unsigned(I::Numerics)},
      {"deepspeed.train_", unsigned(I::Numerics)},
  };
  for (const auto& [prefix, impact] : table) {
    if (path.rfind(prefix, 0) == 0) return impact;
  }
  return unsigned(I::Other);
}

std::string Labels(unsigned impact) {
  std::vector<std::string> labels;
  if (impact & unsigned(Impact::Numerics)) labels.push_back("numerics");
  if (impact & unsigned(Impact::Topology)) labels.push_back("topology");
  if (impact & unsigned(Impact::Checkpoint)) labels.push_back("checkpoint");
  if (impact & unsigned(Impact::Other)) labels.push_back("other");
  return fmt::format("{}", fmt::join(labels, ","));
}

}  // namespace

std::vector<Setting> Settings(const Plan& plan) {
  std::vector<Setting> out;
  Walk(plan.config, "", /*with_types=*/false, out);
  return out;
}

std::string Explain(const Plan& plan, bool all) {
  std::string out;
  if (plan.hash.empty()) {
    // A config file's settings (ConfigSettings): nothing is compiled, so there are no steps.
    out = fmt::format("{}  ({}: settings only, no steps)\n", plan.source, plan.job);
  } else {
    out = fmt::format("job {}  (from {}; {}, {})\n\nsteps, in order:\n", plan.job, plan.source, plan.format,
                      plan.hash);
    for (size_t i = 0; i < plan.steps.size(); ++i)
      out += fmt::format("  {}. {}\n", i + 1, StepLine(plan.steps[i]));
  }
  std::vector<Setting> settings;
  size_t defaults = 0;
  for (Setting& s : Settings(plan)) {
    if (!all && s.from == "default") {
      ++defaults;
      continue;
    }
    settings.push_back(std::move(s));
  }
  size_t width = 0;
  for (const Setting& s : settings) width = std::max(width, s.path.size() + 3 + s.value.size());
  width = std::min<size_t>(width, 72);
  out += all ? "\nevery value and where it came from:\n"
             : "\nvalues not left to their defaults, and where they came from:\n";
  for (const Setting& s : settings) {
    std::string assignment = s.path + " = " + s.value;
    out += fmt::format("  {:<{}}  ({})\n", assignment, width, s.from);
  }
  if (defaults > 0)
    out +=
        fmt::format("\n{} more values are schema defaults (`accelc explain --all` lists them)\n", defaults);
  return out;
}

namespace {

struct Leaf {
  std::string value;
  std::string from;
};
using Leaves = std::map<std::string, Leaf>;

Leaves LeavesOf(const Plan& plan) {
  std::vector<Setting> settings;
  Walk(plan.config, "", /*with_types=*/true, settings);
  Leaves leaves;
  for (Setting& s : settings) leaves[s.path] = {std::move(s.value), std::move(s.from)};
  return leaves;
}

// The leaves below `section` (`compute.fsdp_config.`), by their paths.
std::vector<Leaves::const_iterator> Below(const Leaves& leaves, const std::string& section) {
  std::vector<Leaves::const_iterator> below;
  std::string prefix = section + ".";
  for (auto it = leaves.lower_bound(prefix); it != leaves.end() && it->first.rfind(prefix, 0) == 0; ++it)
    below.push_back(it);
  return below;
}

// A section as one value: `FsdpConfig {sharding_strategy=SHARD_GRAD_OP}`, the fields set
// somewhere other than the schema's defaults, or `FsdpConfig (all defaults)`.
std::string SectionSummary(const std::vector<Leaves::const_iterator>& below, const std::string& section) {
  std::string type;
  std::vector<std::string> fields;
  for (auto it : below) {
    std::string field = it->first.substr(section.size() + 1);
    if (field == "type") {
      type = it->second.value;
    } else if (it->second.from != "default") {
      fields.push_back(fmt::format("{}={}", field, it->second.value));
    }
  }
  if (type.empty()) type = "section";
  if (fields.empty()) return type + " (all defaults)";
  return fmt::format("{} {{{}}}", type, fmt::join(fields, ", "));
}


}  // namespace

PlanDiff Diff(const Plan& a, const Plan& b) {
  Leaves before = LeavesOf(a);
  Leaves after = LeavesOf(b);
  PlanDiff diff;
  std::vector<Change>& changes = diff.changes;
  // An unset optional as the file spells it: `none` in a spec, `null` in a YAML or JSON config
  // (which compiles to settings without a hash).
  bool specs = !a.hash.empty() && !b.hash.empty();
  auto shown = [specs](const std::string& value) { return specs && value == "null" ? "none" : value; };
  // A section set on one side only: its leaf on the other (`none`) against its fields, as one change.
  auto sections = [&](Leaves& leaf_side, Leaves& record_side, bool added) {
    for (auto it = leaf_side.begin(); it != leaf_side.end();) {
      std::vector<Leaves::const_iterator> below = Below(record_side, it->first);
      if (below.empty()) {
        ++it;
        continue;
      }
      std::string summary = SectionSummary(below, it->first);
      std::string leaf = shown(it->second.value);
      // What the section's fields affect, together (FSDP's state_dict_type: checkpoints).
      unsigned impact = ImpactOf(it->first);
      for (auto field : below) impact |= ImpactOf(field->first);
      changes.push_back({it->first, added ? leaf : summary, added ? summary : leaf, impact});
      for (auto field : below) record_side.erase(field);
      it = leaf_side.erase(it);
    }
  };
  sections(before, after, /*added=*/true);
  sections(after, before, /*added=*/false);
  for (const auto& [path, leaf] : before) {
    auto it = after.find(path);
    if (it == after.end()) {
      changes.push_back({path, shown(leaf.value), "", ImpactOf(path)});
    } else if (it->second.value != leaf.value) {
      changes.push_back({path, shown(leaf.value), shown(it->second.value), ImpactOf(path)});
    }
  }
  for (const auto& [path, leaf] : after) {
    if (before.count(path) == 0) changes.push_back({path, "", shown(leaf.value), ImpactOf(path)});
  }
  std::sort(changes.begin(), changes.end(), [](const Change& x, const Change& y) { return x.path < y.path; });
  if (!changes.empty() || a.hash == b.hash) return diff;
  // Same settings, other plans: the job's name, or a step (another accelc's lowering).
  if (a.job != b.job) changes.push_back({"job", a.job, b.job, unsigned(Impact::Other)});
  for (size_t i = 0; i < std::max(a.steps.size(), b.steps.size()); ++i) {
    std::string one = i < a.steps.size() ? StepLine(a.steps[i]) : "";
    std::string other = i < b.steps.size() ? StepLine(b.steps[i]) : "";
    if (one != other) changes.push_back({fmt::format("step {}", i + 1), one, other, unsigned(Impact::Other)});
  }
  if (changes.empty()) {
    diff.otherwise =
        a.format != b.format
            ? fmt::format("their plans differ only in format ({} and {})", a.format, b.format)
            : fmt::format("their plans differ only in where the values came from (the source files and lines "
                          "`accelc explain` shows)");
  }
  return diff;
}

std::string RenderDiff(const PlanDiff& diff, const std::string& a_name, const std::string& b_name) {
  const std::vector<Change>& changes = diff.changes;
  if (changes.empty()) {
    return fmt::format("{} and {} resolve to the same configuration{}\n", a_name, b_name,
                       diff.otherwise.empty() ? "" : "; " + diff.otherwise);
  }
  std::string out = fmt::format("--- {}\n+++ {}\n", a_name, b_name);
  unsigned all = 0;
  for (const Change& c : changes) {
    all |= c.impact;
    std::string what = c.before.empty()  ? fmt::format("(new) {}", c.after)
                       : c.after.empty() ? fmt::format("{} (gone)", c.before)
                                         : fmt::format("{} -> {}", c.before, c.after);
    out += fmt::format("  {:<22} {}: {}\n", Labels(c.impact), c.path, what);
  }
  out += fmt::format(
      "{} change{}; affects {}{}\n", changes.size(), changes.size() == 1 ? "" : "s", Labels(all),
      (all & unsigned(Impact::Checkpoint)) ? " (a checkpoint of one may not load into the other)" : "");
  return out;
}

}  // namespace accel::plan
