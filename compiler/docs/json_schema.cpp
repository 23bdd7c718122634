// JSON Schemas (draft 2020-12) of the config-file surface, for yaml-language-server and other
// editors: the types say what `accelc check` accepts in a config file, so an editor flags the
// same unknown keys, enum values and types before the file is ever checked.
#include <cctype>
#include <cstdlib>
#include <map>
#include <optional>
#include <set>
#include <vector>

#include <fmt/format.h>

#include "compiler/docs/describe.h"
#include "compiler/docs/docs.h"
#include "compiler/scalars/bool_words.h"
#include "compiler/sema/evaluate.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

namespace accel::docs {
namespace {
namespace json = llvm::json;
using Kind = sema::Type::Kind;

// The strings the checker takes for a bool in a config file (scalars::StrToBool, which is
// case-insensitive): Accelerate's own files write `downcast_bf16: 'no'`. JSON Schema regexes
// have no case-insensitive flag: each letter becomes `[yY]`.
std::string BoolWordPattern() {
  std::string pattern = "^(?:";
  const std::vector<scalars::BoolWord>& words = scalars::BoolWords();
  for (size_t i = 0; i < words.size(); ++i) {
    if (i > 0) pattern += '|';
    for (char c : words[i].word) {
      if (std::isalpha(static_cast<unsigned char>(c))) {
        pattern += fmt::format("[{}{}]", c, static_cast<char>(std::toupper(static_cast<unsigned char>(c))));
      } else {
        pattern += c;
      }
    }
  }
  return pattern + ")$";
}

json::Object Ref(const std::string& name) { return json::Object{{"$ref", "#/$defs/" + name}}; }

// `{"anyOf": [...]}` without other keywords: its alternatives can join an enclosing anyOf.
bool IsBareAnyOf(const json::Object& o) { return o.size() == 1 && o.get("anyOf") != nullptr; }

json::Object AnyOf(std::vector<json::Object> alternatives) {
  json::Array flat;
  for (json::Object& alternative : alternatives) {
    if (IsBareAnyOf(alternative)) {
      for (json::Value& inner : *alternative.getArray("anyOf")) flat.push_back(std::move(inner));
    } else {
      flat.push_back(std::move(alternative));
    }
  }
  return json::Object{{"anyOf", std::move(flat)}};
}

// A number literal, negated or not.
llvm::Optional<json::Value> Number(const ast::Expr& e) {
  if (e.kind == ast::ExprKind::Int) return json::Value(e.int_value);
  if (e.kind == ast::ExprKind::Float) return json::Value(e.float_value);
  if (e.kind == ast::ExprKind::Unary && e.text == "-" && !e.operands.empty()) {
    const ast::Expr& inner = *e.operands[0];
    if (inner.kind == ast::ExprKind::Int) return json::Value(-inner.int_value);
    if (inner.kind == ast::ExprKind::Float) return json::Value(-inner.float_value);
  }
  return llvm::None;
}

bool IsField(const ast::Expr& e, const std::string& field) {
  return e.kind == ast::ExprKind::Path && e.path.size() == 1 && e.path[0].text == field;
}

bool IsComparison(const ast::Expr& e) {
  static const std::set<std::string> kOps = {"<", "<=", ">", ">=", "==", "!="};
  return e.kind == ast::ExprKind::Binary && kOps.count(e.text) > 0;
}

// `field OP number` as keywords; `number OP field` is turned around first.
llvm::Optional<json::Object> Comparison(std::string op, const ast::Expr& left, const ast::Expr& right,
                                        const std::string& field) {
  llvm::Optional<json::Value> number;
  if (IsField(left, field)) {
    number = Number(right);
  } else if (IsField(right, field)) {
    number = Number(left);
    static const std::map<std::string, std::string> kFlip = {{"<", ">"},   {"<=", ">="}, {">", "<"},
                                                             {">=", "<="}, {"==", "=="}, {"!=", "!="}};
    op = kFlip.at(op);
  }
  if (!number) return llvm::None;
  if (op == ">=") return json::Object{{"minimum", std::move(*number)}};
  if (op == ">") return json::Object{{"exclusiveMinimum", std::move(*number)}};
  if (op == "<=") return json::Object{{"maximum", std::move(*number)}};
  if (op == "<") return json::Object{{"exclusiveMaximum", std::move(*number)}};
  if (op == "==") return json::Object{{"const", std::move(*number)}};
  return json::Object{{"not", json::Object{{"const", std::move(*number)}}}};
}

// A field's `where` as JSON Schema keywords, when it is made only of comparisons with numbers,
// `in [...]` of numbers, `and` and `or`; otherwise none (the description still shows it).
llvm::Optional<json::Object> Constraint(const ast::Expr& e, const std::string& field) {
  if (e.kind != ast::ExprKind::Binary || e.operands.size() != 2) return llvm::None;
  const ast::Expr& left = *e.operands[0];
  const ast::Expr& right = *e.operands[1];
  if (e.text == "and" || e.text == "or") {
    llvm::Optional<json::Object> a = Constraint(left, field);
    llvm::Optional<json::Object> b = Constraint(right, field);
    if (!a || !b) return llvm::None;
    if (e.text == "or") return AnyOf({std::move(*a), std::move(*b)});
    return json::Object{{"allOf", json::Array{std::move(*a), std::move(*b)}}};
  }
  if (e.text == "in" && IsField(left, field) && right.kind == ast::ExprKind::List) {
    json::Array values;
    for (const ast::ExprPtr& item : right.operands) {
      llvm::Optional<json::Value> number = Number(*item);
      if (!number) return llvm::None;
      values.push_back(std::move(*number));
    }
    return json::Object{{"enum", std::move(values)}};
  }
  if (!IsComparison(e)) return llvm::None;
  // `0 <= port <= 65535` reads as `0 <= port and port <= 65535` (sema's evaluator agrees).
  if (IsComparison(left)) {
    llvm::Optional<json::Object> first = Constraint(left, field);
    llvm::Optional<json::Object> second = Comparison(e.text, *left.operands[1], right, field);
    if (!first || !second) return llvm::None;
    for (auto& [key, value] : *second) (*first)[key] = std::move(value);
    return first;
  }
  return Comparison(e.text, left, right, field);
}

// Keywords that only constrain numbers, so they can sit beside any type (a string or `null`
// ignores them).
bool OnlyNumericKeywords(const json::Object& o) {
  static const std::set<std::string> kNumeric = {"minimum", "maximum", "exclusiveMinimum",
                                                 "exclusiveMaximum"};
  for (const auto& [key, value] : o) {
    if (kNumeric.count(llvm::StringRef(key).str()) == 0) return false;
  }
  return true;
}

class Writer {
 public:
  explicit Writer(const sema::Schema& schema) : schema_(schema) {}

