#ifndef ACCEL_RUNTIME_ENGINE_REDUCER_H_
#define ACCEL_RUNTIME_ENGINE_REDUCER_H_

#include <cstdint>
#include <exception>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <ATen/core/Tensor.h>

#include "compiler/plan/plan.h"
#include "runtime/distributed/collectives.h"

namespace torch::autograd {
struct Node;
}  // namespace torch::autograd

namespace accel::rt::train {

// A synced backward left parameters without a gradient while
// `accelerator.ddp.find_unused_parameters` is false. The message names them and the fix.
class UnusedParametersError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct ReducerOptions {
  // Buckets hold at most this many bytes of fp32 gradients (`bucket_cap_mb` × 2^20); a parameter
  // larger than the cap gets a bucket of its own.
  int64_t bucket_cap_bytes = int64_t{25} << 20;
  // DistributedDataParallelKwargs.comm_hook (catalog §2.3): the gradient compression applied
  // to each bucket around its all-reduce.
  plan::DDPCommunicationHookType comm_hook = plan::DDPCommunicationHookType::no;
  // DistributedDataParallelKwargs.find_unused_parameters.
  bool find_unused_parameters = false;
};

// Data-parallel gradient averaging as DDP's reducer does it: while backward runs, a post-hook on
// each parameter's gradient accumulator copies the accumulated `.grad` into a flat fp32 bucket;
// when every parameter of a bucket is ready, the bucket's all-reduce starts asynchronously, so
// communication overlaps the rest of backward. Buckets are filled in reverse parameter order
// (the order backward produces gradients) and launched strictly in bucket order, so every rank
// starts the same collectives in the same order whatever order its hooks fire in.
//
// One step: PrepareForBackward(sync), loss.backward(), and, when sync is true, Finalize. With
// sync false (gradient accumulation, Accelerate's `no_sync`) the hooks only note which parameters
// got a gradient and `.grad` accumulates locally; the next synced backward reduces the sum.
//
// Comm hooks (torch's fp16/bf16 compression hooks): `fp16` casts the bucket to float16, divides
// it by the world size in float16, all-reduces the float16 tensor (Gloo sums float16 through
// float, rounding each partial sum to float16) and copies it back into the fp32 bucket; `bf16`
// does the same in bfloat16, at half of fp32's bandwidth. `none` divides by the world size while
// copying into the bucket, as DDP does.
//
// Parameters that do not require a gradient are skipped. With world size 1 the reducer installs
// no hooks and does nothing. Not thread-safe apart from the hooks: call it from one thread.
class Reducer {
 public:
  // Installs the hooks. `named_parameters` in the model's order; `collectives` must outlive the
  // reducer. Throws std::invalid_argument for a cap below 1 byte.
  Reducer(std::vector<std::pair<std::string, at::Tensor>> named_parameters, ReducerOptions options,
          distributed::Collectives& collectives);
  // Removes the hooks; waits (ignoring failures) for all-reduces still in flight.
  ~Reducer();
  Reducer(const Reducer&) = delete;
  Reducer& operator=(const Reducer&) = delete;

  // Call before each loss.backward(). `sync` false: this backward only accumulates. Throws
  // std::logic_error when the previous synced backward was not finalized.
  void PrepareForBackward(bool sync);

  // Call after a synced backward. Collective. Launches the buckets backward did not complete,
  // waits for every bucket, and writes the mean over ranks into each `.grad` (allocating it when
  // undefined). Parameters that got no gradient in this backward:
  // - find_unused_parameters false: throws UnusedParametersError naming them (after waiting for
  //   the buckets already launched). If other ranks did use them, those ranks wait for a bucket
  //   this rank never starts and fail with CollectiveError within the group timeout.
  // - find_unused_parameters true: they contribute their current `.grad` (what earlier no_sync
  //   backwards accumulated) or zeros. A parameter that got no gradient on any rank since the
  //   last synced step keeps its `.grad` untouched (undefined stays undefined), as in DDP; one
  //   more all-reduce (a used-flag per parameter) finds them.
  // Throws CollectiveError when a collective fails. Does nothing after a backward with sync
  // false, or with world size 1.
  void Finalize();

  size_t bucket_count() const { return buckets_.size(); }
  // All-reduces started by hooks, i.e. before backward returned, since PrepareForBackward.
  size_t buckets_launched_in_backward() const;

 private:
  struct Bucket {
    // fp32, the members' gradients end to end.
    at::Tensor flat;
    // Parameter indices, in the order backward is expected to produce them.
    std::vector<size_t> members;
    // Members not yet ready in this backward.
    size_t pending = 0;
    // What travels: `flat`, or its fp16 compression; set while the all-reduce runs.
    at::Tensor wire;
    std::unique_ptr<distributed::PendingWork> work;
  };
  struct Slot {
    size_t bucket;
    int64_t offset;
  };
  struct Hook;

  // Called by the gradient accumulator's post-hook of parameter `index`.
  void OnGradientReady(size_t index);
  // Copies parameter `index`'s gradient (or zeros) into its bucket; launches what became ready.
  void MarkReady(size_t index);
  // Starts every bucket, in order, whose members are all ready.
  void LaunchReadyBuckets();
  void Launch(Bucket& bucket);
  // Waits for every started bucket; the first failure is rethrown after all were waited for.
  void WaitAll();
  at::Tensor SlotView(size_t index);

  std::vector<std::string> names_;
  std::vector<at::Tensor> parameters_;
  ReducerOptions options_;
  distributed::Collectives& collectives_;
  std::vector<Bucket> buckets_;
  std::vector<Slot> slots_;
  std::vector<std::pair<std::shared_ptr<torch::autograd::Node>, uintptr_t>> hooks_;

  // Guards everything below: hooks may run on autograd's device threads.
  mutable std::mutex mutex_;
  bool syncing_ = false;
  std::vector<bool> ready_;
  // Got a gradient in some backward since the last synced step (no_sync ones included).
  std::vector<bool> used_;
  std::vector<std::string> marked_twice_;
  size_t next_bucket_ = 0;
  size_t launched_in_backward_ = 0;
  // A failure while launching from a hook: exceptions must not unwind through autograd.
  std::exception_ptr launch_error_;
};

}  // namespace accel::rt::train

#endif  // ACCEL_RUNTIME_ENGINE_REDUCER_H_
