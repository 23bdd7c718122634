#include "compiler/sema/check.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <set>
#include <string_view>

#include <fmt/format.h>

#include "compiler/scalars/bool_words.h"
#include "compiler/scalars/host_names.h"
#include "compiler/sema/constraints.h"
#include "compiler/sema/evaluate.h"
#include "compiler/sema/key_resolution.h"
#include "compiler/sema/lax_values.h"
#include "compiler/sema/lets.h"
#include "compiler/sema/record_entries.h"
#include "compiler/sema/release_judge.h"
#include "compiler/sema/unfilled_autos.h"
#include "compiler/sema/unknown_fields.h"

namespace accel::sema {
namespace {

// How an expression reads when it has the wrong type: "an integer `25`".
std::string DescribeFound(const ast::Expr& e) {
  switch (e.kind) {
    case ast::ExprKind::Int:
      return fmt::format("an integer `{}`", e.int_value);
    case ast::ExprKind::Float:
      return fmt::format("a float `{}`", e.float_value);
    case ast::ExprKind::String:
      return fmt::format("a string \"{}\"", e.text);
    case ast::ExprKind::Bool:
      return fmt::format("a bool `{}`", e.bool_value ? "true" : "false");
    case ast::ExprKind::None:
      return "`none`";
    case ast::ExprKind::Duration:
      return fmt::format("a duration `{}`", e.text);
    case ast::ExprKind::Bytes:
      return fmt::format("a byte size `{}`", e.text);
    case ast::ExprKind::Path:
      return fmt::format("a name `{}`", ExprText(e));
    case ast::ExprKind::Record:
      return fmt::format("a record of type `{}`", e.text);
    case ast::ExprKind::Call:
      return fmt::format("a call `{}`", ExprText(e));
    case ast::ExprKind::List:
      return "a list";
    case ast::ExprKind::Map:
      return "a map";
    case ast::ExprKind::IsSet:
    case ast::ExprKind::Unary:
    case ast::ExprKind::Binary:
      return fmt::format("an expression `{}`", ExprText(e));
  }
  return "a value";
}

// Marks the values that a schema default expression produced as defaults; values that an
// environment variable supplied inside that default keep saying so.
void MarkDefault(Value& value, const Provenance& provenance) {
  if (value.provenance.kind == Provenance::Kind::Spec) value.provenance = provenance;
  for (Value& item : value.items) MarkDefault(item, provenance);
}

class Checker {
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
        lets_(schema, diagnostics) {}

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
                                   const std::string& prefix, bool recovered = false) {
    // Its fields' values, not those of the records inside it, follow this record's reader.
    struct LaxScope {
      bool& lax;
      bool saved;
      ~LaxScope() { lax = saved; }
    } lax_scope{lax_, lax_};
    lax_ = options_.lax_models && !record.open;
    struct FieldScope {
      bool& bool_as_number;
      bool saved;
      ~FieldScope() { bool_as_number = saved; }
    } field_scope{lax_bool_as_number_, lax_bool_as_number_};
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
      if (it != by_field.end()) {
        lax_bool_as_number_ = lax_ && !RefusesBoolForNumber(record.name, field.name);
        field_value = FromEntries(field, it->second, path);
      } else if (misspelt.count(field.name) == 0) {
        field_value = DefaultFor(field, record, file, span, path, recovered);
        if (std::optional<std::string> change = release_.DefaultChange(prefix, NameOf(field))) {
          diagnostics_.Emit(diag::Kind::DefaultDiffersByRelease, file, span, path, *change);
        }
      } else {
        // Meant but misspelt: its value is unknown. The default stands in so that the record
        // is whole; rules here and above that read the field are not run.
        field_value = DefaultFor(field, record, file, span, path, true);
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
      return Convert(*entries[0].statement->value, field.type, entries[0].file, path);
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
        record = AcceptedRecord(*type, literal.text);
        if (record == nullptr) return WrongRecordType(literal, field.type, first.file, path);
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

  // The record named `name` when a field of type `type` (a record, a union, or an optional of
  // either) accepts it, or null.
  const RecordSchema* AcceptedRecord(const Type& type, const std::string& name) const {
    const Type* t = type.kind == Type::Kind::Optional ? &type.args[0] : &type;
    std::vector<Type> alternatives = t->kind == Type::Kind::Union ? t->args : std::vector<Type>{*t};
    for (const Type& alternative : alternatives) {
      if (alternative.kind == Type::Kind::Record && alternative.name == name) {
        return &schema_.records.find(name)->second;
      }
    }
    return nullptr;
  }

  // The value of an unset field: its environment variable, its schema default, `none` for an
  // optional, or a missing-field error.
  std::optional<Value> DefaultFor(const FieldSchema& field, const RecordSchema& record,
                                  const source::SourceFile* file, source::Span span, const std::string& path,
                                  bool recovered) {
    for (const std::string& name : field.env_vars) {
      std::optional<std::string> text = environment_.Get(name);
      if (!text) continue;
      std::optional<Value> value = FromEnvironment(field.type, *text);
      if (!value) {
        diagnostics_.Emit(diag::Kind::InvalidEnvValue, file, span, name, *text, field.type.Describe(), path);
        return std::nullopt;
      }
      value->provenance = {Provenance::Kind::Environment, nullptr, {}, name};
      return value;
    }
    if (field.default_value != nullptr) {
      std::optional<Value> value = Convert(*field.default_value, field.type, field.file, path);
      if (value) MarkDefault(*value, {Provenance::Kind::SchemaDefault, field.file, field.span, ""});
      return value;
    }
    if (field.type.kind == Type::Kind::Optional) {
      Value none;
      none.provenance = {Provenance::Kind::SchemaDefault, field.file, field.span, ""};
      return none;
    }
    if (recovered) return std::nullopt;
    diag::Diagnostic& d = diagnostics_.Emit(diag::Kind::MissingField, file, span, path, record.name);
    d.notes.push_back(
        diag::DiagnosticEngine::Note(diag::Kind::NoteDeclaredHere, field.file, field.span, field.name));
    return std::nullopt;
  }

  std::optional<Value> FromEnvironment(const Type& type, const std::string& text) {
    Value value;
    char* end = nullptr;
    switch (type.kind) {
      case Type::Kind::Optional:
        return FromEnvironment(type.args[0], text);
      case Type::Kind::Union:
        // The first alternative the text parses as, in declaration order.
        for (const Type& alternative : type.args) {
          if (std::optional<Value> parsed = FromEnvironment(alternative, text)) return parsed;
        }
        return std::nullopt;
      case Type::Kind::Bool: {
        std::optional<bool> b = scalars::StrToBool(text);
        if (!b) return std::nullopt;
        value.kind = Value::Kind::Bool;
        value.bool_value = *b;
        return value;
      }
      case Type::Kind::Int:
        value.kind = Value::Kind::Int;
        value.int_value = std::strtoll(text.c_str(), &end, 10);
        if (text.empty() || *end != '\0') return std::nullopt;
        return value;
      case Type::Kind::Float:
        value.kind = Value::Kind::Float;
        value.float_value = std::strtod(text.c_str(), &end);
        if (text.empty() || *end != '\0') return std::nullopt;
        return value;
      case Type::Kind::Duration:
        // Seconds, as Accelerate's timeout variables are.
        value.kind = Value::Kind::Duration;
        value.int_value = std::strtoll(text.c_str(), &end, 10) * 1000;
        if (text.empty() || *end != '\0') return std::nullopt;
        return value;
      case Type::Kind::Host:
        if (!scalars::WhyNotAHost(text).empty()) return std::nullopt;
        [[fallthrough]];
      case Type::Kind::String:
      case Type::Kind::Path:
        value.kind = Value::Kind::String;
        value.text = text;
        return value;
      case Type::Kind::Enum: {
        const EnumSchema& e = schema_.enums.find(type.name)->second;
        const EnumSchema::Member* member = e.Find(text);
        if (member == nullptr) return std::nullopt;
        return EnumValue(e, *member);
      }
      default:
        return std::nullopt;
    }
  }

  static Value EnumValue(const EnumSchema& e, const EnumSchema::Member& member) {
    Value value;
    value.kind = Value::Kind::Enum;
    value.type_name = e.name;
    value.text = member.name;
    value.enum_value = member.value;
    return value;
  }

  std::optional<Value> Mismatch(const ast::Expr& expr, const Type& type, const source::SourceFile* file,
                                const std::string& path) {
    // A config file's "auto" where the schema's type has no `Auto`: no tool fills this key in.
    if (options_.file_keys && expr.kind == ast::ExprKind::String && expr.text == "auto") {
      if (AdmitsAuto(type) && options_.target == "deepspeed") {
        diagnostics_.Emit(diag::Kind::AutoUnderDeepSpeed, file, expr.span, path);
      } else {
        diagnostics_.Emit(diag::Kind::AutoNotFilled, file, expr.span, path, type.Describe());
      }
      return std::nullopt;
    }
    // DeepSpeed's models read a number's text, 0/1 for a bool, true for 1: a warning, not an error.
    if (lax_) {
      if (std::optional<Value> lax = LaxValue(expr, type, lax_bool_as_number_)) {
        std::string meant = lax->kind == Value::Kind::Bool    ? (lax->bool_value ? "true" : "false")
                            : lax->kind == Value::Kind::Int   ? std::to_string(lax->int_value)
                                                              : fmt::format("{}", lax->float_value);
        diag::Diagnostic& d =
            diagnostics_.Emit(diag::Kind::LaxValue, file, expr.span, path, DescribeFound(expr), meant, meant);
        d.fixit = diag::FixIt{expr.span, meant};
        lax->provenance = {Provenance::Kind::Spec, file, expr.span, ""};
        return lax;
      }
    }
    // A config file's null is passed on as None, which is not the key's absence.
    std::string found = options_.file_keys && expr.kind == ast::ExprKind::None
                            ? "`null` (read as None, not as an unset key)"
                            : DescribeFound(expr);
    diagnostics_.Emit(diag::Kind::TypeMismatch, file, expr.span, path, type.Describe(), found);
    return std::nullopt;
  }

  // A record literal whose type is not what the field takes: a typo gets a did-you-mean
  // among the types the field accepts.
  std::optional<Value> WrongRecordType(const ast::Expr& expr, const Type& type,
                                       const source::SourceFile* file, const std::string& path) {
    if (schema_.records.count(expr.text) > 0) return Mismatch(expr, type, file, path);
    std::vector<std::string> accepted;
    for (const Type& t : type.kind == Type::Kind::Union ? type.args : std::vector<Type>{type}) {
      if (t.kind == Type::Kind::Record) accepted.push_back(t.name);
    }
    std::string guess = diag::ClosestMatch(expr.text, accepted);
    diag::Diagnostic& d =
        diagnostics_.Emit(diag::Kind::UnknownType, file, expr.path[0].span, expr.text,
                          guess.empty() ? fmt::format("; `{}` takes {}", path, type.Describe())
                                        : fmt::format("; did you mean `{}`?", guess));
    if (!guess.empty()) d.fixit = diag::ReplaceKeepingQuotes(file, expr.path[0].span, guess);
    return std::nullopt;
  }

  // Converts `expr` to a value of `type`, reporting what does not fit.
  std::optional<Value> Convert(const ast::Expr& expr, const Type& type, const source::SourceFile* file,
                               const std::string& path) {
    if (const LetBinding* let = lets_.Named(expr, file)) {
      // A let's value is read as the type of the field it sets, by this conversion.
      auto convert = [this](const ast::Expr& e, const Type& t, const source::SourceFile* f,
                            const std::string& p) { return Convert(e, t, f, p); };
      return lets_.Expand(*let, expr, type, file, path, convert);
    }
    Value value;
    value.provenance = {Provenance::Kind::Spec, file, expr.span, ""};
    switch (type.kind) {
      case Type::Kind::Optional:
        if (expr.kind == ast::ExprKind::None) return value;
        return Convert(expr, type.args[0], file, path);
      case Type::Kind::Union:
        return ConvertUnion(expr, type, file, path);
      case Type::Kind::Bool:
        value.kind = Value::Kind::Bool;
        if (expr.kind == ast::ExprKind::Bool) {
          value.bool_value = expr.bool_value;
          return value;
        }
        // Accelerate's own files write booleans as 'no' or "true"; its loader keeps the string.
        if (options_.yaml_scalars && expr.kind == ast::ExprKind::String) {
          std::optional<bool> b = scalars::StrToBool(expr.text);
          // DeepSpeed keeps the text of a key it reads with `.get` (outside its pydantic models),
          // and any text is true to it: "false" turns the setting on, or fails where it is
          // combined with a bool (`wall_clock_breakdown | flops_profiler.enabled`).
          if (b && options_.lax_models && !lax_) {
            diag::Diagnostic& d = diagnostics_.Emit(diag::Kind::TypeMismatch, file, expr.span, path,
                                                    type.Describe(), DescribeFound(expr));
            d.message += fmt::format("; DeepSpeed reads this key with `.get` and keeps the text, which is "
                                     "true in any condition: write {}",
                                     *b ? "true" : "false");
            d.fixit = diag::FixIt{expr.span, *b ? "true" : "false"};
            return std::nullopt;
          }
          if (b) {
            value.bool_value = *b;
            return value;
          }
        }
        return Mismatch(expr, type, file, path);
      case Type::Kind::Int:
        if (expr.kind != ast::ExprKind::Int) return Mismatch(expr, type, file, path);
        value.kind = Value::Kind::Int;
        value.int_value = expr.int_value;
        return value;
      case Type::Kind::Float:
        if (expr.kind != ast::ExprKind::Int && expr.kind != ast::ExprKind::Float) {
          return Mismatch(expr, type, file, path);
        }
        value.kind = Value::Kind::Float;
        value.float_value =
            expr.kind == ast::ExprKind::Int ? static_cast<double>(expr.int_value) : expr.float_value;
        return value;
      case Type::Kind::String:
      case Type::Kind::Path:
      case Type::Kind::Host: {
        if (options_.yaml_scalars &&
            (expr.kind == ast::ExprKind::Duration || expr.kind == ast::ExprKind::Bytes)) {
          value.kind = Value::Kind::String;  // YAML `tag: 5m` is text where text is wanted
          value.text = expr.text;
          return value;
        }
        if (expr.kind != ast::ExprKind::String) return Mismatch(expr, type, file, path);
        value.kind = Value::Kind::String;
        std::optional<std::string> text = Interpolated(expr, file);
        if (!text) return std::nullopt;
        // The bad byte is named, never printed: a line break would forge the next log line.
        if (std::string why = type.kind == Type::Kind::Host ? scalars::WhyNotAHost(*text)
                              : type.kind == Type::Kind::Path && text->find('\0') != std::string::npos
                                  ? "a path holds no NUL byte (the system would cut it there)"
                                  : "";
            !why.empty()) {
          diagnostics_.Emit(diag::Kind::InvalidText, file, expr.span, path, type.Describe(), why);
          return std::nullopt;
        }
        value.text = std::move(*text);
        return value;
      }
      case Type::Kind::Duration:
        value.kind = Value::Kind::Duration;
        // YAML may give a timeout as a number of seconds, as Accelerate's variables do.
        if (options_.yaml_scalars && expr.kind == ast::ExprKind::Int && expr.int_value >= 0 &&
            expr.int_value <= INT64_MAX / 1000) {
          value.int_value = expr.int_value * 1000;
          return value;
        }
        if (expr.kind != ast::ExprKind::Duration) return Mismatch(expr, type, file, path);
        value.int_value = expr.int_value;
        return value;
      case Type::Kind::Bytes:
        if (expr.kind != ast::ExprKind::Bytes && expr.kind != ast::ExprKind::Int) {
          return Mismatch(expr, type, file, path);
        }
        value.kind = Value::Kind::Bytes;
        value.int_value = expr.int_value;
        return value;
      case Type::Kind::Enum:
        return ConvertEnum(expr, type, file, path);
      case Type::Kind::Record: {
        if (expr.kind != ast::ExprKind::Record) return Mismatch(expr, type, file, path);
        // A config file's mapping names no type: it is whatever the field takes.
        bool anonymous = expr.text.empty();
        if (!anonymous && expr.text != type.name) return WrongRecordType(expr, type, file, path);
        std::vector<Entry> entries;
        for (const ast::Statement& s : expr.block->statements) entries.push_back({&s, 0, file, 0});
        return CheckRecord(schema_.records.find(type.name)->second, entries, file,
                           anonymous ? expr.span : expr.path[0].span, path + ".", expr.block->recovered);
      }
      case Type::Kind::List: {
        if (expr.kind != ast::ExprKind::List) return Mismatch(expr, type, file, path);
        value.kind = Value::Kind::List;
        bool ok = true;
        for (size_t i = 0; i < expr.operands.size(); ++i) {
          std::optional<Value> item =
              Convert(*expr.operands[i], type.args[0], file, fmt::format("{}[{}]", path, i));
          if (!item) {
            ok = false;
            continue;
          }
          value.items.push_back(std::move(*item));
        }
        if (!ok) return std::nullopt;
        return value;
      }
      case Type::Kind::Map: {
        // A map literal, or a config file's mapping (an anonymous record) where the schema
        // wants a `map<K, V>`: the keys are the map's keys.
        std::vector<MapEntry> entries;
        if (expr.kind == ast::ExprKind::Record && expr.text.empty()) {
          for (const ast::Statement& entry : expr.block->statements)
            entries.push_back({&entry.path[0], entry.value.get()});
        } else if (expr.kind == ast::ExprKind::Map) {
          for (size_t i = 0; i < expr.operands.size(); ++i)
            entries.push_back({&expr.path[i], expr.operands[i].get()});
        } else {
          return Mismatch(expr, type, file, path);
        }
        return ConvertMap(entries, expr.span, type, file, path);
      }
    }
    return Mismatch(expr, type, file, path);
  }

  // `${VAR}` and `${VAR:-default}` in a spec's string, from the explicit environment. Config
  // files are taken literally, as Accelerate takes them.
  std::optional<std::string> Interpolated(const ast::Expr& expr, const source::SourceFile* file) {
    if (options_.file_keys) return expr.text;
    std::string unset;
    std::optional<std::string> text = Interpolate(expr.text, environment_, unset);
    if (!text) {
      diagnostics_.Emit(diag::Kind::UnsetInterpolation, file, expr.span, unset, expr.text, unset, unset);
    }
    return text;
  }

  struct MapEntry {
    const ast::Name* key;
    const ast::Expr* value;
  };

  // The entries of a map value; a key given twice is A2004 with a note at the first.
  std::optional<Value> ConvertMap(const std::vector<MapEntry>& entries, source::Span span, const Type& type,
                                  const source::SourceFile* file, const std::string& path) {
    Value value;
    value.kind = Value::Kind::Map;
    value.provenance = {Provenance::Kind::Spec, file, span, ""};
    bool ok = true;
    std::map<std::string, source::Span> seen;
    for (const MapEntry& entry : entries) {
      const ast::Name& key = *entry.key;
      std::string item_path = fmt::format("{}[\"{}\"]", path, key.text);
      if (auto [it, inserted] = seen.emplace(key.text, key.span); !inserted) {
        diag::Diagnostic& d = diagnostics_.Emit(diag::Kind::DuplicateField, file, key.span, item_path);
        d.notes.push_back(diag::DiagnosticEngine::Note(diag::Kind::NotePreviousValue, file, it->second));
        ok = false;
        continue;
      }
      std::optional<Value> item =
          entry.value ? Convert(*entry.value, type.args[1], file, item_path) : std::nullopt;
      if (!item) {
        ok = false;
        continue;
      }
      value.keys.push_back(key.text);
      value.items.push_back(std::move(*item));
    }
    if (!ok) return std::nullopt;
    return value;
  }

  // The member of `e` an unquoted YAML boolean word stands for: the one whose name or value is
  // the same word up to case (`no` and `NO` for DistributedType's `NO`), or null.
  const EnumSchema::Member* YamlBoolMember(const ast::Expr& expr, const EnumSchema& e) const {
    if (!options_.yaml_scalars || expr.kind != ast::ExprKind::Bool) return nullptr;
    auto lower = [](std::string text) {
      std::transform(text.begin(), text.end(), text.begin(), [](unsigned char c) { return std::tolower(c); });
      return text;
    };
    std::string word = lower(expr.text);
    for (const EnumSchema::Member& m : e.members) {
      if (lower(m.name) == word || lower(m.value) == word) return &m;
    }
    return nullptr;
  }

  std::optional<Value> ConvertEnum(const ast::Expr& expr, const Type& type, const source::SourceFile* file,
                                   const std::string& path) {
    const EnumSchema& e = schema_.enums.find(type.name)->second;
    std::string word;
    if (expr.kind == ast::ExprKind::Path && expr.path.size() == 1) {
      word = expr.path[0].text;
    } else if (expr.kind == ast::ExprKind::String) {
      word = expr.text;
    } else if (const EnumSchema::Member* meant = YamlBoolMember(expr, e)) {
      // YAML 1.1 reads a plain `NO`, `no` or `off` as a boolean; the member was surely meant,
      // whatever the word's case (Accelerate too receives the same `False` for all of them).
      word = meant->name;
      const std::string& spelling = options_.file_keys ? meant->value : meant->name;
      diag::Diagnostic& d = diagnostics_.Emit(diag::Kind::YamlBoolWord, file, expr.span, expr.text,
                                              expr.bool_value ? "true" : "false", spelling);
      d.fixit = diag::FixIt{expr.span, "'" + spelling + "'"};
    } else {
      return Mismatch(expr, type, file, path);
    }
    const EnumSchema::Member* member = e.Find(word);
    if (member == nullptr) {
      // A config file writes members by their serialized values (`none`, `fp16`).
      std::vector<std::string> names;
      for (const EnumSchema::Member& m : e.members) names.push_back(options_.file_keys ? m.value : m.name);
      std::string guess = diag::ClosestMatch(word, names);
      diag::Diagnostic& d =
          diagnostics_.Emit(diag::Kind::UnknownEnumMember, file, expr.span, word, e.name, QuotedList(names));
      if (!guess.empty()) d.fixit = diag::ReplaceKeepingQuotes(file, expr.span, guess);
      return std::nullopt;
    }
    // `Auto` is the stdlib's "filled in by Accelerate or the Trainer"; DeepSpeed alone does not.
    if (e.name == "Auto" && options_.target == "deepspeed") {
      diagnostics_.Emit(diag::Kind::AutoUnderDeepSpeed, file, expr.span, path);
      return std::nullopt;
    }
    Value value = EnumValue(e, *member);
    value.provenance = {Provenance::Kind::Spec, file, expr.span, ""};
    return value;
  }

  std::optional<Value> ConvertUnion(const ast::Expr& expr, const Type& type, const source::SourceFile* file,
                                    const std::string& path) {
    // A record literal names its alternative; anything else (a config file's mapping too)
    // takes the first that fits.
    if (expr.kind == ast::ExprKind::Record && !expr.text.empty()) {
      for (const Type& alternative : type.args) {
        if (alternative.kind == Type::Kind::Record && alternative.name == expr.text) {
          return Convert(expr, alternative, file, path);
        }
      }
      return WrongRecordType(expr, type, file, path);
    }
    // A config file's mapping may name its alternative with a `type` key
    // (`optimizer: {type: AdamW, lr: 0.001}`).
    if (expr.kind == ast::ExprKind::Record && expr.text.empty()) {
      for (const ast::Statement& s : expr.block->statements) {
        if (s.path.size() != 1 || s.path[0].text != "type" || !s.value ||
            s.value->kind != ast::ExprKind::String) {
          continue;
        }
        const RecordSchema* record = AcceptedRecord(type, s.value->text);
        if (record == nullptr) {
          std::vector<std::string> names;
          for (const Type& t : type.args) names.push_back(t.Describe());
          diagnostics_.Emit(diag::Kind::UnknownType, file, s.value->span, s.value->text,
                            fmt::format("; `{}` takes one of {}", path, QuotedList(names)));
          return std::nullopt;
        }
        std::vector<Entry> entries;
        for (const ast::Statement& other : expr.block->statements) {
          if (&other != &s) entries.push_back({&other, 0, file, 0});
        }
        return CheckRecord(*record, entries, file, expr.span, path + ".", expr.block->recovered);
      }
    }
    for (const Type& alternative : type.args) {
      diag::DiagnosticEngine scratch;
      Checker trial(file_, schema_, environment_, scratch, options_);
      trial.lets_.ContinueFrom(lets_);
      trial.lax_ = lax_;  // the alternative is read by the same reader
      if (std::optional<Value> value = trial.Convert(expr, alternative, file, path)) {
        if (scratch.has_errors()) continue;
        // What the accepted alternative reported stands (a lax reading's warning, a note); the
        // rejected alternatives' errors do not.
        for (const diag::Diagnostic& d : scratch.diagnostics()) diagnostics_.Add(d);
        return value;
      }
    }
    return Mismatch(expr, type, file, path);
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
  // The record being checked is a DeepSpeed pydantic model in lax mode (CheckOptions::lax_models).
  bool lax_ = false;
  // The field being read there takes true and false as 1 and 0 where it wants a number.
  bool lax_bool_as_number_ = false;
  // The "auto"s Accelerate and the Trainer would leave, said once the whole file is read.
  UnfilledAutos unfilled_autos_;
  KeyResolver keys_;
  FileNaming names_;
  Lets lets_;
};

}  // namespace

std::optional<Spec> Check(const ast::File& file, const Schema& schema, const Environment& environment,
                          diag::DiagnosticEngine& diagnostics, const CheckOptions& options) {
  return Checker(file, schema, environment, diagnostics, options).Run();
}

}  // namespace accel::sema
