#include "compiler/sema/check.h"

#include <algorithm>
#include <map>
#include <set>

#include <fmt/format.h>

#include "compiler/sema/constraints.h"
#include "compiler/sema/field_defaults.h"
#include "compiler/sema/key_resolution.h"
#include "compiler/sema/lax_values.h"
#include "compiler/sema/lets.h"
#include "compiler/sema/record_entries.h"
#include "compiler/sema/release_judge.h"
#include "compiler/sema/unfilled_autos.h"
#include "compiler/sema/unknown_fields.h"
#include "compiler/sema/value_conversion.h"

// The checker's walk over a job: its layers and lets, then each record of its body in turn: the
// keys resolved (key_resolution.h), each field's value gathered from every layer that sets it
// and converted (value_conversion.h) or defaulted (field_defaults.h), then the record's
// constraints judged (constraints.h). A record value inside a value comes back here to be walked.
namespace accel::sema {
namespace {

class Checker final : public RecordReader {
 public:
  Checker(const ast::File& file, const Schema& schema, const Environment& environment,
          diag::DiagnosticEngine& diagnostics, const CheckOptions& options)
      : file_(file),
        schema_(schema),
        environment_(environment),
        diagnostics_(diagnostics),
        options_(options),
        release_(options.release, options.section_prefixes, options.defaults_against),
        unfilled_autos_(options, schema),
        keys_(schema, options, release_, unfilled_autos_, diagnostics),
        names_{schema, options},
        lets_(schema, diagnostics),
        converter_(schema, environment, options, lets_, lax_, *this, diagnostics),
        defaults_(schema, environment, converter_, diagnostics) {}

  std::optional<Spec> Run() {
    if (file_.jobs.empty()) {
      diagnostics_.Emit(diag::Kind::NoJob, file_.source, {0, 0});
      return std::nullopt;
    }
    for (size_t i = 1; i < file_.jobs.size(); ++i) {
      diagnostics_.Emit(diag::Kind::MultipleJobs, file_.source, file_.jobs[i].name.span,
                        file_.jobs[i].name.text);
    }
    const ast::JobDecl& job = file_.jobs[0];
    job_span_ = job.name.span;
    Composition own;
    const Composition* composition = options_.composition;
    if (composition == nullptr) {
      // No driver-resolved composition: the job's own body and the file's own lets.
      own.layers.push_back({&job.body, file_.source});
      for (const ast::LetDecl& let : file_.lets)
        own.lets.push_back({let.name.text, &let, file_.source, file_.source});
      composition = &own;
    }
    lets_.Declare(composition->lets);
    auto root_schema = schema_.records.find(options_.root);
    if (root_schema == schema_.records.end()) {
      diagnostics_.Emit(diag::Kind::UnknownType, file_.source, job.name.span, options_.root,
                        fmt::format("; the stdlib must declare `config {}`", options_.root));
      return std::nullopt;
    }
    int errors_before = diagnostics_.error_count();
    std::vector<Entry> entries;
    bool recovered = composition->incomplete;
    for (size_t i = 0; i < composition->layers.size(); ++i) {
      const Layer& layer = composition->layers[i];
      recovered = recovered || layer.body->recovered;
      for (const ast::Statement& s : layer.body->statements) entries.push_back({&s, 0, layer.file, i});
    }
    std::optional<Value> root =
        CheckRecord(root_schema->second, entries, file_.source, job.name.span, "", recovered);
    unfilled_autos_.Report(diagnostics_);
    if (!root) return std::nullopt;
    Spec spec{job.name.text, file_.source, job.name.span, std::move(*root)};
    if (diagnostics_.error_count() > errors_before) {
      if (options_.despite_errors != nullptr) options_.despite_errors->emplace(std::move(spec));
      return std::nullopt;
    }
    return spec;
  }

