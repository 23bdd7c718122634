#include "compiler/sema/field_defaults.h"

#include <cstdlib>

#include "compiler/scalars/bool_words.h"
#include "compiler/scalars/host_names.h"

namespace accel::sema {
namespace {

// Marks the values that a schema default expression produced as defaults; values that an
// environment variable supplied inside that default keep saying so.
void MarkDefault(Value& value, const Provenance& provenance) {
  if (value.provenance.kind == Provenance::Kind::Spec) value.provenance = provenance;
  for (Value& item : value.items) MarkDefault(item, provenance);
}

}  // namespace

std::optional<Value> FieldDefaults::For(const FieldSchema& field, const RecordSchema& record,
                                        const source::SourceFile* file, source::Span span,
                                        const std::string& path, bool recovered) {
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
    std::optional<Value> value = converter_.Convert(*field.default_value, field.type, field.file, path);
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

// The value of `type` an environment variable's `text` stands for, as Accelerate reads it, or
// null.
std::optional<Value> FieldDefaults::FromEnvironment(const Type& type, const std::string& text) const {
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

}  // namespace accel::sema
