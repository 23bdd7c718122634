#ifndef ACCEL_COMPILER_SEMA_LAX_VALUES_H_
#define ACCEL_COMPILER_SEMA_LAX_VALUES_H_

#include <optional>
#include <string_view>

#include "compiler/ast/ast.h"
#include "compiler/sema/types.h"
#include "compiler/sema/value.h"

namespace accel::sema {

// What pydantic's lax mode makes of a JSON value of another type than a field's, as DeepSpeed's
// config models read it (DeepSpeedConfigModel, runtime/config_utils.py): the text of a number
// for an int or a float, 0 or 1 for a bool, and, where `bool_as_number`, true and false for 1 and
// 0. (Text such as "yes" for a bool is read by the checker for every config file already.) Null
// when pydantic refuses the value. `type` may be optional or a union: the first alternative that
// takes the value wins.
std::optional<Value> LaxValue(const ast::Expr& expr, const Type& type, bool bool_as_number);

// True for the fields of DeepSpeed's models whose own validators refuse a bool where pydantic
// would read it as a number: the fp16 model's loss-scaling numbers (runtime/precision_config.py,
// `DeepSpeedFP16Config`'s `mode="before"` validators).
bool RefusesBoolForNumber(std::string_view record, std::string_view field);

}  // namespace accel::sema

#endif  // ACCEL_COMPILER_SEMA_LAX_VALUES_H_
