#ifndef ACCEL_COMPILER_SEMA_EVALUATE_H_
#define ACCEL_COMPILER_SEMA_EVALUATE_H_

#include <optional>
#include <string>

#include "compiler/ast/ast.h"
#include "compiler/sema/value.h"

namespace accel::sema {

// Evaluates a schema expression (a `where` constraint or a rule condition) with the fields of
// the record `scope` in scope. Field paths may go into nested records (`model.inputs`); a name
// that is not a field reads as an enum member symbol (`distributed_type == NO`). Comparisons
// chain (`0 <= x <= 3`). Returns empty and sets `error` when the expression is ill-typed.
std::optional<Value> Evaluate(const ast::Expr& expr, const Value& scope, std::string* error);

// True for the functions schema expressions may call: len(x), contains(s, t), starts_with(s, t),
// ends_with(s, t), split(s, sep), lower(s), upper(s). Each treats an unset optional as empty.
bool IsBuiltinFunction(const std::string& name);

// The text of `expr` as a user would write it, for messages (`bucket_cap_mb > 0`).
std::string ExprText(const ast::Expr& expr);

}  // namespace accel::sema

#endif  // ACCEL_COMPILER_SEMA_EVALUATE_H_
