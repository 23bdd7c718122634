#include "compiler/sema/key_resolution.h"

#include <map>
#include <utility>

#include <fmt/format.h>

#include "compiler/sema/key_versions.h"

namespace accel::sema {

KeyResolver::Resolved KeyResolver::Resolve(const RecordSchema& record, const Entry& entry,
                                           const std::string& prefix,
                                           const std::set<std::string, std::less<>>& set_here) {
  Resolved resolved;
  const ast::Name& name = entry.statement->path[entry.depth];
  // A config file names fields by their keys only: Accelerate ignores `tp_degree` where it
  // reads `megatron_lm_tp_degree`, so accepting the field name would hide a dead setting.
  const FieldSchema* field =
      options_.file_keys ? FindFileKey(record, name.text, prefix) : record.Find(name.text);
  if (field == nullptr) field = record.FindSynonym(name.text);
  if (field == nullptr) field = Renamed(record, name, entry.file);
  // Set by another name than its key (`bfloat16`, `prefetch_bucket_size`): Accelerate fills
  // "auto" in by the key's name only.
  if (field != nullptr && options_.auto_filled_by_key && name.text != NameOf(*field)) {
    if (const ast::Expr* value = AssignedValue(entry))
      unfilled_autos_.UnderKeyNobodyFills(
          *value, entry.file, prefix + name.text,
          fmt::format("they fill in `{}{}` by that name only", prefix, NameOf(*field)),
          fmt::format("write `{}` for `{}`", NameOf(*field), name.text));
  } else if (field != nullptr && IsAuto(entry) && AdmitsAuto(field->type)) {
    unfilled_autos_.NoteFilled();  // a key Accelerate fills: the file is written for it
  }
  // DeepSpeed reads its dict sections with `.get`: a key it does not know is dead, not
  // fatal, and `_comment`-style keys are the usual way to annotate a JSON file.
  bool ignored = options_.file_keys && record.open;
  if (field == nullptr && ignored) {
    if (const ast::Expr* value = AssignedValue(entry))
      unfilled_autos_.UnderKeyNobodyFills(
          *value, entry.file, prefix + name.text,
          "DeepSpeed does not read the key, and they fill in only the keys they compute",
          "write a value, or remove the key");
  }
  if (field == nullptr && ignored && !name.text.empty() && name.text[0] == '_') return resolved;
  if (field == nullptr && ReportKeyOfAnotherFile(record, name, entry.file, prefix)) return resolved;
  if (JudgedByRelease(record, field, name, entry.file, prefix, set_here, resolved.refused)) return resolved;
  // A key other releases read: say which, rather than that no release knows it.
  if (const KeyVersion* versions = field == nullptr ? FindKeyVersion(record.name, name.text) : nullptr) {
    diagnostics_.Emit(versions->refused ? diag::Kind::KeyOfOtherReleases : diag::Kind::KeyIgnoredSince,
                      entry.file, name.span, name.text, versions->accepted_by, versions->since);
    resolved.refused = versions->refused;
    return resolved;
  }
  if (field == nullptr) {
    // A misspelt field is reported once, as unknown: it is not also missing.
    std::string guess = unknown_fields_.Report(record, name, entry.file, prefix, set_here, ignored);
    if (ignored) return resolved;  // the reader drops it and the meant field keeps its default
    resolved.meant = options_.file_keys ? record.FindFileKey(guess) : record.Find(guess);
    // The key is an error, but the record's other fields are known: rules that read only
    // them still run (CheckConstraints), so one pass reports every independent mistake.
    return resolved;
  }
  if (field->deprecated) {
    diagnostics_.Emit(diag::Kind::DeprecatedField, entry.file, name.span, prefix + NameOf(*field),
                      *field->deprecated);
  }
  const ast::Expr* assigned = AssignedValue(entry);
  if (options_.null_is_unset && assigned != nullptr && assigned->kind == ast::ExprKind::None) return resolved;
  if (assigned != nullptr) {
    unfilled_autos_.OwnAuto(*field, *assigned, entry.file, prefix + NameOf(*field));
    unfilled_autos_.InParams(record, *field, *assigned, entry.file, prefix + NameOf(*field));
  }
  if (ReportNullDeepSpeedRefuses(record, *field, entry, prefix + NameOf(*field))) {
    resolved.refused = true;
    return resolved;
  }
  if (const ast::Expr* dropped = DroppedAuto(record, entry)) {
    diagnostics_.Emit(diag::Kind::AutoDroppedByDeepSpeed, entry.file, dropped->span, prefix + NameOf(*field));
    return resolved;  // as DeepSpeed does: the key is left out and the default applies
  }
  resolved.field = field;
  return resolved;
}

// The field of `record` (reached at `prefix`) that config-file key `key` sets: the field with
// that key, or, in a section the launcher reads with a prefix, the field whose key reads the
// same after prefixing (`version` and `fsdp_version` in `fsdp_config`). Null if none.
const FieldSchema* KeyResolver::FindFileKey(const RecordSchema& record, std::string_view key,
                                            const std::string& prefix) const {
  if (const FieldSchema* field = record.FindFileKey(key)) return field;
  for (const SectionKeyPrefix& section : options_.section_prefixes) {
    if (prefix != section.section + ".") continue;
    auto launched = [&](std::string_view k) {
      return k.substr(0, section.unless.size()) == section.unless ? std::string(k)
                                                                  : section.prefix + std::string(k);
    };
    for (const FieldSchema& field : record.fields) {
      if (launched(NameOf(field)) == launched(key)) return &field;
    }
  }
  return nullptr;
}

// A field set by one of its old names: warn, offer the new name, and carry on with it.
const FieldSchema* KeyResolver::Renamed(const RecordSchema& record, const ast::Name& name,
                                        const source::SourceFile* file) {
  if (LoaderRefusesOldNamesIn(record, options_)) return nullptr;
  const FieldSchema* field = record.FindAlias(name.text);
  if (field == nullptr) return nullptr;
  diag::Diagnostic& d =
      diagnostics_.Emit(diag::Kind::DeprecatedAlias, file, name.span, name.text, field->name, field->name);
  d.fixit = diag::ReplaceKeepingQuotes(file, name.span, field->name);
  return field;
}

// A key unknown in `record` (at `prefix`) that is a key of the file a ForeignKeys section
// stands for: reports A2024 and returns true.
bool KeyResolver::ReportKeyOfAnotherFile(const RecordSchema& record, const ast::Name& name,
                                         const source::SourceFile* file, const std::string& prefix) {
  if (!options_.file_keys) return false;
  for (const ForeignKeys& foreign : options_.foreign_keys) {
    if (prefix != (foreign.section.empty() ? "" : foreign.section + ".")) continue;
    auto other = schema_.records.find(foreign.record);
    if (other == schema_.records.end() || other->second.FindFileKey(name.text) == nullptr) continue;
    diagnostics_.Emit(diag::Kind::KeyOfAnotherFile, file, name.span, name.text, foreign.record, record.name,
                      foreign.reader, foreign.where);
    return true;
  }
  return false;
}

// Under a pinned release (CheckOptions::release), a key it reads otherwise than the newest,
// which the schema models: reported as that release reads it. Returns whether it was (and so
// is not also checked against the schema).
bool KeyResolver::JudgedByRelease(const RecordSchema& record, const FieldSchema* field,
                                  const ast::Name& name, const source::SourceFile* file,
                                  const std::string& prefix,
                                  const std::set<std::string, std::less<>>& set_here, bool& refused) {
  ReleaseJudge::KeyJudgement judged = release_.JudgeKey(prefix, name.text);
  switch (judged.verdict) {
    case ReleaseJudge::Verdict::kAsModelled:
      return false;
    case ReleaseJudge::Verdict::kReadOnlyHere:
      if (field != nullptr) return false;  // the schema knows it too
      diagnostics_.Emit(diag::Kind::KeyDroppedLater, file, name.span, name.text, judged.reading,
                        judged.newest);
      return true;
    case ReleaseJudge::Verdict::kRefusedHere:
      diagnostics_.Emit(diag::Kind::KeyOfOtherReleases, file, name.span, name.text, judged.reading,
                        fmt::format("{} refuses a file that has it; remove it, or run a release that "
                                    "reads it",
                                    judged.pinned));
      refused = true;
      return true;
    case ReleaseJudge::Verdict::kIgnoredHere:
      if (field == nullptr) {
        unknown_fields_.Report(record, name, file, prefix, set_here, /*ignored=*/true);
      } else {
        diagnostics_.Emit(diag::Kind::KeyIgnoredSince, file, name.span, name.text, judged.reading,
                          fmt::format("{} ignores it, so it has no effect there", judged.pinned));
      }
      return true;
  }
  return false;
}

// The "auto" that `entry` assigns, when DeepSpeed's constructor of `record` drops it
// (dropped_auto.def) and the file is checked for the `deepspeed` launcher; else null.
const ast::Expr* KeyResolver::DroppedAuto(const RecordSchema& record, const Entry& entry) const {
  static const std::set<std::string_view> kDroppingRecords = {
#define ACCEL_DROPPED_AUTO(name) #name,
#include "compiler/sema/dropped_auto.def"
#undef ACCEL_DROPPED_AUTO
  };
  if (!options_.file_keys || options_.target != "deepspeed" || kDroppingRecords.count(record.name) == 0)
    return nullptr;
  return IsAuto(entry) ? AssignedValue(entry) : nullptr;
}

// A null in a DeepSpeed JSON that DeepSpeed does not take as an absent key (deepspeed_nulls.def):
// a top-level section it builds from the None (all but the ones it takes as absent, by the key
// as written: `bf16`, not its old name `bfloat16`), or a key whose None it passes on. Reported
// as A3019; true if so.
bool KeyResolver::ReportNullDeepSpeedRefuses(const RecordSchema& record, const FieldSchema& field,
                                             const Entry& entry, const std::string& path) {
  static const std::set<std::pair<std::string_view, std::string_view>> kSectionsTaken = {
#define ACCEL_NULL_SECTION_TAKEN(record, field) {#record, #field},
#define ACCEL_NULL_VALUE_REFUSED(record, field, what)
#include "compiler/sema/deepspeed_nulls.def"
#undef ACCEL_NULL_VALUE_REFUSED
#undef ACCEL_NULL_SECTION_TAKEN
  };
  static const std::map<std::pair<std::string_view, std::string_view>, std::string_view> kValuesRefused = {
#define ACCEL_NULL_SECTION_TAKEN(record, field)
#define ACCEL_NULL_VALUE_REFUSED(record, field, what) {{#record, #field}, what},
#include "compiler/sema/deepspeed_nulls.def"
#undef ACCEL_NULL_VALUE_REFUSED
#undef ACCEL_NULL_SECTION_TAKEN
  };
  const ast::Expr* value = AssignedValue(entry);
  if (!options_.lax_models || value == nullptr || value->kind != ast::ExprKind::None) return false;
  auto refused = kValuesRefused.find({record.name, field.name});
  if (refused != kValuesRefused.end()) {
    diagnostics_.Emit(diag::Kind::NullReadAsNone, entry.file, value->span, path, refused->second);
    return true;
  }
  // Only the top level is read so; inside a model an optional section takes null.
  const Type& type = field.type.kind == Type::Kind::Optional ? field.type.args[0] : field.type;
  if (record.name != options_.root || type.kind != Type::Kind::Record ||
      kSectionsTaken.count({record.name, entry.statement->path[entry.depth].text}) > 0)
    return false;
  diagnostics_.Emit(diag::Kind::NullReadAsNone, entry.file, value->span, path,
                    "DeepSpeed builds the section from, and fails (`param_dict.get` returns the None)");
  return true;
}

}  // namespace accel::sema
