#include "compiler/plan/plan.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/SHA256.h"

namespace accel::plan {

std::string_view OpName(const Step& step) {
  struct Visitor {
    std::string_view operator()(const InitProcessGroup&) const { return "init_process_group"; }
    std::string_view operator()(const Seed&) const { return "seed"; }
    std::string_view operator()(const BuildModel&) const { return "build_model"; }
    std::string_view operator()(const BuildDataloader&) const { return "build_dataloader"; }
    std::string_view operator()(const TrainLoop&) const { return "train"; }
    std::string_view operator()(const SaveModel&) const { return "save_model"; }
    std::string_view operator()(const Checkpoint&) const { return "checkpoint"; }
  };
  return std::visit(Visitor{}, step);
}

std::string ComputeHash(const Plan& plan) {
  Plan unhashed = plan;
  unhashed.hash.clear();
  std::string text = ToJson(unhashed);
  llvm::SHA256 sha;
  sha.update(llvm::StringRef(text));
  return "sha256:" + llvm::toHex(sha.final(), /*LowerCase=*/true);
}

}  // namespace accel::plan