  // Adds the record `name`, and every record and enum its fields reach, to `$defs`.
  void AddRecord(const std::string& name) {
    if (!added_.insert(name).second) return;
    const sema::RecordSchema& record = schema_.records.find(name)->second;
    json::Object properties;
    json::Array required;
    for (const sema::FieldSchema& field : record.fields) {
      properties[FileKey(field)] = Field(field);
      // A field that can also be set by an old name is not `required`: the old name would do.
      bool optional = field.type.kind == Kind::Optional || field.default_value != nullptr;
      bool old_names = record.FileTakesOldNames() && !field.aliases.empty();
      if (!optional && !old_names && field.synonyms.empty()) required.push_back(FileKey(field));
      for (const std::string& also : field.synonyms) properties[also] = Field(field);
      for (const std::string& alias : old_names ? field.aliases : std::vector<std::string>{}) {
        json::Object old = Field(field);
        old["description"] = fmt::format("Old name of `{}` (accepted with warning A2010). {}", FileKey(field),
                                         OneLine(field.doc));
        old["deprecated"] = true;
        properties[alias] = std::move(old);
      }
    }
    json::Object def{{"title", name},
                     {"type", "object"},
                     {"properties", std::move(properties)},
                     // An `open` record's reader ignores keys it does not know.
                     {"additionalProperties", record.open}};
    if (!record.doc.empty()) def["description"] = OneLine(record.doc);
    if (!required.empty()) def["required"] = std::move(required);
    defs_[name] = std::move(def);
  }

  json::Object TakeDefs() { return std::move(defs_); }

