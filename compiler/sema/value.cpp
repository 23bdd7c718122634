#include "compiler/sema/value.h"

#include <fmt/format.h>

#include "compiler/sema/types.h"

namespace accel::sema {

std::string Type::Describe() const {
  switch (kind) {
    case Kind::Bool:
      return "bool";
    case Kind::Int:
      return "int";
    case Kind::Float:
      return "float";
    case Kind::String:
      return "string";
    case Kind::Path:
      return "path";
    case Kind::Host:
      return "host";
    case Kind::Duration:
      return "duration";
    case Kind::Bytes:
      return "bytes";
    case Kind::Enum:
    case Kind::Record:
      return name;
    case Kind::List:
      return "list<" + args[0].Describe() + ">";
    case Kind::Map:
      return "map<" + args[0].Describe() + ", " + args[1].Describe() + ">";
    case Kind::Optional:
      return args[0].kind == Kind::Union ? "(" + args[0].Describe() + ")?" : args[0].Describe() + "?";
    case Kind::Union: {
      std::string out;
      for (const Type& alternative : args) {
        if (!out.empty()) out += " | ";
        out += alternative.Describe();
      }
      return out;
    }
  }
  return "?";
}

std::string Provenance::Describe() const {
  switch (kind) {
    case Kind::Spec: {
      if (file == nullptr) return "spec";
      source::LineColumn at = file->Locate(span.begin);
      return fmt::format("{}:{}:{}", file->name(), at.line, at.column);
    }
    case Kind::SchemaDefault:
      return "default";
    case Kind::Environment:
      return "env " + env_var;
  }
  return "default";
}

const Value* Value::Field(std::string_view name) const {
  for (size_t i = 0; i < keys.size(); ++i) {
    if (keys[i] == name) return &items[i];
  }
  return nullptr;
}

namespace {

std::string DescribeDuration(int64_t ms) {
  if (ms % (3600 * 1000) == 0 && ms != 0) return fmt::format("{}h", ms / (3600 * 1000));
  if (ms % (60 * 1000) == 0 && ms != 0) return fmt::format("{}m", ms / (60 * 1000));
  if (ms % 1000 == 0) return fmt::format("{}s", ms / 1000);
  return fmt::format("{}ms", ms);
}

}  // namespace

std::string Value::Describe() const {
  switch (kind) {
    case Kind::None:
      return "none";
    case Kind::Bool:
      return bool_value ? "true" : "false";
    case Kind::Int:
      return fmt::format("{}", int_value);
    case Kind::Float:
      return fmt::format("{}", float_value);
    case Kind::String:
      return fmt::format("\"{}\"", text);
    case Kind::Duration:
      return DescribeDuration(int_value);
    case Kind::Bytes:
      return fmt::format("{}B", int_value);
    case Kind::Enum:
      return text;
    case Kind::Record:
      return type_name + " {...}";
    case Kind::Map:
      return "{...}";
    case Kind::List: {
      std::string out = "[";
      for (size_t i = 0; i < items.size(); ++i) {
        if (i) out += ", ";
        out += items[i].Describe();
      }
      return out + "]";
    }
  }
  return "?";
}

}  // namespace accel::sema
