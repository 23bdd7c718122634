#include "compiler/lsp/schema_docs.h"

#include <fmt/format.h>

#include "compiler/docs/describe.h"
#include "compiler/pipeline/explain.h"

namespace accel::lsp {
namespace {

bool Reads(const ast::Expr& expr, const std::string& name) {
  if (expr.kind == ast::ExprKind::Path && !expr.path.empty() && expr.path[0].text == name) return true;
  for (const ast::ExprPtr& operand : expr.operands) {
    if (operand && Reads(*operand, name)) return true;
  }
  return false;
}

std::string Codes(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& name : names) out += (out.empty() ? "`" : ", `") + name + "`";
  return out;
}

}  // namespace

std::vector<const sema::RuleSchema*> RulesReading(const sema::RecordSchema& record,
                                                  const sema::FieldSchema& field) {
  std::vector<const sema::RuleSchema*> rules;
  for (const sema::RuleSchema& rule : record.rules) {
    if (rule.condition != nullptr && Reads(*rule.condition, field.name)) rules.push_back(&rule);
  }
  return rules;
}

std::vector<const sema::FieldSchema*> RequiredFields(const sema::RecordSchema& record) {
  std::vector<const sema::FieldSchema*> required;
  for (const sema::FieldSchema& field : record.fields) {
    if (field.default_value == nullptr && field.type.kind != sema::Type::Kind::Optional)
      required.push_back(&field);
  }
  return required;
}

std::string FieldMarkdown(const sema::RecordSchema& record, const sema::FieldSchema& field) {
  std::string out = fmt::format("```accel\n{}.{}: {} = {}\n```\n", record.name, field.name,
                                field.type.Describe(), docs::DefaultText(field));
  if (field.deprecated) out += fmt::format("\n**Deprecated:** {}\n", *field.deprecated);
  if (!field.doc.empty()) out += "\n" + docs::OneLine(field.doc) + "\n";
  std::vector<std::string> facts;
  if (!field.env_vars.empty()) facts.push_back("environment: " + Codes(field.env_vars));
  // Always shown: in a YAML config the key is what the reader types, even when it is the name.
  facts.push_back(fmt::format("config-file key: `{}`", docs::FileKey(field)));
  if (!field.aliases.empty()) facts.push_back("old names: " + Codes(field.aliases));
  std::vector<std::string> rule_codes;
  for (const sema::RuleSchema* rule : RulesReading(record, field)) {
    rule_codes.push_back(fmt::format("`{}` {}", rule->code, rule->message));
  }
  out += "\n";
  for (const std::string& fact : facts) out += "- " + fact + "\n";
  for (const std::string& rule : rule_codes) out += "- rule " + rule + "\n";
  return out;
}

std::string RecordMarkdown(const sema::RecordSchema& record) {
  std::string out = fmt::format("```accel\n{} {}\n```\n", record.kind, record.name);
  if (!record.doc.empty()) out += "\n" + docs::OneLine(record.doc) + "\n";
  std::vector<std::string> required;
  for (const sema::FieldSchema* field : RequiredFields(record)) required.push_back(field->name);
  if (!required.empty()) out += "\nrequired: " + Codes(required) + "\n";
  return out;
}

std::string EnumMemberMarkdown(const sema::EnumSchema& enumeration, const sema::EnumSchema::Member& member) {
  std::string out =
      fmt::format("```accel\n{}.{} = \"{}\"\n```\n", enumeration.name, member.name, member.value);
  if (!member.doc.empty()) out += "\n" + docs::OneLine(member.doc) + "\n";
  return out;
}

std::string CodeMarkdown(const std::string& code, const sema::Schema& schema) {
  std::optional<std::string> text = pipeline::ExplainCode(code, schema);
  return text ? "```text\n" + *text + "```\n" : std::string();
}

}  // namespace accel::lsp