 private:
  // Checks the statements `entries` as the body of a `record` value. `span` locates the value
  // for diagnostics about missing fields and rules; `prefix` is the path of the value.
  // `recovered`: the statements come from a block that error recovery repaired, so a missing
  // field is not reported (it may be in the broken part).
  std::optional<Value> CheckRecord(const RecordSchema& record, const std::vector<Entry>& entries,
                                   const source::SourceFile* file, source::Span span,
                                   const std::string& prefix, bool recovered) override {
    // Its fields' values, not those of the records inside it, follow this record's reader.
    struct LaxScope {
      LaxReading& lax;
      LaxReading saved;
      ~LaxScope() { lax = saved; }
    } lax_scope{lax_, lax_};
    lax_.models = options_.lax_models && !record.open;
    bool ok = true;
    std::map<std::string, std::vector<Entry>, std::less<>> by_field;
    std::set<std::string> misspelt;
    std::set<std::string, std::less<>> set_here;
    for (const Entry& entry : entries) set_here.insert(entry.statement->path[entry.depth].text);
    for (const Entry& entry : entries) {
      KeyResolver::Resolved key = keys_.Resolve(record, entry, prefix, set_here);
      if (key.refused) ok = false;
      if (key.meant != nullptr) misspelt.insert(key.meant->name);
      if (key.field != nullptr) by_field[key.field->name].push_back(entry);
    }

    Value value;
    value.kind = Value::Kind::Record;
    value.type_name = record.name;
    value.provenance = {Provenance::Kind::Spec, file, span, ""};
    std::set<std::string> failed;
    // One value per field: reserved, so no field's value is moved again as the others arrive.
    value.keys.reserve(record.fields.size());
    value.items.reserve(record.fields.size());
    for (const FieldSchema& field : record.fields) {
      std::string path = prefix + NameOf(field);
      auto it = by_field.find(field.name);
      std::optional<Value> field_value;
      const AutoPassedOn* passed_on = it != by_field.end() ? PassedOn(it->second, path) : nullptr;
      if (passed_on != nullptr) {
        // The launcher hands this "auto" to a tool that resolves it: the value is unknown here,
        // so the default stands in and rules here and above that read the field are not run.
        diagnostics_.Emit(diag::Kind::AutoPassedOn, it->second[0].file, AssignedValue(it->second[0])->span, path,
                          passed_on->reader);
        field_value = defaults_.For(field, record, file, span, path, true);
        unknown_values_.insert(path);
        failed.insert(field.name);
      } else if (it != by_field.end()) {
        lax_.bool_as_number = lax_.models && !RefusesBoolForNumber(record.name, field.name);
        field_value = FromEntries(field, it->second, path);
      } else if (misspelt.count(field.name) == 0) {
        field_value = defaults_.For(field, record, file, span, path, recovered);
        if (std::optional<std::string> change = release_.DefaultChange(prefix, NameOf(field))) {
          diagnostics_.Emit(diag::Kind::DefaultDiffersByRelease, file, span, path, *change);
        }
      } else {
        // Meant but misspelt: its value is unknown. The default stands in so that the record
        // is whole; rules here and above that read the field are not run.
        field_value = defaults_.For(field, record, file, span, path, true);
        unknown_values_.insert(path);
        failed.insert(field.name);
      }
      if (!field_value) {
        ok = false;
        failed.insert(field.name);
        field_value = Value{};
      }
      // In a block that error recovery repaired, an unset field may be in the broken part: a
      // rule that reads it (`steps is set or epochs is set`) would only guess.
      if (recovered && it == by_field.end()) failed.insert(field.name);
      value.keys.push_back(field.name);
      value.items.push_back(std::move(*field_value));
    }
    // Constraints and rules that read a field in error would only echo that error; the rest
    // still run, so one pass reports every independent mistake.
    CheckConstraints({options_, release_, names_, {file_.source, job_span_}, unknown_values_}, record, value,
                     failed, file, span, prefix, diagnostics_);
    if (!ok) return std::nullopt;
    return value;
  }

  // The launcher's handling of the file key `path` when `entries` only assign it "auto" and the
  // launcher passes that on (CheckOptions::autos_passed_on), else null.
  const AutoPassedOn* PassedOn(const std::vector<Entry>& entries, const std::string& path) const {
    if (!options_.file_keys || entries.size() != 1 || !IsAuto(entries[0])) return nullptr;
    for (const AutoPassedOn& passed_on : options_.autos_passed_on)
      if (passed_on.key == path) return &passed_on;
    return nullptr;
  }

  // How the file being checked names `field`: its config-file key in a config file.
  const std::string& NameOf(const FieldSchema& field) const { return NameInFile(field, options_); }