 private:
  void AddEnum(const std::string& name) {
    if (!added_.insert(name).second) return;
    const sema::EnumSchema& e = schema_.enums.find(name)->second;
    json::Array values;
    json::Array descriptions;
    std::set<bool> bools;
    for (const sema::EnumSchema::Member& member : e.members) {
      values.push_back(member.value);
      descriptions.push_back(OneLine(member.doc));
      // An unquoted `NO` reaches the checker as a YAML 1.1 bool, which it takes as the member
      // `NO` with warning A2016; the schema accepts the same files.
      std::optional<bool> value = scalars::Yaml11Bool(member.name);
      if (!value) value = scalars::Yaml11Bool(member.value);
      if (value) bools.insert(*value);
    }
    for (bool b : bools) {
      values.push_back(b);
      descriptions.push_back(
          fmt::format("An unquoted member name that YAML 1.1 reads as {} (warning A2016); quote it.",
                      b ? "true" : "false"));
    }
    json::Object def{
        {"title", name}, {"enum", std::move(values)}, {"enumDescriptions", std::move(descriptions)}};
    if (!e.doc.empty()) def["description"] = OneLine(e.doc);
    defs_[name] = std::move(def);
  }

  // What a config file may write for a value of `type`, as the checker converts it.
  json::Object Type(const sema::Type& type) {
    switch (type.kind) {
      case Kind::Bool:
        return AnyOf({json::Object{{"type", "boolean"}},
                      json::Object{{"type", "string"}, {"pattern", BoolWordPattern()}}});
      case Kind::Int:
      case Kind::Bytes:  // a byte size is a plain number of bytes in a config file
        return json::Object{{"type", "integer"}};
      case Kind::Float:
        return json::Object{{"type", "number"}};
      case Kind::String:
      case Kind::Path:
      case Kind::Host:
        return json::Object{{"type", "string"}};
      case Kind::Duration:
        // YAML and JSON have no duration literal (`30s`): no config-file value fits.
        return json::Object{{"not", json::Object{}}};
      case Kind::Enum:
        AddEnum(type.name);
        return Ref(type.name);
      case Kind::Record:
        AddRecord(type.name);
        return Ref(type.name);
      case Kind::List:
        return json::Object{{"type", "array"}, {"items", Type(type.args[0])}};
      case Kind::Map:
        return json::Object{{"type", "object"}, {"additionalProperties", Type(type.args[1])}};
      case Kind::Optional:
        return AnyOf({Type(type.args[0]), json::Object{{"type", "null"}}});
      case Kind::Union: {
        std::vector<json::Object> alternatives;
        for (const sema::Type& alternative : type.args) alternatives.push_back(Type(alternative));
        return AnyOf(std::move(alternatives));
      }
    }
    return json::Object{};
  }

  json::Object Field(const sema::FieldSchema& field) {
    json::Object out = Type(field.type);
    std::string description = OneLine(field.doc);
    if (field.deprecated) {
      description += fmt::format(" Deprecated: {}.", *field.deprecated);
      out["deprecated"] = true;
    }
    if (field.constraint) {
      description += fmt::format(" Must satisfy `{}`.", sema::ExprText(*field.constraint));
      if (llvm::Optional<json::Object> keywords = Constraint(*field.constraint, field.name)) {
        if (OnlyNumericKeywords(*keywords)) {
          for (auto& [key, value] : *keywords) out[key] = std::move(value);
        } else {
          // The checker skips a constraint on an unset optional, so `null` passes it.
          json::Object applied = field.type.kind == Kind::Optional
                                     ? AnyOf({json::Object{{"type", "null"}}, std::move(*keywords)})
                                     : std::move(*keywords);
          out["allOf"] = json::Array{std::move(applied)};
        }
      }
    }
    if (!field.env_vars.empty()) {
      std::string vars;
      for (const std::string& var : field.env_vars) vars += (vars.empty() ? "" : ", ") + var;
      description += fmt::format(" Default from the environment: {}.", vars);
    }
    if (!description.empty() && description[0] == ' ') description.erase(0, 1);
    if (!description.empty()) out["description"] = description;
    if (field.default_value) {
      if (llvm::Optional<json::Value> value = Literal(*field.default_value, field.type))
        out["default"] = std::move(*value);
    }
    return out;
  }

  // The enum member `name` of an enum that `type` admits, by its serialized value.
  llvm::Optional<json::Value> Member(const std::string& name, const sema::Type& type) const {
    if (type.kind == Kind::Enum) {
      if (const sema::EnumSchema::Member* m = schema_.enums.find(type.name)->second.Find(name)) {
        return json::Value(m->value);
      }
    }
    for (const sema::Type& arg : type.args) {
      if (llvm::Optional<json::Value> value = Member(name, arg)) return value;
    }
    return llvm::None;
  }

