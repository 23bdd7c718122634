#include "compiler/sema/rule_findings.h"

#include <algorithm>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "compiler/sema/evaluate.h"

namespace accel::sema {
namespace {

// The value at `path` inside the record `root`, or null (a name that is an enum member, or a
// field of an unset optional record).
const Value* ValueAt(const Value& root, const std::vector<std::string>& path) {
  const Value* value = &root;
  for (const std::string& name : path) {
    if (value->kind != Value::Kind::Record) return nullptr;
    value = value->Field(name);
    if (value == nullptr) return nullptr;
  }
  return value;
}

// The parts of `a and b and ...`, in order.
void Conjuncts(const ast::Expr& expr, std::vector<const ast::Expr*>& out) {
  if (expr.kind == ast::ExprKind::Binary && expr.text == "and") {
    Conjuncts(*expr.operands[0], out);
    Conjuncts(*expr.operands[1], out);
    return;
  }
  out.push_back(&expr);
}

}  // namespace

// Every field path `expr` reads, in order of appearance, without repeats.
void ReferencedPaths(const ast::Expr& expr, std::vector<std::vector<std::string>>& paths) {
  if (expr.kind == ast::ExprKind::Path && !expr.path.empty()) {
    std::vector<std::string> path;
    for (const ast::Name& name : expr.path) path.push_back(name.text);
    if (std::find(paths.begin(), paths.end(), path) == paths.end()) paths.push_back(std::move(path));
  }
  for (const ast::ExprPtr& operand : expr.operands) ReferencedPaths(*operand, paths);
}

// The parts of a broken rule to report, one finding each: for `A implies C1 and ... and Cn`
// with several Ci false, each of them, when each reads a key this file sets (a file that sets
// two keys a rule forbids gets two findings, each at its key); otherwise the whole rule
// (null), reported once.
std::vector<const ast::Expr*> BrokenConclusions(const ast::Expr& condition, const Value& value,
                                                const source::SourceFile* file) {
  std::vector<const ast::Expr*> conjuncts;
  if (condition.kind == ast::ExprKind::Binary && condition.text == "implies")
    Conjuncts(*condition.operands[1], conjuncts);
  std::vector<const ast::Expr*> broken;
  if (conjuncts.size() > 1) {
    for (const ast::Expr* conjunct : conjuncts) {
      std::string error;
      std::optional<Value> holds = Evaluate(*conjunct, value, &error);
      if (holds && holds->kind == Value::Kind::Bool && !holds->bool_value) broken.push_back(conjunct);
    }
  }
  auto sets_a_key = [&](const ast::Expr* part) {
    std::vector<std::vector<std::string>> paths;
    ReferencedPaths(*part, paths);
    return std::any_of(paths.begin(), paths.end(), [&](const std::vector<std::string>& path) {
      const Value* input = ValueAt(value, path);
      return input && input->provenance.kind == Provenance::Kind::Spec && input->provenance.file == file;
    });
  };
  if (broken.size() < 2 || !std::all_of(broken.begin(), broken.end(), sets_a_key)) return {nullptr};
  return broken;
}


// A broken rule is reported at the field the user most likely has to change: the first one
// its conclusion (the right of `implies`, or the one broken part of it `broken`) reads that
// this file sets, else the first field it reads that this file sets, else the record. Every
// other field it reads that this file sets gets a note, so the whole story is on screen.
diag::Diagnostic RuleViolation(const FileNaming& naming, const JobSite& job, const RuleSchema& rule,
                               const Value& value, const source::SourceFile* file, source::Span span,
                               const std::string& prefix, const ast::Expr* broken) {
  std::vector<std::vector<std::string>> paths;
  const ast::Expr& condition = *rule.condition;
  if (condition.kind == ast::ExprKind::Binary && condition.text == "implies") {
    ReferencedPaths(broken ? *broken : *condition.operands[1], paths);
    ReferencedPaths(*condition.operands[0], paths);
  } else {
    ReferencedPaths(condition, paths);
  }
  struct Input {
    std::string path;
    const Value* value;
  };
  std::vector<Input> inputs;
  std::vector<std::string> from_environment;
  for (const std::vector<std::string>& path : paths) {
    const Value* input = ValueAt(value, path);
    if (input == nullptr) continue;
    std::string text = naming.PathText(value.type_name, path);
    // A value from the environment has no line to point at: the message names its variable.
    if (input->provenance.kind == Provenance::Kind::Environment) {
      from_environment.push_back(fmt::format("`{}{}` = {} from environment variable `{}`", prefix, text,
                                             input->Describe(), input->provenance.env_var));
    }
    if (input->provenance.kind != Provenance::Kind::Spec || input->provenance.file != file) continue;
    inputs.push_back({prefix + text, input});
  }
  diag::Diagnostic d;
  d.code = rule.code;
  d.severity = rule.severity;
  d.message = prefix.empty()
                  ? rule.message
                  : fmt::format("{} (in `{}`)", rule.message, prefix.substr(0, prefix.size() - 1));
  if (!from_environment.empty()) d.message += fmt::format(" ({})", fmt::join(from_environment, ", "));
  d.file = file;
  d.span = inputs.empty() ? span : inputs[0].value->provenance.span;
  if (file != job.file) {
    // A record the spec left to its schema default (filled from the environment, say): the
    // stdlib's line would mean nothing to the user, so point at their job.
    d.file = job.file;
    d.span = job.span;
  }
  for (size_t i = 1; i < inputs.size(); ++i) {
    d.notes.push_back(diag::DiagnosticEngine::Note(diag::Kind::NoteRuleInput, file,
                                                   inputs[i].value->provenance.span, inputs[i].path,
                                                   inputs[i].value->Describe()));
  }
  return d;
}

}  // namespace accel::sema
