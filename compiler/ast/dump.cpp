#include <fmt/format.h>

#include "compiler/ast/ast.h"

namespace accel::ast {
namespace {

std::string JoinPath(const std::vector<Name>& path) {
  std::string out;
  for (const Name& name : path) {
    if (!out.empty()) out += '.';
    out += name.text;
  }
  return out;
}

std::string TypeText(const TypeRef& type) {
  std::string out;
  for (const TypeAtom& atom : type.alternatives) {
    if (!out.empty()) out += " | ";
    out += atom.name.text;
    if (!atom.arguments.empty()) {
      out += '<';
      for (size_t i = 0; i < atom.arguments.size(); ++i) {
        if (i) out += ", ";
        out += TypeText(atom.arguments[i]);
      }
      out += '>';
    }
    if (atom.optional) out += '?';
  }
  return out;
}

class Dumper {
 public:
  explicit Dumper(const File& file) : file_(file) {}

  std::string Run() {
    for (const ImportDecl& i : file_.imports) {
      Line(0, fmt::format("import \"{}\"{}", i.path, i.alias ? " as " + i.alias->text : ""), i.span);
    }
    for (const LetDecl& let : file_.lets) {
      Line(0, fmt::format("let {}{}", let.name.text, let.type ? ": " + TypeText(*let.type) : ""), let.span);
      if (let.value) Expression(1, "value", *let.value);
    }
    for (const EnumDecl& e : file_.enums) {
      Line(0, fmt::format("enum {}", e.name.text), e.span);
      for (const EnumMember& m : e.members)
        Line(1, fmt::format("member {} = \"{}\"", m.name.text, m.value), m.span);
    }
    for (const RecordDecl& r : file_.records) {
      Line(0, fmt::format("{}{} {}", r.open ? "open " : "", r.kind, r.name.text), r.span);
      for (const FieldDecl& f : r.fields) {
        Line(1, fmt::format("field {}: {}", f.name.text, TypeText(f.type)), f.span);
        if (f.default_value) Expression(2, "default", *f.default_value);
        for (const Name& env : f.env_vars) Line(2, fmt::format("from env {}", env.text), env.span);
        for (const Name& alias : f.aliases) Line(2, fmt::format("alias {}", alias.text), alias.span);
        for (const Name& also : f.synonyms) Line(2, fmt::format("also {}", also.text), also.span);
        if (f.deprecated) Line(2, fmt::format("deprecated \"{}\"", *f.deprecated), f.span);
        if (f.file_key) Line(2, fmt::format("key \"{}\"", *f.file_key), f.span);
        if (f.constraint) Expression(2, "where", *f.constraint);
      }
      for (const RuleDecl& rule : r.rules) Rule(1, rule);
    }
    for (const RuleDecl& rule : file_.rules) Rule(0, rule);
    for (const JobDecl& job : file_.jobs) {
      Line(0, fmt::format("job {}{}", job.name.text, job.base ? " extends " + job.base->text : ""), job.span);
      BlockBody(1, job.body);
    }
    return out_;
  }

 private:
  // Writes one node: indentation, text, and where the node starts (`@line:col`).
  void Line(int depth, const std::string& text, Span span) {
    source::LineColumn at = file_.source->Locate(span.begin);
    out_ += fmt::format("{}{} @{}:{}\n", std::string(depth * 2, ' '), text, at.line, at.column);
  }

  void Rule(int depth, const RuleDecl& rule) {
    std::string targets;
    for (const Name& target : rule.targets) targets += (targets.empty() ? " for " : ", ") + target.text;
    Line(depth, fmt::format("rule {} {} \"{}\"{}", rule.code.text, rule.severity.text, rule.message, targets),
         rule.span);
    if (rule.condition) Expression(depth + 1, "when", *rule.condition);
  }

  void BlockBody(int depth, const Block& block) {
    for (const Statement& s : block.statements) {
      if (s.block) {
        Line(depth, fmt::format("block {}", JoinPath(s.path)), s.span);
        BlockBody(depth + 1, *s.block);
      } else if (s.value) {
        Expression(depth, JoinPath(s.path) + " =", *s.value);
      }
    }
  }

  void Expression(int depth, const std::string& label, const Expr& e) {
    std::string pad(depth * 2, ' ');
    out_ += pad + label + " ";
    switch (e.kind) {
      case ExprKind::Int:
        out_ += fmt::format("int {}\n", e.int_value);
        return;
      case ExprKind::Float:
        out_ += fmt::format("float {}\n", e.float_value);
        return;
      case ExprKind::String:
        out_ += fmt::format("string \"{}\"\n", e.text);
        return;
      case ExprKind::Bool:
        out_ += fmt::format("bool {}\n", e.bool_value);
        return;
      case ExprKind::None:
        out_ += "none\n";
        return;
      case ExprKind::Duration:
        out_ += fmt::format("duration {}ms\n", e.int_value);
        return;
      case ExprKind::Bytes:
        out_ += fmt::format("bytes {}\n", e.int_value);
        return;
      case ExprKind::Path:
        out_ += fmt::format("path {}\n", JoinPath(e.path));
        return;
      case ExprKind::Record:
        out_ += fmt::format("record {}\n", e.text);
        if (e.block) BlockBody(depth + 1, *e.block);
        return;
      case ExprKind::Call:
        out_ += fmt::format("call {}\n", e.text);
        for (const ExprPtr& arg : e.operands) Expression(depth + 1, "arg", *arg);
        return;
      case ExprKind::List:
        out_ += "list\n";
        for (const ExprPtr& item : e.operands) Expression(depth + 1, "item", *item);
        return;
      case ExprKind::Map:
        out_ += "map\n";
        for (size_t i = 0; i < e.operands.size(); ++i)
          Expression(depth + 1, "key " + e.path[i].text, *e.operands[i]);
        return;
      case ExprKind::IsSet:
        out_ += e.bool_value ? "is not set\n" : "is set\n";
        Expression(depth + 1, "operand", *e.operands[0]);
        return;
      case ExprKind::Unary:
      case ExprKind::Binary:
        out_ += fmt::format("op {}\n", e.text);
        for (const ExprPtr& operand : e.operands) Expression(depth + 1, "operand", *operand);
        return;
    }
  }

  const File& file_;
  std::string out_;
};

}  // namespace

std::string Dump(const File& file) { return Dumper(file).Run(); }

}  // namespace accel::ast
