#include "compiler/sema/lax_values.h"

#include <cctype>
#include <cmath>
#include <cstdlib>
#include <string>

namespace accel::sema {
namespace {

// The text of a number as Python's int() and float() read it, which pydantic uses: spaces
// around it, a sign, and `_` between two digits; an exponent only for a float. Hex, `inf` and
// `nan` are refused (pydantic refuses the first, DeepSpeed's validators the others).
std::optional<double> NumberText(const std::string& text, bool integer) {
  size_t begin = text.find_first_not_of(" \t\n");
  size_t end = text.find_last_not_of(" \t\n");
  if (begin == std::string::npos) return std::nullopt;
  std::string digits;
  for (size_t i = begin; i <= end; ++i) {
    char c = text[i];
    if (c == '_') {
      bool between = i > begin && i < end && std::isdigit(static_cast<unsigned char>(text[i - 1])) &&
                     std::isdigit(static_cast<unsigned char>(text[i + 1]));
      if (!between) return std::nullopt;
      continue;
    }
    bool allowed = std::isdigit(static_cast<unsigned char>(c)) || c == '+' || c == '-' || c == '.' ||
                   (!integer && (c == 'e' || c == 'E'));
    if (!allowed) return std::nullopt;
    digits += c;
  }
  char* stop = nullptr;
  double x = std::strtod(digits.c_str(), &stop);
  if (digits.empty() || *stop != '\0' || !std::isfinite(x)) return std::nullopt;
  // pydantic takes "3.0" for an int (no fraction), not "3.5"; and the int must fit int64.
  if (integer && (std::trunc(x) != x || std::abs(x) >= 9.2e18)) return std::nullopt;
  return x;
}

}  // namespace

std::optional<Value> LaxValue(const ast::Expr& expr, const Type& type, bool bool_as_number) {
  Value value;
  switch (type.kind) {
    case Type::Kind::Optional:
    case Type::Kind::Union:
      for (const Type& alternative : type.args) {
        if (std::optional<Value> lax = LaxValue(expr, alternative, bool_as_number)) return lax;
      }
      return std::nullopt;
    case Type::Kind::Int:
    case Type::Kind::Float: {
      bool integer = type.kind == Type::Kind::Int;
      if (expr.kind == ast::ExprKind::Bool && bool_as_number) {
        value.kind = integer ? Value::Kind::Int : Value::Kind::Float;
        value.int_value = integer && expr.bool_value ? 1 : 0;
        value.float_value = !integer && expr.bool_value ? 1.0 : 0.0;
        return value;
      }
      if (expr.kind != ast::ExprKind::String) return std::nullopt;
      std::optional<double> x = NumberText(expr.text, integer);
      if (!x) return std::nullopt;
      value.kind = integer ? Value::Kind::Int : Value::Kind::Float;
      value.int_value = integer ? static_cast<int64_t>(*x) : 0;
      value.float_value = integer ? 0.0 : *x;
      return value;
    }
    case Type::Kind::Bool:
      if (expr.kind != ast::ExprKind::Int || (expr.int_value != 0 && expr.int_value != 1))
        return std::nullopt;
      value.kind = Value::Kind::Bool;
      value.bool_value = expr.int_value == 1;
      return value;
    default:
      return std::nullopt;
  }
}

bool RefusesBoolForNumber(std::string_view record, std::string_view field) {
  return record == "DeepSpeedFp16Config" &&
         (field == "loss_scale" || field == "loss_scale_window" || field == "min_loss_scale");
}

}  // namespace accel::sema