  // A default written as a literal, as a config file would write it; none for anything else
  // (a record value, a duration).
  llvm::Optional<json::Value> Literal(const ast::Expr& e, const sema::Type& type) const {
    switch (e.kind) {
      case ast::ExprKind::Bool:
        return json::Value(e.bool_value);
      case ast::ExprKind::String:
        return json::Value(e.text);
      case ast::ExprKind::None:
        return json::Value(nullptr);
      case ast::ExprKind::Bytes:
        return json::Value(e.int_value);
      case ast::ExprKind::Path:
        if (e.path.size() == 1) return Member(e.path[0].text, type);
        return llvm::None;
      case ast::ExprKind::List: {
        json::Array items;
        for (const ast::ExprPtr& item : e.operands) {
          llvm::Optional<json::Value> value = Literal(*item, type.kind == Kind::List ? type.args[0] : type);
          if (!value) return llvm::None;
          items.push_back(std::move(*value));
        }
        return json::Value(std::move(items));
      }
      case ast::ExprKind::Map: {
        json::Object entries;
        for (size_t i = 0; i < e.operands.size(); ++i) {
          llvm::Optional<json::Value> value =
              Literal(*e.operands[i], type.kind == Kind::Map ? type.args[1] : type);
          if (!value) return llvm::None;
          entries[e.path[i].text] = std::move(*value);
        }
        return json::Value(std::move(entries));
      }
      default:
        return Number(e);
    }
  }

  const sema::Schema& schema_;
  json::Object defs_;
  std::set<std::string> added_;
};

// llvm::json prints a double with 17 significant digits (0.8 as 0.80000000000000004); print
// each non-integral number outside strings in its shortest form that reads back the same.
std::string ShortestNumbers(const std::string& text) {
  std::string out;
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (in_string) {
      out += c;
      if (c == '\\' && i + 1 < text.size()) {
        out += text[++i];
      } else if (c == '"') {
        in_string = false;
      }
      continue;
    }
    if (c == '"') in_string = true;
    if (c != '-' && !std::isdigit(static_cast<unsigned char>(c))) {
      out += c;
      continue;
    }
    size_t end = text.find_first_not_of("+-0123456789.eE", i);
    if (end == std::string::npos) end = text.size();
    std::string token = text.substr(i, end - i);
    if (token.find_first_of(".eE") != std::string::npos)
      token = fmt::format("{}", std::strtod(token.c_str(), nullptr));
    out += token;
    i = end - 1;
  }
  return out;
}

std::string Print(json::Value root) {
  std::string out;
  llvm::raw_string_ostream stream(out);
  // llvm::json prints object keys sorted, which makes the output deterministic.
  stream << llvm::formatv("{0:2}", root) << "\n";
  stream.flush();
  return ShortestNumbers(out);
}

constexpr const char* kDraft = "https://json-schema.org/draft/2020-12/schema";

}  // namespace

std::string JsonSchema(const sema::Schema& schema) {
  if (schema.records.count("ClusterConfig") == 0) return "";
  Writer writer(schema);
  writer.AddRecord("ClusterConfig");
  json::Object root{{"$schema", kDraft},
                    {"title", "Accelerate config file (default_config.yaml)"},
                    {"description",
                     "Generated by `accelc docs` from Accel's stdlib. `accelc check FILE` also "
                     "checks the cross-field rules this schema cannot express."}};
  // `accelc check` picks the root record by `compute_environment`; so does the schema.
  if (schema.records.count("SageMakerConfig") > 0) {
    writer.AddRecord("SageMakerConfig");
    root["if"] = json::Object{
        {"properties", json::Object{{"compute_environment", json::Object{{"const", "AMAZON_SAGEMAKER"}}}}},
        {"required", json::Array{"compute_environment"}}};
    root["then"] = Ref("SageMakerConfig");
    root["else"] = Ref("ClusterConfig");
  } else {
    root["$ref"] = "#/$defs/ClusterConfig";
  }
  root["$defs"] = writer.TakeDefs();
  return Print(std::move(root));
}

std::string DeepSpeedJsonSchema(const sema::Schema& schema) {
  if (schema.records.count("DeepSpeedConfig") == 0) return "";
  Writer writer(schema);
  writer.AddRecord("DeepSpeedConfig");
  json::Object root{{"$schema", kDraft},
                    {"title", "DeepSpeed config file (deepspeed_config_file)"},
                    {"description",
                     "Generated by `accelc docs` from Accel's stdlib. `accelc check FILE` also "
                     "checks the cross-field rules this schema cannot express."},
                    {"$ref", "#/$defs/DeepSpeedConfig"},
                    {"$defs", writer.TakeDefs()}};
  return Print(std::move(root));
}

}  // namespace accel::docs
