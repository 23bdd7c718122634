#include "compiler/pipeline/explain.h"

#include <set>

#include <fmt/format.h>

#include "compiler/diagnostics/explanations.h"
#include "compiler/sema/evaluate.h"

namespace accel::pipeline {
namespace {

std::string Indent(const std::string& text) {
  std::string out = "  ";
  for (char c : text) {
    out += c;
    if (c == '\n') out += "  ";
  }
  return out;
}

}  // namespace

std::optional<std::string> ExplainCode(const std::string& code, const sema::Schema& schema) {
  if (auto it = diag::Explanations().find(code); it != diag::Explanations().end()) {
    return fmt::format("{}\n{}\n", code, Indent(it->second));
  }
  std::string out;
  for (const auto& [name, record] : schema.records) {
    for (const sema::RuleSchema& rule : record.rules) {
      if (rule.code != code) continue;
      if (out.empty()) out = code + "\n";
      out += fmt::format("  {} of `{}` ({}:{})\n  {}\n  holds when: {}\n", diag::SeverityName(rule.severity),
                         record.name, rule.file ? rule.file->name() : "<stdlib>",
                         rule.file ? rule.file->Locate(rule.span.begin).line : 0, rule.message,
                         sema::ExprText(*rule.condition));
      if (!rule.doc.empty()) out += Indent(rule.doc) + "\n";
    }
  }
  if (out.empty()) return std::nullopt;
  return out;
}

std::vector<std::string> KnownCodes(const sema::Schema& schema) {
  std::vector<std::string> codes;
  for (const auto& [code, _] : diag::Explanations()) codes.push_back(code);
  std::set<std::string> rules;
  for (const auto& [name, record] : schema.records) {
    for (const sema::RuleSchema& rule : record.rules) rules.insert(rule.code);
  }
  codes.insert(codes.end(), rules.begin(), rules.end());
  return codes;
}

}  // namespace accel::pipeline
