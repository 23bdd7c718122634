#include "compiler/docs/describe.h"

#include <algorithm>
#include <set>

#include "compiler/diagnostics/explanations.h"
#include "compiler/sema/evaluate.h"

namespace accel::docs {

const std::string& FileKey(const sema::FieldSchema& field) {
  return field.file_key ? *field.file_key : field.name;
}

std::string DefaultText(const sema::FieldSchema& field) {
  if (field.default_value != nullptr) return sema::ExprText(*field.default_value);
  return field.type.kind == sema::Type::Kind::Optional ? "none" : "required";
}

std::string OneLine(std::string_view doc) {
  std::string out;
  for (char c : doc) {
    if (c == '\n') {
      if (!out.empty() && out.back() != ' ') out += ' ';
    } else {
      out += c;
    }
  }
  return out;
}

std::string Summary(std::string_view doc) {
  std::string line = OneLine(doc);
  // A sentence ends at ". ", except after an abbreviation (`e.g. ml.p3.2xlarge`).
  for (size_t end = line.find(". "); end != std::string::npos; end = line.find(". ", end + 1)) {
    std::string_view before = std::string_view(line).substr(0, end);
    bool abbreviation = false;
    for (std::string_view a : {"e.g", "i.e", "etc", "vs"}) {
      if (before.size() >= a.size() && before.substr(before.size() - a.size()) == a) abbreviation = true;
    }
    if (!abbreviation) return line.substr(0, end + 1);
  }
  return line;
}

std::string SourceName(const source::SourceFile* file) {
  if (file == nullptr) return "";
  std::string name(file->name());
  constexpr std::string_view kPrefix = "<stdlib>/";
  if (name.rfind(kPrefix, 0) == 0) return "stdlib/" + name.substr(kPrefix.size());
  return name;
}

namespace {

void CollectNames(const sema::Type& type, std::vector<std::string>& names) {
  if (type.kind == sema::Type::Kind::Enum || type.kind == sema::Type::Kind::Record) {
    if (std::find(names.begin(), names.end(), type.name) == names.end()) names.push_back(type.name);
  }
  for (const sema::Type& arg : type.args) CollectNames(arg, names);
}

}  // namespace

std::vector<std::string> NamedTypes(const sema::Type& type) {
  std::vector<std::string> names;
  CollectNames(type, names);
  return names;
}

// Mirrors Type::Describe() piece by piece; a unit test keeps the two in step.
std::string RenderType(const sema::Type& type, const std::function<std::string(const std::string&)>& name,
                       const std::function<std::string(std::string_view)>& text) {
  using Kind = sema::Type::Kind;
  switch (type.kind) {
    case Kind::Enum:
    case Kind::Record:
      return name(type.name);
    case Kind::List:
      return text("list<") + RenderType(type.args[0], name, text) + text(">");
    case Kind::Map:
      return text("map<") + RenderType(type.args[0], name, text) + text(", ") +
             RenderType(type.args[1], name, text) + text(">");
    case Kind::Optional:
      if (type.args[0].kind == Kind::Union)
        return text("(") + RenderType(type.args[0], name, text) + text(")?");
      return RenderType(type.args[0], name, text) + text("?");
    case Kind::Union: {
      std::string out;
      for (size_t i = 0; i < type.args.size(); ++i) {
        if (i > 0) out += text(" | ");
        out += RenderType(type.args[i], name, text);
      }
      return out;
    }
    default:
      return text(type.Describe());
  }
}

std::vector<RuleEntry> AllRules(const sema::Schema& schema) {
  std::vector<RuleEntry> rules;
  // `schema.records` is sorted by name, so a stable sort by id leaves records in name order
  // and each record's rules in declaration order.
  for (const auto& [name, record] : schema.records) {
    for (const sema::RuleSchema& rule : record.rules) rules.push_back({&record, &rule});
  }
  std::stable_sort(rules.begin(), rules.end(),
                   [](const RuleEntry& a, const RuleEntry& b) { return a.rule->code < b.rule->code; });
  return rules;
}

std::vector<diag::KindInfo> SortedKinds() {
  std::vector<diag::KindInfo> kinds = diag::AllKinds();
  std::stable_sort(kinds.begin(), kinds.end(),
                   [](const diag::KindInfo& a, const diag::KindInfo& b) { return a.code < b.code; });
  return kinds;
}

std::string FormatText(std::string_view format) {
  std::string out;
  for (size_t i = 0; i < format.size(); ++i) {
    out += format[i];
    if ((format[i] == '{' || format[i] == '}') && i + 1 < format.size() && format[i + 1] == format[i]) ++i;
  }
  return out;
}

std::string Explanation(std::string_view code) {
  auto it = diag::Explanations().find(code);
  return it == diag::Explanations().end() ? "" : it->second;
}

std::map<std::string, std::vector<std::string>> UsedBy(const sema::Schema& schema) {
  std::map<std::string, std::set<std::string>> uses;
  for (const auto& [record_name, record] : schema.records) {
    for (const sema::FieldSchema& field : record.fields) {
      for (const std::string& type : NamedTypes(field.type))
        uses[type].insert(record_name + "." + field.name);
    }
  }
  std::map<std::string, std::vector<std::string>> out;
  for (auto& [type, places] : uses) out[type] = {places.begin(), places.end()};
  return out;
}

}  // namespace accel::docs
