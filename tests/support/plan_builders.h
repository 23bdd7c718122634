#ifndef ACCEL_TESTS_SUPPORT_PLAN_BUILDERS_H_
#define ACCEL_TESTS_SUPPORT_PLAN_BUILDERS_H_

#include <stdexcept>
#include <string>
#include <vector>

#include "compiler/plan/plan.h"

// Short ways to write plan steps in runtime tests.
namespace accel::testing {

inline plan::BuildModel Mlp(int64_t inputs, std::vector<int64_t> hidden, int64_t outputs) {
  return plan::BuildModel{plan::MLP{inputs, std::move(hidden), outputs}};
}

// `sgd` (momentum 0.9), `adam` or `adamw` (betas 0.9/0.999, eps 1e-8), each at `lr`.
inline plan::Optimizer OptimizerNamed(const std::string& name, double lr, double weight_decay = 0) {
  if (name == "sgd") return plan::SGD{lr, 0.9, weight_decay};
  if (name == "adam") return plan::Adam{lr, 0.9, 0.999, 1e-8, weight_decay};
  if (name == "adamw") return plan::AdamW{lr, 0.9, 0.999, 1e-8, weight_decay};
  throw std::invalid_argument("no optimizer `" + name + "` in the plan");
}

}  // namespace accel::testing

#endif  // ACCEL_TESTS_SUPPORT_PLAN_BUILDERS_H_
