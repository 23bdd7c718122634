#ifndef ACCEL_COMPILER_DIAGNOSTICS_EXPLANATIONS_H_
#define ACCEL_COMPILER_DIAGNOSTICS_EXPLANATIONS_H_

#include <map>
#include <string>

namespace accel::diag {

// One explanation per kinds.def code, keyed by code (`A2003`): what triggers the diagnostic,
// then a line starting `Fix:`. Used by `accelc explain-code` and the generated reference
// (compiler/docs/); a unit test keeps it complete. The table lives for the whole program.
const std::map<std::string, std::string, std::less<>>& Explanations();

}  // namespace accel::diag

#endif  // ACCEL_COMPILER_DIAGNOSTICS_EXPLANATIONS_H_
