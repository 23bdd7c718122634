#include "compiler/snapshot/views_writer.h"

#include <array>
#include <cctype>
#include <set>

#include <fmt/format.h>

namespace accel::snapshot {
namespace {

using sema::Type;

// C++20's keywords: a stdlib name equal to one gets a trailing `_`.
constexpr std::string_view kKeywords[] = {
    "alignas",   "alignof",      "and",           "and_eq",       "asm",          "auto",     "bitand",
    "bitor",     "bool",         "break",         "case",         "catch",        "char",     "char8_t",
    "char16_t",  "char32_t",     "class",         "compl",        "concept",      "const",    "consteval",
    "constexpr", "constinit",    "const_cast",    "continue",     "co_await",     "co_return", "co_yield",
    "decltype",  "default",      "delete",        "do",           "double",       "dynamic_cast", "else",
    "enum",      "explicit",     "export",        "extern",       "false",        "float",    "for",
    "friend",    "goto",         "if",            "inline",       "int",          "long",     "mutable",
    "namespace", "new",          "noexcept",      "not",          "not_eq",       "nullptr",  "operator",
    "or",        "or_eq",        "private",       "protected",    "public",       "register", "reinterpret_cast",
    "requires",  "return",       "short",         "signed",       "sizeof",       "static",   "static_assert",
    "static_cast", "struct",     "switch",        "template",     "this",         "thread_local", "throw",
    "true",      "try",          "typedef",       "typeid",       "typename",     "union",    "unsigned"};

bool IsIdentifier(std::string_view name) {
  if (name.empty() || std::isdigit(static_cast<unsigned char>(name[0]))) return false;
  for (char c : name)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') return false;
  return true;
}

// A stdlib name as a C++ identifier: a keyword (the `auto` member of Auto) gets a trailing `_`.
std::string Identifier(std::string_view name) {
  for (std::string_view keyword : kKeywords)
    if (keyword == name) return std::string(name) + "_";
  return std::string(name);
}

// How a field of type `type` reads: the accessor's C++ type and the expression over `v`, the
// field's Value. Unset for a type a view leaves as its Value (lists, maps, unions of scalars).
struct Reading {
  std::string type;
  std::string expression;
};

std::optional<Reading> Read(const Type& type) {
  switch (type.kind) {
    case Type::Kind::Bool:
      return Reading{"bool", "v.bool_value"};
    case Type::Kind::Int:
    case Type::Kind::Duration:
    case Type::Kind::Bytes:
      return Reading{"int64_t", "v.int_value"};
    case Type::Kind::Float:
      return Reading{"double", "sema::views::NumberOf(v)"};
    case Type::Kind::String:
    case Type::Kind::Path:
    case Type::Kind::Host:
      return Reading{"const std::string&", "v.text"};
    case Type::Kind::Enum:
      return Reading{type.name, fmt::format("sema::views::EnumOf<{}>(v)", type.name)};
    case Type::Kind::Record:
      return Reading{type.name, fmt::format("{}(v)", type.name)};
    case Type::Kind::Union: {
      std::string alternatives;
      for (const Type& alternative : type.args) {
        if (alternative.kind != Type::Kind::Record) return std::nullopt;
        alternatives += (alternatives.empty() ? "" : ", ") + alternative.name;
      }
      std::string variant = fmt::format("std::variant<{}>", alternatives);
      return Reading{variant, fmt::format("sema::views::VariantOf<{}>(v)", variant)};
    }
    case Type::Kind::Optional: {
      std::optional<Reading> inner = Read(type.args[0]);
      if (!inner) return std::nullopt;
      std::string held = inner->type == "const std::string&" ? "std::string" : inner->type;
      return Reading{fmt::format("std::optional<{}>", held),
                     fmt::format("v.kind == sema::Value::Kind::None ? std::nullopt : std::optional<{}>({})", held,
                                 inner->expression)};
    }
    case Type::Kind::List:
    case Type::Kind::Map:
      return std::nullopt;
  }
  return std::nullopt;
}

}  // namespace

std::optional<std::string> WriteViews(const sema::Schema& schema, std::string& problem) {
  for (const auto& [name, record] : schema.records) {
    std::set<std::string> accessors;
    for (const sema::FieldSchema& field : record.fields) {
      std::string accessor = Identifier(field.name);
      if (!IsIdentifier(field.name) || !accessors.insert(accessor).second ||
          !accessors.insert(accessor + "_value").second || accessor == "value") {
        problem = fmt::format("field `{}.{}` cannot become a view accessor", name, field.name);
        return std::nullopt;
      }
    }
  }
  std::string enums;
  std::string tables;
  for (const auto& [name, schema_enum] : schema.enums) {
    std::string members;
    std::string names;
    std::string values;
    for (const sema::EnumSchema::Member& member : schema_enum.members) {
      if (!IsIdentifier(member.name)) {
        problem = fmt::format("member `{}.{}` cannot become a C++ enumerator", name, member.name);
        return std::nullopt;
      }
      members += fmt::format("  {},\n", Identifier(member.name));
      names += fmt::format("\"{}\", ", member.name);
      values += fmt::format("\"{}\", ", member.value);
    }
    enums += fmt::format("enum class {} {{\n{}}};\n\n", name, members);
    size_t count = schema_enum.members.size();
    tables += fmt::format(
        "template <>\nstruct EnumTable<spec::{0}> {{\n"
        "  static constexpr std::string_view kName = \"{0}\";\n"
        "  static constexpr std::array<std::string_view, {1}> kNames = {{{2}}};\n"
        "  static constexpr std::array<std::string_view, {1}> kValues = {{{3}}};\n}};\n\n",
        name, count, names, values);
  }

  std::string declarations;
  std::string classes;
  std::string definitions;
  for (const auto& [name, record] : schema.records) {
    declarations += fmt::format("class {};\n", name);
    std::string members;
    std::string field_names;
    for (const sema::FieldSchema& field : record.fields) {
      field_names += fmt::format("\"{}\", ", field.name);
      std::string accessor = Identifier(field.name);
      std::optional<Reading> reading = Read(field.type);
      std::string type = reading ? reading->type : "const sema::Value&";
      std::string expression = reading ? reading->expression : "v";
      members += fmt::format("  {} {}() const;\n  const sema::Value& {}_value() const;\n", type, accessor, accessor);
      definitions += fmt::format(
          "inline {0} {1}::{2}() const {{\n  const sema::Value& v = FieldNamed(\"{3}\");\n  return {4};\n}}\n"
          "inline const sema::Value& {1}::{2}_value() const {{ return FieldNamed(\"{3}\"); }}\n",
          type, name, accessor, field.name, expression);
    }
    classes += fmt::format(
        "class {0} : public sema::views::RecordView {{\n public:\n"
        "  static constexpr std::string_view kName = \"{0}\";\n"
        "  // The record's fields by name, for the checks that another table has each of them.\n"
        "  static constexpr std::array<std::string_view, {2}> kFields = {{{3}}};\n"
        "  using RecordView::RecordView;\n{1}}};\n\n",
        name, members, record.fields.size(), field_names);
  }

  return fmt::format(
      "// Generated by accel_stdlib_snapshot (compiler/snapshot/views_writer.cpp) from stdlib/*.accel;\n"
      "// do not edit. The typed views of compiler/sema/spec_view.h, one per stdlib enum and record.\n"
      "#ifndef ACCEL_STDLIB_SPEC_VIEWS_H_\n#define ACCEL_STDLIB_SPEC_VIEWS_H_\n\n"
      "#include <array>\n#include <cstdint>\n#include <optional>\n#include <string>\n#include <string_view>\n"
      "#include <variant>\n\n#include \"compiler/sema/spec_view.h\"\n\n"
      "namespace accel::spec {{\n\n{}}}  // namespace accel::spec\n\n"
      "namespace accel::sema::views {{\n\n{}}}  // namespace accel::sema::views\n\n"
      "namespace accel::spec {{\n\n{}\n{}{}\n}}  // namespace accel::spec\n\n#endif  // ACCEL_STDLIB_SPEC_VIEWS_H_\n",
      enums, tables, declarations, classes, definitions);
}

}  // namespace accel::snapshot
