// libFuzzer target for the plan reader (compiler/plan/plan.h): what every worker reads first,
// from a file anyone who can write the run directory may edit. Any bytes must give a plan or an
// error, never a crash or a read outside the input (ASan and UBSan are on in build-fuzz). A plan
// it accepts is written back and read again to the same JSON.
#include <cstddef>
#include <cstdint>
#include <string>

#include "compiler/plan/plan.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view input(reinterpret_cast<const char*>(data), size);
  llvm::Expected<accel::plan::Plan> plan = accel::plan::FromJson(input, "fuzz.plan.json");
  if (!plan) {
    llvm::consumeError(plan.takeError());
    return 0;
  }
  std::string json = accel::plan::ToJson(*plan);
  llvm::Expected<accel::plan::Plan> again = accel::plan::FromJson(json, "fuzz-rewritten.plan.json");
  if (!again) __builtin_trap();  // the reader refused what the writer wrote
  if (accel::plan::ToJson(*again) != json) __builtin_trap();
  return 0;
}
