#include "compiler/sema/unknown_fields.h"

#include <fmt/format.h>

#include "compiler/sema/trainer_arguments.h"

namespace accel::sema {
namespace {

// Whether the block sets `name` already: a fix to it would set it twice (A2004). A dotted name
// (`project_config.total_limit`) refines a record the block may set too, and is no repeat.
bool SetAlready(const std::set<std::string, std::less<>>& set_here, std::string_view name) {
  return set_here.count(name) > 0;
}

// Whether `field.sub` written in `record` compiles as it stands: a dotted name reaches into
// its first field only when that field is a record (it has defaults to fill); a union
// (`optimizer`: SGD | Adam | AdamW) needs its alternative chosen first, which no fix can do.
bool FixReaches(const RecordSchema& record, const std::string& relative) {
  size_t dot = relative.find('.');
  if (dot == std::string::npos) return true;
  if (relative.find('.', dot + 1) != std::string::npos) return false;
  const FieldSchema* first = record.Find(std::string_view(relative).substr(0, dot));
  return first != nullptr && first->type.kind == Type::Kind::Record;
}

}  // namespace

std::string FileNaming::PathText(const std::string& record, const std::vector<std::string>& path) const {
  std::string text;
  auto scope = schema.records.find(record);
  for (const std::string& segment : path) {
    const FieldSchema* field = scope == schema.records.end() ? nullptr : scope->second.Find(segment);
    text += (text.empty() ? "" : ".") + (field ? NameInFile(*field, options) : segment);
    const Type* type = field ? &field->type : nullptr;
    if (type && type->kind == Type::Kind::Optional) type = &type->args[0];
    scope =
        type && type->kind == Type::Kind::Record ? schema.records.find(type->name) : schema.records.end();
  }
  return text;
}

std::string QuotedList(const std::vector<std::string>& items) {
  std::string out;
  for (size_t i = 0; i < items.size(); ++i) {
    if (i) out += ", ";
    out += "`" + items[i] + "`";
  }
  return out;
}

// The one other top-level block of the job that declares `field` (`accelerator` for a
// `gradient_accumulation_steps` written in `compute`), or "" when none or several do. Only
// for blocks directly under a job spec's root (`prefix` like `compute.`).
std::string UnknownFields::BlockThatHasField(const std::string& field, const std::string& prefix) const {
  if (options_.file_keys || prefix.empty() || prefix.find('.') != prefix.size() - 1) return "";
  auto root = schema_.records.find(options_.root);
  if (root == schema_.records.end()) return "";
  std::vector<std::string> found;
  for (const FieldSchema& block : root->second.fields) {
    const Type* type = &block.type;
    if (type->kind == Type::Kind::Optional) type = &type->args[0];
    if (type->kind != Type::Kind::Record || block.name + "." == prefix) continue;
    auto record = schema_.records.find(type->name);
    if (record != schema_.records.end() && record->second.Find(field) != nullptr)
      found.push_back(block.name);
  }
  return found.size() == 1 ? found[0] : "";
}

// What a Trainer name (`save_steps`, trainer_arguments.def) written in a job spec at `prefix`
// means: the field's path from the block it is written in when that block holds the field
// (`checkpoint_every` in `train`, `train.checkpoint_every` at the top), or "" and its path from
// the job in `whole` when another block does. Empty when `name` is no Trainer name.
std::string UnknownFields::TrainerMeaning(std::string_view name, const std::string& prefix,
                                          std::string& whole) const {
  if (options_.file_keys || options_.root != "Job") return "";
  for (const TrainerArgument& argument : kTrainerArguments) {
    if (argument.name != name) continue;
    whole = std::string(argument.path);
    if (whole.compare(0, prefix.size(), prefix) != 0) return "";
    std::string relative = whole.substr(prefix.size());
    // A YAML job spec has no dotted keys: there only a field of the block itself is a fix.
    if (options_.yaml_scalars && relative.find('.') != std::string::npos) return "";
    return relative;
  }
  return "";
}

// The names a key of `record` may have here, built once per record: a file of many unknown
// keys asks for them at every key.
const std::vector<std::string>& UnknownFields::NamesOf(const RecordSchema& record) {
  auto [it, inserted] = names_.try_emplace(&record);
  if (inserted) it->second = options_.file_keys ? record.FileKeys() : record.FieldNames();
  return it->second;
}

// Reports A2003 (A2023 when the reader ignores unknown keys) and returns the suggested field
// name, if any.
// `set_here`: the names the block sets; a fix to one of them would set it twice (A2004).
std::string UnknownFields::Report(const RecordSchema& record, const ast::Name& name,
                                  const source::SourceFile* file, const std::string& prefix,
                                  const std::set<std::string, std::less<>>& set_here, bool ignored) {
  const std::vector<std::string>& names = NamesOf(record);
  // A Trainer name is a surer sign than a near spelling: `max_steps` means `steps`, even
  // where another field is a few edits away.
  // A name that is also the field's own name in another top-level block (`seed` in `compute`)
  // is better told as that block's field, below.
  std::string trainer_path;
  std::string trainer_guess =
      BlockThatHasField(name.text, prefix).empty() ? TrainerMeaning(name.text, prefix, trainer_path) : "";
  if (!trainer_path.empty()) {
    std::string hint =
        trainer_guess.empty()
            ? fmt::format("; `{}` is the Trainer's name for `{}`: set that instead", name.text,
                          trainer_path)
            : fmt::format("; did you mean `{}`? (the Trainer's `{}`)", trainer_guess, name.text);
    diag::Diagnostic& d = diagnostics_.Emit(ignored ? diag::Kind::IgnoredField : diag::Kind::UnknownField,
                                            file, name.span, name.text, record.name, hint);
    if (!trainer_guess.empty() && FixReaches(record, trainer_guess) &&
        !SetAlready(set_here, trainer_guess)) {
      d.fixit = diag::ReplaceKeepingQuotes(file, name.span, trainer_guess);
    }
    return trainer_guess;
  }
  std::string guess = diag::ClosestMatch(name.text, names);
  // In a spec, a config file's key (`fsdp_offload_params`) means the field it sets (`cpu_offload`).
  if (guess.empty() && !options_.file_keys) {
    if (const FieldSchema* field = record.FindFileKey(name.text)) guess = field->name;
  }
  // In a config file, the plugin's field name (`tp_degree`) or the key without its section
  // prefix means the key that carries it (`megatron_lm_tp_degree`).
  if (guess.empty() && options_.file_keys) {
    if (const FieldSchema* field = record.Find(name.text)) guess = NameInFile(*field, options_);
  }
  // An old name the loader does not take (`cpu`) means the key that replaced it (`use_cpu`).
  if (guess.empty() && LoaderRefusesOldNamesIn(record, options_)) {
    if (const FieldSchema* field = record.FindAlias(name.text)) guess = NameInFile(*field, options_);
  }
  if (guess.empty()) {
    std::vector<std::string> suffixed;
    for (const std::string& candidate : names) {
      size_t stem = candidate.size() - name.text.size();
      if (candidate.size() > name.text.size() && candidate[stem - 1] == '_' &&
          candidate.compare(stem, std::string::npos, name.text) == 0) {
        suffixed.push_back(candidate);
      }
    }
    if (suffixed.size() == 1) guess = suffixed[0];
  }
  // A long list helps nobody; past a dozen fields the docs are the place to look.
  std::string choices = names.size() <= 12 ? fmt::format("; expected one of {}", QuotedList(names))
                                           : fmt::format("; none of its {} fields is close", names.size());
  std::string elsewhere = guess.empty() ? BlockThatHasField(name.text, prefix) : "";
  if (!elsewhere.empty()) {
    choices =
        fmt::format("; `{}` is a field of `{}`: write `{}.{}`", name.text, elsewhere, elsewhere, name.text);
  }
  diag::Diagnostic& d = diagnostics_.Emit(
      ignored ? diag::Kind::IgnoredField : diag::Kind::UnknownField, file, name.span, name.text,
      record.name, guess.empty() ? choices : fmt::format("; did you mean `{}`?", guess));
  if (!guess.empty() && !SetAlready(set_here, guess))
    d.fixit = diag::ReplaceKeepingQuotes(file, name.span, guess);
  return guess;
}

}  // namespace accel::sema
