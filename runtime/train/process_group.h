#ifndef ACCEL_RUNTIME_TRAIN_PROCESS_GROUP_H_
#define ACCEL_RUNTIME_TRAIN_PROCESS_GROUP_H_

#include <memory>

#include "compiler/plan/plan.h"
#include "runtime/distributed/collectives.h"
#include "runtime/train/worker_context.h"

// Joining the job accelrun started: where this process sits (from the environment the launcher
// sets, docs/launch.md) and the default process group. Shared by the built-in executor and the
// Accelerator of a user's own loop, so both join a job the same way.
namespace accel::rt::train {

// The rank, world size, local rank, rendezvous address and port and launch id accelrun passes
// each worker; one process (rank 0 of 1) where they are unset.
WorkerContext WorkerContextFromEnvironment();

// The default process group of `init`'s backend and timeout, or one process without a backend.
// A spec asking for NCCL on a build without it fails saying so rather than train on something
// else. Throws distributed::CollectiveError when the rendezvous fails or times out.
std::unique_ptr<distributed::Collectives> ConnectGroup(const plan::InitProcessGroup& init,
                                                       const WorkerContext& context);

}  // namespace accel::rt::train

#endif  // ACCEL_RUNTIME_TRAIN_PROCESS_GROUP_H_
