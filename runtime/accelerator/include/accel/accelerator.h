#ifndef ACCEL_ACCELERATOR_H_
#define ACCEL_ACCELERATOR_H_

// The Accelerator: a compiled plan's training semantics for a LibTorch program that writes its
// own loop (docs/accelerator.md). The installed public header of the `Accel::accelerator`
// CMake target; it needs LibTorch's headers and nothing else of Accel's.

#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>

#include <ATen/core/Tensor.h>
#include <torch/nn/module.h>
#include <torch/optim/optimizer.h>

namespace accel {

// Every failure: a bad plan or argument, a failed rendezvous or collective (a peer died, the
// plan's timeout passed), a checkpoint that does not verify. `what()` names this rank.
class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// One micro-batch of this rank's shard of the plan's training data.
struct Batch {
  at::Tensor features;  // float32 [batch, features]
  at::Tensor targets;   // float32 [batch, outputs], or int64 [batch] class indices
  int64_t epoch = 0;
  bool last_in_epoch = false;  // this rank's last batch of `epoch`
};

class Accelerator {
 public:
  // The arguments accelrun passes every worker: `<plan.json> [--output-dir <dir>] [--resume
  // auto|<dir>]`. Reads the plan, joins the job's process group from the environment accelrun
  // sets (one process without it), and seeds as the plan says. Throws Error.
  Accelerator(int argc, char** argv);
  ~Accelerator();
  Accelerator(const Accelerator&) = delete;
  Accelerator& operator=(const Accelerator&) = delete;

  int rank() const;
  int world_size() const;
  bool is_main_process() const;
  // The plan's optimizer steps (`train.steps`), learning rate and accumulation steps.
  int64_t max_steps() const;
  double learning_rate() const;
  int64_t gradient_accumulation_steps() const;

  // Broadcasts rank 0's parameters and buffers (as DDP starts), sets the schedule's first rate,
  // shards the plan's data for this rank, and with `--resume` loads the newest (or the given)
  // checkpoint into the model, optimizer, RNG, data position and schedule. The model and
  // optimizer must outlive the Accelerator. Collective. Throws Error, e.g. for an optimizer
  // other than the plan's.
  void Prepare(torch::nn::Module& model, torch::optim::Optimizer& optimizer);

  // The next micro-batch of this rank's shard, epoch after epoch.
  Batch NextBatch();
  // `accelerator.backward` inside `accumulate()`: backward of loss / accumulation steps, with
  // the gradients all-reduced (averaged over ranks) only on the micro-batch that ends an
  // accumulation cycle (`no_sync` before it). Collective on that micro-batch.
  void Backward(const at::Tensor& loss);
  // Whether the last Backward ended an accumulation cycle: Step() will step.
  bool sync_gradients() const;
  // `clip_grad_norm_` over the model's parameters; returns the norm before clipping.
  double ClipGradNorm(double max_norm);
  // At the end of an accumulation cycle: clips to the plan's max_grad_norm (if set), steps the
  // optimizer, zeroes the gradients and steps the plan's schedule; returns true. Elsewhere does
  // nothing and returns false, as Accelerate's wrapped optimizer does.
  bool Step();
  // Optimizer steps done (a resumed run starts at the checkpoint's).
  int64_t step() const;

  // Accelerate's data operations; each is collective.
  at::Tensor Gather(const at::Tensor& tensor);
  at::Tensor Reduce(const at::Tensor& tensor, const std::string& reduction = "mean");
  at::Tensor Broadcast(const at::Tensor& tensor, int from_process = 0);
  at::Tensor PadAcrossProcesses(const at::Tensor& tensor, int64_t dim = 0, int64_t pad_index = 0,
                                bool pad_first = false);
  void WaitForEveryone();

  // Whether the plan asks for a checkpoint after the step Step() just took: every
  // `train.checkpoint_every` steps, after an epoch with `checkpoint_every_epoch`, and after the
  // last step, as the built-in executor saves. False when the plan saves no checkpoints.
  bool ShouldSaveState() const;
  // save_state through the plan's checkpoint store (`train.checkpoint_*`): the model, optimizer,
  // every rank's RNG, data position and schedule, crash-safely. Collective. Throws Error when
  // the plan saves no checkpoints.
  void SaveState();
  // The run's outputs as the built-in executor writes them: the weights (plan's `save`), and
  // `metrics.json` and `ranks/rank-N.json` with the loss means over ranks. Collective.
  void SaveModel();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace accel

#endif  // ACCEL_ACCELERATOR_H_
