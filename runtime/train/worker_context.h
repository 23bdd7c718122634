#ifndef ACCEL_RUNTIME_TRAIN_WORKER_CONTEXT_H_
#define ACCEL_RUNTIME_TRAIN_WORKER_CONTEXT_H_

#include <cstdint>
#include <string>
#include <utility>

#include "llvm/Support/Error.h"
#include "llvm/Support/raw_ostream.h"

// What a worker is given and what it returns, apart from running it (worker.h): the worker's
// phases in their own files (process_group.h, run_outputs.h, ...) take these types without
// depending on the worker that calls them.
namespace accel::rt::train {

// Where this worker sits in the job; set by the launcher through the environment.
struct WorkerContext {
  int rank = 0;
  int world_size = 1;
  int local_rank = 0;  // picks this rank's GPU on the nccl backend
  std::string master_addr = "127.0.0.1";
  int master_port = 0;
  std::string launch_id;  // see distributed::RendezvousOptions
  // Overrides the plan's output directory when set.
  std::string output_dir;
  // `accelrun --resume`: empty starts fresh; `auto` continues from the newest complete
  // checkpoint of the plan's `checkpoint` step if there is one (fresh otherwise); anything
  // else is a checkpoint directory that must load.
  std::string resume;
  // `accelrun --allow-schedule-change`: a resume whose learning-rate schedule differs from the
  // checkpoint's (another `train.steps`, warmup or schedule) continues with a warning instead
  // of being refused.
  bool allow_schedule_change = false;
  // Rank 0 redraws its progress line in place (the launcher's output is a terminal).
  bool progress_tty = false;
};

// What a finished run measured (rank 0's view; losses are means over ranks).
struct RunSummary {
  int64_t steps = 0;
  double first_loss = 0;
  double final_loss = 0;
  // The last evaluation over the held-out rows (train.eval_every); -1 without one.
  double eval_loss = -1;
  double eval_accuracy = -1;  // with class labels
  // Over the whole run: the first loss of its first launch, and the training time of every
  // launch up to the checkpoint each resume continued from.
  double wall_seconds = 0;
  // The step the run resumed from (the checkpoint's); -1 for a fresh start.
  int64_t resumed_at_step = -1;
  // fp16 with loss scaling: the scale at the end and the optimizer steps skipped for an inf or
  // NaN gradient over the whole run; -1 without loss scaling.
  double loss_scale = -1;
  int64_t skipped_steps = -1;
  std::string model_path;
  std::string parameter_digest;  // sha256 over every parameter's bytes, in name order
};

// The error RunWorker returns when a collective or the rendezvous failed (a peer died or never
// joined, or the group's timeout passed): this rank is a casualty, not the cause.
// `accelrun-worker` exits with code 3 for it, so the launcher can name the root cause.
class CollectiveFailure : public llvm::ErrorInfo<CollectiveFailure> {
 public:
  inline static char ID = 0;
  explicit CollectiveFailure(std::string message) : message_(std::move(message)) {}
  void log(llvm::raw_ostream& os) const override { os << message_; }
  std::error_code convertToErrorCode() const override { return llvm::inconvertibleErrorCode(); }

 private:
  std::string message_;
};

// The error RunWorker returns when the worker's arguments do not fit the plan or the disk:
// `--resume` without a checkpoint step, or a fresh start into a project that holds an earlier
// run's checkpoints. `accelrun-worker` exits with code 2 for it: starting again the same way
// fails the same way, so the launcher does not restart it (and never turns it into a resume of
// the earlier run).
class ArgumentMismatch : public llvm::ErrorInfo<ArgumentMismatch> {
 public:
  inline static char ID = 0;
  explicit ArgumentMismatch(std::string message) : message_(std::move(message)) {}
  void log(llvm::raw_ostream& os) const override { os << message_; }
  std::error_code convertToErrorCode() const override { return llvm::inconvertibleErrorCode(); }

 private:
  std::string message_;
};

}  // namespace accel::rt::train

#endif  // ACCEL_RUNTIME_TRAIN_WORKER_CONTEXT_H_
