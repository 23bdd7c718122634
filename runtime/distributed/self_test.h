#ifndef ACCEL_RUNTIME_DISTRIBUTED_SELF_TEST_H_
#define ACCEL_RUNTIME_DISTRIBUTED_SELF_TEST_H_

#include <string>
#include <vector>

#include "runtime/distributed/collectives.h"

// `accelrun test`, the native `accelerate test`: before a long job, every data operation of
// catalog §5–6 runs once over the job's real process group, and every rank checks its result
// against what the operation must return for that rank and world size.
namespace accel::rt::distributed {

struct SelfTestCheck {
  std::string name;    // the operation, as Accelerate names it
  std::string detail;  // what was checked, in a few words
};

// Collective: every rank runs the same checks in the same order. After each check the ranks
// exchange their verdicts, so a check that fails anywhere throws OperationError on every rank,
// naming the check and each failing rank's reason, before the next check starts. Returns the
// checks, all passed. A collective that fails or times out throws CollectiveError as usual.
// Reseeds torch's CPU generator.
std::vector<SelfTestCheck> RunSelfTest(Collectives& collectives);

}  // namespace accel::rt::distributed

#endif  // ACCEL_RUNTIME_DISTRIBUTED_SELF_TEST_H_
