#include "compiler/sema/evaluate.h"

#include <cmath>

#include <fmt/format.h>

namespace accel::sema {
namespace {

bool IsComparison(const std::string& op) {
  return op == "<" || op == "<=" || op == ">" || op == ">=" || op == "==" || op == "!=";
}

bool IsNumeric(const Value& v) {
  return v.kind == Value::Kind::Int || v.kind == Value::Kind::Float || v.kind == Value::Kind::Duration ||
         v.kind == Value::Kind::Bytes;
}

double AsDouble(const Value& v) {
  return v.kind == Value::Kind::Float ? v.float_value : static_cast<double>(v.int_value);
}

Value MakeBool(bool b) {
  Value v;
  v.kind = Value::Kind::Bool;
  v.bool_value = b;
  return v;
}

class Evaluator {
 public:
  Evaluator(const Value& scope, std::string* error) : scope_(scope), error_(error) {}

  std::optional<Value> Eval(const ast::Expr& e) {
    switch (e.kind) {
      case ast::ExprKind::Int:
      case ast::ExprKind::Duration:
      case ast::ExprKind::Bytes: {
        Value v;
        v.kind = e.kind == ast::ExprKind::Int        ? Value::Kind::Int
                 : e.kind == ast::ExprKind::Duration ? Value::Kind::Duration
                                                     : Value::Kind::Bytes;
        v.int_value = e.int_value;
        return v;
      }
      case ast::ExprKind::Float: {
        Value v;
        v.kind = Value::Kind::Float;
        v.float_value = e.float_value;
        return v;
      }
      case ast::ExprKind::String: {
        Value v;
        v.kind = Value::Kind::String;
        v.text = e.text;
        return v;
      }
      case ast::ExprKind::Bool:
        return MakeBool(e.bool_value);
      case ast::ExprKind::None:
        return Value{};
      case ast::ExprKind::Path:
        return Lookup(e);
      case ast::ExprKind::IsSet: {
        // `x is set`: the field holds a value (an optional field left as `none` does not).
        std::optional<Value> operand = Eval(*e.operands[0]);
        if (!operand) return std::nullopt;
        bool set = operand->kind != Value::Kind::None;
        return MakeBool(e.bool_value ? !set : set);
      }
      case ast::ExprKind::Unary:
        return Unary(e);
      case ast::ExprKind::Binary:
        return Binary(e);
      case ast::ExprKind::Record:
      case ast::ExprKind::Call:
      case ast::ExprKind::List:
      case ast::ExprKind::Map:
        break;
    }
    return Fail(fmt::format("`{}` cannot be used in a constraint", ExprText(e)));
  }

 private:
  std::optional<Value> Fail(std::string message) {
    if (error_ && error_->empty()) *error_ = std::move(message);
    return std::nullopt;
  }

  std::optional<Value> Lookup(const ast::Expr& e) {
    const Value* current = &scope_;
    for (size_t i = 0; i < e.path.size(); ++i) {
      const Value* next = current->kind == Value::Kind::Record ? current->Field(e.path[i].text) : nullptr;
      if (next == nullptr) {
        // A bare name that is not a field is an enum member symbol, compared by name.
        if (e.path.size() == 1) {
          Value symbol;
          symbol.kind = Value::Kind::Enum;
          symbol.text = e.path[0].text;
          return symbol;
        }
        return Fail(fmt::format("unknown field `{}`", e.path[i].text));
      }
      current = next;
    }
    return *current;
  }

  std::optional<Value> Unary(const ast::Expr& e) {
    std::optional<Value> operand = Eval(*e.operands[0]);
    if (!operand) return std::nullopt;
    if (e.text == "not") {
      if (operand->kind != Value::Kind::Bool) return Fail("`not` needs a bool");
      return MakeBool(!operand->bool_value);
    }
    if (operand->kind == Value::Kind::Float) {
      operand->float_value = -operand->float_value;
      return operand;
    }
    if (IsNumeric(*operand)) {
      operand->int_value = -operand->int_value;
      return operand;
    }
    return Fail("`-` needs a number");
  }

