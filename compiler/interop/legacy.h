#ifndef ACCEL_COMPILER_INTEROP_LEGACY_H_
#define ACCEL_COMPILER_INTEROP_LEGACY_H_

#include <string>
#include <vector>

#include "compiler/sema/schema.h"
#include "compiler/sema/value.h"

namespace accel::interop {

// Accelerate's load-time upgrade of old config files (catalog §4.1), applied to a checked
// `ClusterConfig`: legacy `fp16: true` becomes `mixed_precision = fp16` unless the file sets
// `mixed_precision` (CFG-004), and `fp16` goes (CFG-005); a top-level `dynamo_backend: X`
// replaces `dynamo_config` with a section holding `backend = X`, empty for `NO` (CFG-006).
// Moved values keep their provenance; a rewritten section holds only what was moved (its other
// fields are unset placeholders, so the result is for writing, not for checking). Appends a
// line per rewritten key to `upgraded`.
sema::Value UpgradeLegacyKeys(sema::Value cluster_config, const sema::Schema& schema,
                              std::vector<std::string>& upgraded);

}  // namespace accel::interop

#endif  // ACCEL_COMPILER_INTEROP_LEGACY_H_
