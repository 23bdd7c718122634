#ifndef ACCEL_COMPILER_SEMA_LAX_VALUES_H_
#define ACCEL_COMPILER_SEMA_LAX_VALUES_H_

#include <optional>

#include "compiler/ast/ast.h"
#include "compiler/sema/types.h"
#include "compiler/sema/value.h"

namespace accel::sema {

// What pydantic's lax mode makes of a JSON value of another type than a field's, as DeepSpeed's
// config models read it (DeepSpeedConfigModel, runtime/config_utils.py): the text of a number
// for an int or a float, and 0 or 1 for a bool. (Text such as "yes" for a bool is read by the
// checker for every config file already.) Null when pydantic refuses the value, and for a bool
// where a number is wanted: plain pydantic reads true as 1, but the fp16 model's own
// validators refuse a bool for its loss-scaling numbers (runtime/precision_config.py), so a
// bool there stays a type error everywhere. `type` may be optional or a union: the first
// alternative that takes the value wins.
std::optional<Value> LaxValue(const ast::Expr& expr, const Type& type);

}  // namespace accel::sema

#endif  // ACCEL_COMPILER_SEMA_LAX_VALUES_H_
