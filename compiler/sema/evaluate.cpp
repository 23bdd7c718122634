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
      case ast::ExprKind::Call:
        return Call(e);
      case ast::ExprKind::Record:
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

  // The builtin functions of schema expressions (IsBuiltinFunction lists them).
  std::optional<Value> Call(const ast::Expr& e) {
    std::vector<Value> args;
    for (const ast::ExprPtr& operand : e.operands) {
      std::optional<Value> arg = Eval(*operand);
      if (!arg) return std::nullopt;
      args.push_back(std::move(*arg));
    }
    const std::string& name = e.text;
    auto arity = [&](size_t n) { return args.size() == n; };
    auto is_text = [](const Value& v) {
      return v.kind == Value::Kind::String || v.kind == Value::Kind::Enum;
    };
    auto text_of = [](const Value& v) { return v.kind == Value::Kind::Enum ? v.enum_value : v.text; };
    if (name == "len" && arity(1)) {
      // An unset optional has no items.
      Value n;
      n.kind = Value::Kind::Int;
      if (args[0].kind == Value::Kind::String) {
        n.int_value = static_cast<int64_t>(args[0].text.size());
      } else if (args[0].kind == Value::Kind::List || args[0].kind == Value::Kind::Map) {
        n.int_value = static_cast<int64_t>(args[0].items.size());
      } else if (args[0].kind != Value::Kind::None) {
        return Fail("`len` needs a string, a list or a map");
      }
      return n;
    }
    if ((name == "contains" || name == "starts_with" || name == "ends_with") && arity(2)) {
      if (args[0].kind == Value::Kind::None) return MakeBool(false);
      if (!is_text(args[0]) || !is_text(args[1])) return Fail(fmt::format("`{}` needs two strings", name));
      std::string haystack = text_of(args[0]), needle = text_of(args[1]);
      if (name == "contains") return MakeBool(haystack.find(needle) != std::string::npos);
      if (name == "starts_with") return MakeBool(haystack.rfind(needle, 0) == 0);
      return MakeBool(haystack.size() >= needle.size() &&
                      haystack.compare(haystack.size() - needle.size(), needle.size(), needle) == 0);
    }
    if (name == "split" && arity(2)) {
      // `split("0,1", ",")` is ["0", "1"]; an empty or unset string has no parts.
      Value list;
      list.kind = Value::Kind::List;
      if (args[0].kind == Value::Kind::None) return list;
      if (!is_text(args[0]) || !is_text(args[1]) || text_of(args[1]).empty()) {
        return Fail("`split` needs a string and a non-empty separator");
      }
      std::string text = text_of(args[0]), separator = text_of(args[1]);
      if (text.empty()) return list;
      for (size_t start = 0;;) {
        size_t at = text.find(separator, start);
        Value part;
        part.kind = Value::Kind::String;
        part.text = text.substr(start, at == std::string::npos ? std::string::npos : at - start);
        list.items.push_back(std::move(part));
        if (at == std::string::npos) break;
        start = at + separator.size();
      }
      return list;
    }
    if ((name == "lower" || name == "upper") && arity(1)) {
      if (args[0].kind == Value::Kind::None) return args[0];
      if (!is_text(args[0])) return Fail(fmt::format("`{}` needs a string", name));
      Value out;
      out.kind = Value::Kind::String;
      out.text = text_of(args[0]);
      for (char& c : out.text) {
        c = static_cast<char>(name == "lower" ? std::tolower(static_cast<unsigned char>(c))
                                              : std::toupper(static_cast<unsigned char>(c)));
      }
      return out;
    }
    return Fail(fmt::format("unknown function `{}` with {} argument{}", name, args.size(),
                            args.size() == 1 ? "" : "s"));
  }

  std::optional<Value> Lookup(const ast::Expr& e) {
    const Value* current = &scope_;
    for (size_t i = 0; i < e.path.size(); ++i) {
      // Reading through an unset optional record gives none: `deepspeed_config.zero_stage == 3`
      // is simply false when there is no `deepspeed_config`.
      if (i > 0 && current->kind == Value::Kind::None) return Value{};
      const Value* next = current->kind == Value::Kind::Record ? current->Field(e.path[i].text) : nullptr;
      if (next == nullptr) {
        // A bare name that is not a field is an enum member symbol, compared by name.
        if (e.path.size() == 1) {
          Value symbol;
          symbol.kind = Value::Kind::Enum;
          symbol.text = e.path[0].text;
          return symbol;
        }
        // The schema checked the path against every member of a union-typed field: a member
        // without the field reads as none (`data.samples` when `data` is a CsvDataset).
        if (current->kind == Value::Kind::Record && i > 0) return Value{};
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
      // `x in [a, b, c]`: equal to one of the listed values; `x in some_list_field` too.
      const ast::Expr& list = *e.operands[1];
      std::optional<Value> lhs = Eval(*e.operands[0]);
      if (!lhs) return std::nullopt;
      std::vector<Value> candidates;
      if (list.kind == ast::ExprKind::List) {
        candidates.reserve(list.operands.size());
        for (const ast::ExprPtr& item : list.operands) {
          std::optional<Value> candidate = Eval(*item);
          if (!candidate) return std::nullopt;
          candidates.push_back(std::move(*candidate));
        }
      } else {
        std::optional<Value> value = Eval(list);
        if (!value) return std::nullopt;
        if (value->kind != Value::Kind::List && value->kind != Value::Kind::None) {
          return Fail("`in` needs a list on its right");
        }
        candidates = value->items;
      }
      for (const Value& candidate : candidates) {
        std::optional<Value> equal = Compare("==", *lhs, candidate);
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
      // An unset value equals only none and is neither less nor greater than anything.
      if (op == "==") return MakeBool(a.kind == b.kind);
      if (op == "!=") return MakeBool(a.kind != b.kind);
      return MakeBool(false);
    } else if (a.kind == Value::Kind::Enum && b.kind == Value::Kind::String) {
      return Compare(op, b, a);
    } else if (a.kind == Value::Kind::String && b.kind == Value::Kind::Enum) {
      // A string field compared with a bare word: `backend == nccl` where backend is a string.
      order = a.text == b.text || (!b.enum_value.empty() && a.text == b.enum_value) ? 0 : 1;
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
    } else if (op == "==" || op == "!=") {
      // A union field holds values of several kinds (`reshard_after_forward: bool |
      // FSDPShardingStrategy`): a value of another kind is simply not equal.
      return MakeBool(op == "!=");
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

bool IsBuiltinFunction(const std::string& name) {
  for (const char* builtin : {"len", "contains", "starts_with", "ends_with", "split", "lower", "upper"}) {
    if (name == builtin) return true;
  }
  return false;
}

std::optional<Value> Evaluate(const ast::Expr& expr, const Value& scope, std::string* error) {
  return Evaluator(scope, error).Eval(expr);
}

namespace {

// Binding strength, loosest first, as the grammar orders the operators.
int Precedence(const ast::Expr& e) {
  if (e.kind == ast::ExprKind::IsSet) return 4;
  if (e.kind == ast::ExprKind::Unary) return 9;
  if (e.kind != ast::ExprKind::Binary) return 10;
  const std::string& op = e.text;
  if (op == "implies") return 1;
  if (op == "or") return 2;
  if (op == "and") return 3;
  if (op == "in") return 5;
  if (op == "+" || op == "-") return 7;
  if (op == "*" || op == "/" || op == "%") return 8;
  return 6;  // comparisons
}

// `operand` as written inside `parent`: parenthesized where the tree binds tighter than the
// text would (`(a or b) and c`, `not (a == b)`).
std::string OperandText(const ast::Expr& operand, const ast::Expr& parent, bool right) {
  std::string text = ExprText(operand);
  int inner = Precedence(operand), outer = Precedence(parent);
  bool chained_comparison = outer == 6 && inner == 6 && !right;
  bool needs = inner < outer ||
               (inner == outer && right && parent.text != "implies" && !chained_comparison) ||
               (parent.kind == ast::ExprKind::Unary && inner < 9);
  return needs ? "(" + text + ")" : text;
}

}  // namespace

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
    case ast::ExprKind::Call: {
      std::string out = e.text + "(";
      for (size_t i = 0; i < e.operands.size(); ++i) out += (i ? ", " : "") + ExprText(*e.operands[i]);
      return out + ")";
    }
    case ast::ExprKind::Path:
    case ast::ExprKind::Record: {
      std::string out;
      for (const ast::Name& name : e.path) out += (out.empty() ? "" : ".") + name.text;
      if (e.kind == ast::ExprKind::Record) out += " {...}";
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
      return OperandText(*e.operands[0], e, false) + (e.bool_value ? " is not set" : " is set");
    case ast::ExprKind::Unary:
      return (e.text == "not" ? "not " : "-") + OperandText(*e.operands[0], e, false);
    case ast::ExprKind::Binary:
      return OperandText(*e.operands[0], e, false) + " " + e.text + " " +
             OperandText(*e.operands[1], e, true);
  }
  return "";
}

}  // namespace accel::sema
