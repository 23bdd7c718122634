#include "compiler/sema/lax_values.h"

#include <cmath>
#include <cstdlib>
#include <string>

#include "compiler/scalars/bool_words.h"

namespace accel::sema {
namespace {

// The text of a number, as pydantic parses it: surrounding spaces allowed, nothing else.
std::optional<double> NumberText(const std::string& text, bool integer) {
  size_t begin = text.find_first_not_of(" \t\n");
  size_t end = text.find_last_not_of(" \t\n");
  if (begin == std::string::npos) return std::nullopt;
  std::string trimmed = text.substr(begin, end - begin + 1);
  char* stop = nullptr;
  if (integer) {
    long long n = std::strtoll(trimmed.c_str(), &stop, 10);
    if (*stop != '\0') return std::nullopt;
    return static_cast<double>(n);
  }
  double x = std::strtod(trimmed.c_str(), &stop);
  if (*stop != '\0' || !std::isfinite(x)) return std::nullopt;
  return x;
}

Value Scalar(Value::Kind kind) {
  Value value;
  value.kind = kind;
  return value;
}

}  // namespace

std::optional<Value> LaxValue(const ast::Expr& expr, const Type& type) {
  switch (type.kind) {
    case Type::Kind::Optional:
    case Type::Kind::Union:
      for (const Type& alternative : type.args) {
        if (std::optional<Value> value = LaxValue(expr, alternative)) return value;
      }
      return std::nullopt;
    case Type::Kind::Int: {
      Value value = Scalar(Value::Kind::Int);
      if (expr.kind == ast::ExprKind::Float && std::trunc(expr.float_value) == expr.float_value &&
                 std::abs(expr.float_value) < 9.0e18) {
        value.int_value = static_cast<int64_t>(expr.float_value);
      } else if (expr.kind == ast::ExprKind::String) {
        std::optional<double> n = NumberText(expr.text, true);
        if (!n) return std::nullopt;
        value.int_value = static_cast<int64_t>(*n);
      } else {
        return std::nullopt;
      }
      return value;
    }
    case Type::Kind::Float: {
      Value value = Scalar(Value::Kind::Float);
      if (expr.kind == ast::ExprKind::String) {
        std::optional<double> x = NumberText(expr.text, false);
        if (!x) return std::nullopt;
        value.float_value = *x;
      } else {
        return std::nullopt;
      }
      return value;
    }
    case Type::Kind::Bool: {
      Value value = Scalar(Value::Kind::Bool);
      if (expr.kind == ast::ExprKind::Int && (expr.int_value == 0 || expr.int_value == 1)) {
        value.bool_value = expr.int_value == 1;
      } else if (expr.kind == ast::ExprKind::Float && (expr.float_value == 0.0 || expr.float_value == 1.0)) {
        value.bool_value = expr.float_value == 1.0;
      } else if (expr.kind == ast::ExprKind::String) {
        std::optional<bool> b = scalars::StrToBool(expr.text);
        if (!b) return std::nullopt;
        value.bool_value = *b;
      } else {
        return std::nullopt;
      }
      return value;
    }
    default:
      return std::nullopt;
  }
}

}  // namespace accel::sema
