#ifndef ACCEL_RUNTIME_TRAIN_WORKER_H_
#define ACCEL_RUNTIME_TRAIN_WORKER_H_

#include <string>
#include <vector>

#include "compiler/plan/plan.h"
#include "llvm/Support/Error.h"
#include "runtime/distributed/self_test.h"
#include "runtime/train/worker_context.h"

namespace accel::rt::train {

// Executes `plan` as one rank: rendezvous, seed, build model and data, train with gradient
// averaging, save the weights (rank 0) and `metrics.json` (rank 0), and write this rank's
// parameter digest to `<dir>/ranks/rank-<r>.json`. Collective. Every failure, a peer's
// included, comes back as an error naming this rank; nothing here waits without a timeout.
llvm::Expected<RunSummary> RunWorker(const plan::Plan& plan, const WorkerContext& context);

// `accelrun test`: joins the job's process group as RunWorker does (the plan's backend and
// timeout), then runs the data operations' self-test instead of training. Collective; errors as
// RunWorker's. Returns the checks, all passed on every rank.
llvm::Expected<std::vector<distributed::SelfTestCheck>> RunSelfTestWorker(const plan::Plan& plan,
                                                                          const WorkerContext& context);

}  // namespace accel::rt::train

#endif  // ACCEL_RUNTIME_TRAIN_WORKER_H_
