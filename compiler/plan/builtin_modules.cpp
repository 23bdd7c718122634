#include "compiler/plan/builtin_modules.h"

namespace accel::plan {
namespace {

struct ModuleClasses {
  std::optional<std::vector<std::string>> operator()(const MLP& mlp) const {
    // torch::nn::Sequential of Linear, with a ReLU after each hidden one.
    if (mlp.hidden.empty()) return std::vector<std::string>{"Linear"};
    return std::vector<std::string>{"Linear", "ReLU"};
  }
  std::optional<std::vector<std::string>> operator()(const Transformer&) const {
    // The value projection and head (Linear), then torch::nn::TransformerEncoder's layers.
    return std::vector<std::string>{"Dropout", "LayerNorm", "Linear", "ModuleList", "MultiheadAttention",
                                    "TransformerEncoder", "TransformerEncoderLayer"};
  }
  std::optional<std::vector<std::string>> operator()(const TorchScript&) const { return std::nullopt; }
};

}  // namespace

std::optional<std::vector<std::string>> BuiltInModuleClasses(const Model& model) {
  return std::visit(ModuleClasses{}, model);
}

}  // namespace accel::plan
