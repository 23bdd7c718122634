#ifndef ACCEL_RUNTIME_TOOLS_ACCELERATE_STATE_FILES_H_
#define ACCEL_RUNTIME_TOOLS_ACCELERATE_STATE_FILES_H_

#include <string>

#include <fmt/format.h>

#include "compiler/plan/plan.h"
#include "llvm/Support/JSON.h"
#include "runtime/checkpoint/checkpoint_dir.h"
#include "runtime/support/error.h"

// What the export and the import of Accelerate's state folder share.
namespace accel::tools {

using rt::Fail;

// JSON file `name` of a verified checkpoint, as an object.
inline llvm::Expected<llvm::json::Object> ReadStateJson(const rt::checkpoint::VerifiedCheckpoint& checkpoint,
                                                        const std::string& name) {
  auto found = checkpoint.files.find(name);
  if (found == checkpoint.files.end()) return Fail(fmt::format("{}: the checkpoint has no `{}`", checkpoint.path, name));
  std::string_view text = found->second->view();
  if (plan::JsonNestsDeeperThan(text, plan::kMaxJsonDepth))
    return Fail(fmt::format("{}/{}: nested deeper than {} levels", checkpoint.path, name, plan::kMaxJsonDepth));
  llvm::Expected<llvm::json::Value> value = llvm::json::parse(llvm::StringRef(text.data(), text.size()));
  if (!value) return Fail(fmt::format("{}/{}: {}", checkpoint.path, name, llvm::toString(value.takeError())));
  if (llvm::json::Object* object = value->getAsObject()) return std::move(*object);
  return Fail(fmt::format("{}/{}: expected a JSON object", checkpoint.path, name));
}

}  // namespace accel::tools

#endif  // ACCEL_RUNTIME_TOOLS_ACCELERATE_STATE_FILES_H_