  std::optional<Value> Binary(const ast::Expr& e) {
    const std::string& op = e.text;
    if (op == "and" || op == "or" || op == "implies") {
      std::optional<Value> lhs = Eval(*e.operands[0]);
      if (!lhs) return std::nullopt;
      if (lhs->kind != Value::Kind::Bool) return Fail(fmt::format("`{}` needs bool operands", op));
      // Short-circuit, so `x != none implies x > 0` never compares none.
      if (op == "and" && !lhs->bool_value) return MakeBool(false);
      if (op == "or" && lhs->bool_value) return MakeBool(true);
      if (op == "implies" && !lhs->bool_value) return MakeBool(true);
      std::optional<Value> rhs = Eval(*e.operands[1]);
      if (!rhs) return std::nullopt;
      if (rhs->kind != Value::Kind::Bool) return Fail(fmt::format("`{}` needs bool operands", op));
      return MakeBool(rhs->bool_value);
    }
    if (op == "in") {
      // `x in [a, b, c]`: equal to one of the listed values.
      const ast::Expr& list = *e.operands[1];
      if (list.kind != ast::ExprKind::List) return Fail("`in` needs a list literal on its right");
      std::optional<Value> lhs = Eval(*e.operands[0]);
      if (!lhs) return std::nullopt;
      for (const ast::ExprPtr& item : list.operands) {
        std::optional<Value> candidate = Eval(*item);
        if (!candidate) return std::nullopt;
        std::optional<Value> equal = Compare("==", *lhs, *candidate);
        if (!equal) return std::nullopt;
        if (equal->bool_value) return MakeBool(true);
      }
      return MakeBool(false);
    }
    if (IsComparison(op)) {
      const ast::Expr& left = *e.operands[0];
      // `a <= b <= c` means `a <= b and b <= c`.
      if (left.kind == ast::ExprKind::Binary && IsComparison(left.text)) {
        std::optional<Value> first = Eval(left);
        if (!first) return std::nullopt;
        if (!first->bool_value) return MakeBool(false);
        std::optional<Value> middle = Eval(*left.operands[1]);
        std::optional<Value> rhs = Eval(*e.operands[1]);
        if (!middle || !rhs) return std::nullopt;
        return Compare(op, *middle, *rhs);
      }
      std::optional<Value> lhs = Eval(left);
      std::optional<Value> rhs = Eval(*e.operands[1]);
      if (!lhs || !rhs) return std::nullopt;
      return Compare(op, *lhs, *rhs);
    }
    std::optional<Value> lhs = Eval(*e.operands[0]);
    std::optional<Value> rhs = Eval(*e.operands[1]);
    if (!lhs || !rhs) return std::nullopt;
    return Arithmetic(op, *lhs, *rhs);
  }

  std::optional<Value> Compare(const std::string& op, const Value& a, const Value& b) {
    int order = 0;
    bool ordered = true;
    if (IsNumeric(a) && IsNumeric(b)) {
      double x = AsDouble(a), y = AsDouble(b);
      order = x < y ? -1 : (x > y ? 1 : 0);
    } else if (a.kind == Value::Kind::None || b.kind == Value::Kind::None) {
      order = a.kind == b.kind ? 0 : 1;
      ordered = false;
    } else if (a.kind == Value::Kind::Enum && b.kind == Value::Kind::Enum) {
      // Symbols carry only a name; members match a symbol by name or serialized value.
      bool same = a.text == b.text || (!a.enum_value.empty() && a.enum_value == b.text) ||
                  (!b.enum_value.empty() && b.enum_value == a.text);
      order = same ? 0 : 1;
      ordered = false;
    } else if (a.kind == b.kind && (a.kind == Value::Kind::String || a.kind == Value::Kind::Bool)) {
      order = a.kind == Value::Kind::Bool ? (a.bool_value == b.bool_value ? 0 : 1) : a.text.compare(b.text);
      ordered = a.kind == Value::Kind::String;
    } else {
      return Fail(fmt::format("cannot compare {} with {}", a.Describe(), b.Describe()));
    }
    if (op == "==") return MakeBool(order == 0);
    if (op == "!=") return MakeBool(order != 0);
    if (!ordered) return Fail(fmt::format("`{}` needs numbers or strings", op));
    if (op == "<") return MakeBool(order < 0);
    if (op == "<=") return MakeBool(order <= 0);
    if (op == ">") return MakeBool(order > 0);
    return MakeBool(order >= 0);
  }

