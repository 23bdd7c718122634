#ifndef ACCEL_COMPILER_PLAN_BUILTIN_MODULES_H_
#define ACCEL_COMPILER_PLAN_BUILTIN_MODULES_H_

#include <optional>
#include <string>
#include <vector>

#include "compiler/plan/plan.h"

namespace accel::plan {

// The module classes of a built-in model, as a wrap policy names them
// (`transformer_layer_cls_to_wrap`) and as the runtime's module tree reports them: sorted, the
// root left out. nullopt for a TorchScript model, whose classes only its file knows. The
// runtime's test builds each model and compares (tests/runtime/train_test.cpp).
std::optional<std::vector<std::string>> BuiltInModuleClasses(const Model& model);

}  // namespace accel::plan

#endif  // ACCEL_COMPILER_PLAN_BUILTIN_MODULES_H_
