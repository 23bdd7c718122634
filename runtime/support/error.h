#ifndef ACCEL_RUNTIME_SUPPORT_ERROR_H_
#define ACCEL_RUNTIME_SUPPORT_ERROR_H_

#include <string>

#include "llvm/Support/Error.h"

// The runtime's one way of making an error (docs/adr/0003-errors.md): a message that names the
// file, the JSON path or the rank, as an llvm::Error the caller must handle.
namespace accel::rt {

inline llvm::Error Fail(const std::string& message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), "%s", message.c_str());
}

// `where: message`, with `where` the file, directory or field the problem is in.
inline llvm::Error Fail(const std::string& where, const std::string& message) {
  return Fail(where + ": " + message);
}

}  // namespace accel::rt

#endif  // ACCEL_RUNTIME_SUPPORT_ERROR_H_