  std::optional<Value> Arithmetic(const std::string& op, const Value& a, const Value& b) {
    if (!IsNumeric(a) || !IsNumeric(b)) return Fail(fmt::format("`{}` needs numbers", op));
    Value result = a;
    if (a.kind == Value::Kind::Float || b.kind == Value::Kind::Float) {
      double x = AsDouble(a), y = AsDouble(b);
      result.kind = Value::Kind::Float;
      if (op == "+") result.float_value = x + y;
      if (op == "-") result.float_value = x - y;
      if (op == "*") result.float_value = x * y;
      if (op == "/") result.float_value = x / y;
      if (op == "%") result.float_value = std::fmod(x, y);
      return result;
    }
    int64_t x = a.int_value, y = b.int_value;
    if ((op == "/" || op == "%") && y == 0) return Fail("division by zero");
    // Overflow must fail, not wrap: a wrapped product could satisfy a rule it breaks.
    bool overflow = false;
    if (op == "+") overflow = __builtin_add_overflow(x, y, &result.int_value);
    if (op == "-") overflow = __builtin_sub_overflow(x, y, &result.int_value);
    if (op == "*") overflow = __builtin_mul_overflow(x, y, &result.int_value);
    if ((op == "/" || op == "%") && x == INT64_MIN && y == -1) overflow = true;
    if (!overflow && op == "/") result.int_value = x / y;
    if (!overflow && op == "%") result.int_value = x % y;
    if (overflow) return Fail(fmt::format("`{} {} {}` overflows 64 bits", x, op, y));
    return result;
  }

  const Value& scope_;
  std::string* error_;
};

}  // namespace

std::optional<Value> Evaluate(const ast::Expr& expr, const Value& scope, std::string* error) {
  return Evaluator(scope, error).Eval(expr);
}

std::string ExprText(const ast::Expr& e) {
  switch (e.kind) {
    case ast::ExprKind::Int:
      return fmt::format("{}", e.int_value);
    case ast::ExprKind::Float:
      return fmt::format("{}", e.float_value);
    case ast::ExprKind::String:
      return fmt::format("\"{}\"", e.text);
    case ast::ExprKind::Bool:
      return e.bool_value ? "true" : "false";
    case ast::ExprKind::None:
      return "none";
    case ast::ExprKind::Duration:
    case ast::ExprKind::Bytes:
      return e.text;
    case ast::ExprKind::Path:
    case ast::ExprKind::Record:
    case ast::ExprKind::Call: {
      std::string out;
      for (const ast::Name& name : e.path) out += (out.empty() ? "" : ".") + name.text;
      if (e.kind == ast::ExprKind::Record) out += " {...}";
      if (e.kind == ast::ExprKind::Call) out += "(...)";
      return out;
    }
    case ast::ExprKind::List: {
      std::string out = "[";
      for (size_t i = 0; i < e.operands.size(); ++i) out += (i ? ", " : "") + ExprText(*e.operands[i]);
      return out + "]";
    }
    case ast::ExprKind::Map:
      return "{...}";
    case ast::ExprKind::IsSet:
      return ExprText(*e.operands[0]) + (e.bool_value ? " is not set" : " is set");
    case ast::ExprKind::Unary:
      return e.text == "not" ? "not " + ExprText(*e.operands[0]) : "-" + ExprText(*e.operands[0]);
    case ast::ExprKind::Binary:
      return ExprText(*e.operands[0]) + " " + e.text + " " + ExprText(*e.operands[1]);
  }
  return "";
}

}  // namespace accel::sema