  // The value of `field` from the statements that set it: one assignment, or any number of
  // blocks and dotted paths that together describe a record. Across composition layers a later
  // assignment replaces everything before it, and later blocks and dotted paths refine what
  // earlier layers set (`--set train.optimizer.lr=0.1` over `optimizer = AdamW { ... }`).
  std::optional<Value> FromEntries(const FieldSchema& field, const std::vector<Entry>& all,
                                   const std::string& path) {
    auto is_assignment = [](const Entry& e) {
      return e.depth + 1 == e.statement->path.size() && e.statement->value != nullptr;
    };
    auto name_of = [](const Entry& e) -> const ast::Name& { return e.statement->path[e.depth]; };
    std::optional<size_t> assigned_layer;
    for (const Entry& e : all) {
      if (is_assignment(e)) assigned_layer = std::max(assigned_layer.value_or(0), e.layer);
    }
    std::vector<Entry> entries;
    for (const Entry& e : all) {
      if (!assigned_layer || e.layer >= *assigned_layer) entries.push_back(e);
    }
    // Within one layer, an assignment next to anything else is a conflict.
    for (size_t i = 0; i < entries.size(); ++i) {
      for (size_t j = i + 1; j < entries.size(); ++j) {
        if (entries[i].layer != entries[j].layer ||
            (!is_assignment(entries[i]) && !is_assignment(entries[j]))) {
          continue;
        }
        diag::Diagnostic& d =
            diagnostics_.Emit(diag::Kind::DuplicateField, entries[j].file, name_of(entries[j]).span, path);
        d.notes.push_back(diag::DiagnosticEngine::Note(diag::Kind::NotePreviousValue, entries[i].file,
                                                       name_of(entries[i]).span));
        return std::nullopt;
      }
    }
    if (entries.size() == 1 && is_assignment(entries[0])) {
      return converter_.Convert(*entries[0].statement->value, field.type, entries[0].file, path);
    }
    // Blocks and dotted paths: the field must have a record type to put them in.
    const Type* type = &field.type;
    if (type->kind == Type::Kind::Optional) type = &type->args[0];
    std::vector<Entry> inner;
    bool recovered = false;
    const Entry& first = entries[0];
    source::Span span = name_of(first).span;
    const RecordSchema* record =
        type->kind == Type::Kind::Record ? &schema_.records.find(type->name)->second : nullptr;
    if (is_assignment(first)) {
      // A record value that later layers refine: its own statements come first.
      const ast::Expr& literal = *first.statement->value;
      if (literal.kind == ast::ExprKind::Record && !literal.text.empty()) {
        record = converter_.AcceptedRecord(*type, literal.text);
        if (record == nullptr) return converter_.WrongRecordType(literal, field.type, first.file, path);
      }
      if (literal.kind != ast::ExprKind::Record || record == nullptr) {
        diagnostics_.Emit(
            diag::Kind::TypeMismatch, entries[1].file, name_of(entries[1]).span, path, "a whole value here",
            fmt::format("a block or dotted path refining `{}`, whose earlier value is {}; replace it "
                        "whole instead",
                        path, DescribeFound(literal)));
        return std::nullopt;
      }
      recovered = literal.block->recovered;
      for (const ast::Statement& s : literal.block->statements)
        inner.push_back({&s, 0, first.file, first.layer});
      span = literal.path.empty() ? literal.span : literal.path[0].span;
    }
    if (record == nullptr) {
      diagnostics_.Emit(diag::Kind::TypeMismatch, first.file, span, path, field.type.Describe(),
                        type->kind == Type::Kind::Union ? "a block; name the type, e.g. `" + path + " = " +
                                                              type->args[0].Describe() + " { ... }`"
                                                        : std::string("a block"));
      return std::nullopt;
    }
    for (const Entry& entry : entries) {
      if (is_assignment(entry)) continue;  // the record value above
      if (entry.depth + 1 == entry.statement->path.size()) {
        recovered = recovered || entry.statement->block->recovered;
        for (const ast::Statement& s : entry.statement->block->statements) {
          inner.push_back({&s, 0, entry.file, entry.layer});
        }
      } else {
        inner.push_back({entry.statement, entry.depth + 1, entry.file, entry.layer});
      }
    }
    return CheckRecord(*record, inner, first.file, span, path + ".", recovered);
  }

  std::optional<Value> TryAlternative(const ast::Expr& expr, const Type& alternative,
                                      const source::SourceFile* file, const std::string& path,
                                      diag::DiagnosticEngine& scratch) override {
    Checker trial(file_, schema_, environment_, scratch, options_);
    trial.lets_.ContinueFrom(lets_);
    trial.lax_.models = lax_.models;  // the alternative is read by the same reader
    return trial.converter_.Convert(expr, alternative, file, path);
  }

  const ast::File& file_;
  const Schema& schema_;
  const Environment& environment_;
  diag::DiagnosticEngine& diagnostics_;
  const CheckOptions& options_;
  ReleaseJudge release_;
  source::Span job_span_;  // where problems in values the spec did not write are reported
  // Paths (as the file names them) of fields whose key was misspelt: their value is unknown.
  std::set<std::string> unknown_values_;
  // How the record being checked, and the field being read, take a value of another type.
  LaxReading lax_;
  // The "auto"s Accelerate and the Trainer would leave, said once the whole file is read.
  UnfilledAutos unfilled_autos_;
  KeyResolver keys_;
  FileNaming names_;
  Lets lets_;
  ValueConverter converter_;
  FieldDefaults defaults_;
};

}  // namespace

std::optional<Spec> Check(const ast::File& file, const Schema& schema, const Environment& environment,
                          diag::DiagnosticEngine& diagnostics, const CheckOptions& options) {
  return Checker(file, schema, environment, diagnostics, options).Run();
}

}  // namespace accel::sema
