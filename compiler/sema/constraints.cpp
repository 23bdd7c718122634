#include "compiler/sema/constraints.h"

#include <algorithm>
#include <tuple>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "compiler/diagnostics/diagnostic.h"
#include "compiler/sema/evaluate.h"
#include "compiler/sema/releases.h"

namespace accel::sema {
namespace {

// Whether `expr` reads one of `fields` (of the record in scope): the first segment of a name.
// A walk, not a set of the names: every rule of every record asks, once per checked file.
bool ReadsAnyOf(const ast::Expr& expr, const std::set<std::string>& fields) {
  if (expr.kind == ast::ExprKind::Path && !expr.path.empty() && fields.count(expr.path[0].text)) return true;
  for (const ast::ExprPtr& operand : expr.operands) {
    if (ReadsAnyOf(*operand, fields)) return true;
  }
  return false;
}

// Whether `expr`, evaluated in `record` at `prefix`, reads a field of the context's unknown
// values or something inside one.
bool ReadsUnknownValue(const ConstraintContext& context, const ast::Expr& expr, const RecordSchema& record,
                       const std::string& prefix) {
  if (context.unknown_values.empty()) return false;
  std::vector<std::vector<std::string>> paths;
  ReferencedPaths(expr, paths);
  for (const std::vector<std::string>& path : paths) {
    std::string text = prefix + context.names.PathText(record.name, path);
    for (const std::string& unknown : context.unknown_values) {
      if (text == unknown || text.rfind(unknown + ".", 0) == 0) return true;
    }
  }
  return false;
}

// For a `where` that keeps a string to a list of names (`x in ["a", "b"]`, `lower(x) in [...]`):
// the name closest to the string `value`, up to case, or "" when none is close or the
// constraint is not such a list.
std::string NameMeant(const ast::Expr& constraint, const Value& value) {
  if (value.kind != Value::Kind::String || constraint.kind != ast::ExprKind::Binary || constraint.text != "in" ||
      constraint.operands[1]->kind != ast::ExprKind::List) {
    return "";
  }
  std::vector<std::string> names;
  for (const ast::ExprPtr& item : constraint.operands[1]->operands) {
    if (item->kind != ast::ExprKind::String) return "";
    names.push_back(item->text);
  }
  return diag::ClosestMatch(value.text, names);
}

// Under a pinned release, a field whose bounds or validating check differ from the newest's
// (which its `where` models) is judged by that release instead. Returns whether it was.
bool CheckedByRelease(const ConstraintContext& context, const FieldSchema& field, const Value& value,
                      const source::SourceFile* file, source::Span span, const std::string& prefix,
                      diag::DiagnosticEngine& diagnostics) {
  const std::string& name = NameInFile(field, context.options);
  std::optional<std::string> bounds = context.release.BoundsChange(prefix, name);
  if (!bounds) return false;
  bool number = value.kind == Value::Kind::Int || value.kind == Value::Kind::Float;
  double x = value.kind == Value::Kind::Int ? static_cast<double>(value.int_value) : value.float_value;
  if (number && !WithinBounds(x, *bounds)) {
    bool from_spec = value.provenance.kind == Provenance::Kind::Spec && value.provenance.file == file;
    diagnostics.Emit(diag::Kind::ConstraintViolated, file, from_spec ? value.provenance.span : span,
                     prefix + name, value.Describe(),
                     fmt::format("{} ({})", BoundsText(name, *bounds), context.release.PinnedName()));
  }
  return true;
}

// Whether `condition`, a `where` or a rule of `record` declared in `declared_in`, holds on
// `value`. Null when it does not evaluate to a bool: the schema's mistake, reported at it.
std::optional<bool> Holds(const ast::Expr& condition, const source::SourceFile* declared_in,
                          const RecordSchema& record, const Value& value,
                          diag::DiagnosticEngine& diagnostics) {
  std::string error;
  std::optional<Value> result = Evaluate(condition, value, &error);
  if (!result || result->kind != Value::Kind::Bool) {
    diagnostics.Emit(diag::Kind::BadSchemaExpression, declared_in, condition.span, ExprText(condition),
                     record.name, error.empty() ? "it is not a bool" : error);
    return std::nullopt;
  }
  return result->bool_value;
}

}  // namespace

void CheckConstraints(const ConstraintContext& context, const RecordSchema& record, const Value& value,
                      std::set<std::string> failed, const source::SourceFile* file, source::Span span,
                      const std::string& prefix, diag::DiagnosticEngine& diagnostics) {
  const CheckOptions& options = context.options;
  auto reads_failed = [&](const ast::Expr& expr) {
    return (!failed.empty() && ReadsAnyOf(expr, failed)) || ReadsUnknownValue(context, expr, record, prefix);
  };
  for (size_t i = 0; i < record.fields.size(); ++i) {
    const FieldSchema& field = record.fields[i];
    const Value& field_value = value.items[i];
    // Constraints speak about present values; `none` for an optional passes.
    if (field_value.kind == Value::Kind::None || failed.count(field.name)) continue;
    if (CheckedByRelease(context, field, field_value, file, span, prefix, diagnostics)) continue;
    if (field.constraint == nullptr || reads_failed(*field.constraint)) continue;
    std::optional<bool> holds = Holds(*field.constraint, field.file, record, value, diagnostics);
    if (!holds || *holds) continue;
    // Rules reading this field would only restate the violation.
    failed.insert(field.name);
    bool from_spec =
        field_value.provenance.kind == Provenance::Kind::Spec && field_value.provenance.file == file;
    source::Span where = from_spec ? field_value.provenance.span : span;
    const source::SourceFile* where_file = file;
    if (file != context.job.file) {  // inside a schema default: point at the user's job
      where_file = context.job.file;
      where = context.job.span;
    }
    const std::string& name = NameInFile(field, options);
    diag::Diagnostic& d = diagnostics.Emit(diag::Kind::ConstraintViolated, where_file, where, prefix + name,
                                           field_value.Describe(), ExprText(*field.constraint));
    if (field_value.provenance.kind == Provenance::Kind::Environment) {
      d.message += fmt::format(" (value from environment variable `{}`)", field_value.provenance.env_var);
    }
    if (std::string meant = NameMeant(*field.constraint, field_value); !meant.empty()) {
      d.message += fmt::format("; did you mean `{}`?", meant);
      if (from_spec && where_file == file) d.fixit = diag::ReplaceKeepingQuotes(file, where, meant);
    }
    if (std::optional<std::string> not_run = context.release.CheckNotRun(prefix, name)) {
      d.severity = diag::Severity::Warning;  // the pinned release lets the file through
      d.message += fmt::format(" ({})", *not_run);
    }
  }
  for (const RuleSchema& rule : record.rules) {
    if (reads_failed(*rule.condition)) continue;
    // A rule about a release's own default holds trivially in the releases whose default works.
    std::optional<std::string> refused_default;
    if (ReleaseJudge::StandsForRefusedDefault(rule.code)) {
      refused_default = context.release.RefusedDefault(prefix, rule.code);
      if (!refused_default) continue;
    }
    std::optional<bool> holds = Holds(*rule.condition, rule.file, record, value, diagnostics);
    if (!holds || *holds) continue;
    // Broken parts that come to the same place are one finding: a rule whose missing keys
    // have no line of their own is reported once.
    std::vector<std::tuple<const source::SourceFile*, uint32_t, uint32_t>> reported;
    for (const ast::Expr* broken : BrokenConclusions(*rule.condition, value, file)) {
      diag::Diagnostic d = RuleViolation(context.names, context.job, rule, value, file, span, prefix, broken);
      std::tuple<const source::SourceFile*, uint32_t, uint32_t> where{d.file, d.span.begin, d.span.end};
      if (std::find(reported.begin(), reported.end(), where) != reported.end()) continue;
      reported.push_back(where);
      if (!options.target.empty() && !rule.targets.empty() &&
          std::find(rule.targets.begin(), rule.targets.end(), options.target) == rule.targets.end()) {
        // The tool this file is for does not need it; the tools that do are worth a line.
        d.severity = diag::Severity::Note;
        d.message += fmt::format(" ({} not applied: checked for `{}`; `--for {}` applies it)", rule.code,
                                 options.target, fmt::join(rule.targets, "` or `--for "));
        d.notes.clear();
      } else if (std::optional<std::string> not_run = context.release.CheckNotRun(prefix, rule.code)) {
        // The pinned release lets the file through: what the rule warns of may still happen.
        d.severity = diag::Severity::Warning;
        d.message += fmt::format(" ({})", *not_run);
      }
      if (refused_default) d.message += fmt::format(" ({})", *refused_default);
      diagnostics.Add(std::move(d));
    }
  }
}

}  // namespace accel::sema
