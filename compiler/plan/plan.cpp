#include "compiler/plan/plan.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/SHA256.h"

namespace accel::plan {

std::string ComputeHash(const Plan& plan) {
  Plan unhashed = plan;
  unhashed.hash.clear();
  std::string text = ToJson(unhashed);
  llvm::SHA256 sha;
  sha.update(llvm::StringRef(text));
  return "sha256:" + llvm::toHex(sha.final(), /*LowerCase=*/true);
}

}  // namespace accel::plan
