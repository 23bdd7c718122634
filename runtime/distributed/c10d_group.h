#ifndef ACCEL_RUNTIME_DISTRIBUTED_C10D_GROUP_H_
#define ACCEL_RUNTIME_DISTRIBUTED_C10D_GROUP_H_

// Internal to runtime/dist: what the Gloo and NCCL back ends share — the TCPStore rendezvous
// and the Collectives implementation over any c10d process group. Every c10d exception is
// caught here and rethrown as CollectiveError with what the user needs to know.

#include <torch/csrc/distributed/c10d/Backend.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>
#include <torch/csrc/distributed/c10d/Store.hpp>

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/distributed/collectives.h"

namespace accel::rt::distributed::internal {

// The class process-group implementations derive from (ProcessGroup is a dispatcher over them).
using GroupBase = c10d::Backend;

// Rank 0 serves a TCPStore at master_addr:master_port, the others connect; every rank checks
// in and waits for all the others, so a rank that never comes is named in every rank's error.
c10::intrusive_ptr<c10d::Store> Rendezvous(const RendezvousOptions& options);

// Text values of the rendezvous (the launch id, the roll call's verdict, empty when nobody is
// missing) in the store.
void SetStoreText(c10d::Store& store, const std::string& key, std::string_view text);
std::string GetStoreText(c10d::Store& store, const std::string& key);

// Throws the error of a failed rendezvous, naming the address, rank and timeout: an
// OwnRendezvousError when this rank ran out of file descriptors (its own failure, with a hint),
// else a CollectiveError.
[[noreturn]] void ThrowRendezvousError(const RendezvousOptions& options, const std::exception& error);

// `; this process has N of its M file descriptors open: raise ulimit -n` when this process is
// (nearly) out of descriptors, the usual cause of a socket that cannot be opened; else "".
std::string DescriptorHint();

// Builds a process group of `size` ranks over `store` with the back end's settings (its network
// device, the timeout): how a C10dCollectives forms its subgroups (NewGroup).
using GroupFactory =
    std::function<c10::intrusive_ptr<GroupBase>(c10::intrusive_ptr<c10d::Store> store, int rank, int size)>;

// Which group a message speaks of: "" for the world, else " in the group of world ranks 2, 3".
struct GroupScope {
  RendezvousOptions options;  // rank and world_size within the group; the world's timeout
  std::string label;
};

c10d::ReduceOp ToC10d(ReduceOp op);

// "reduce_scatter failed on rank 1 of 2 in the group of world ranks 2, 3 (timeout 2000 ms): ..."
CollectiveError Failure(const char* what, const GroupScope& scope, const std::exception& error);

// Host tensors handed to a group on a device travel through device copies (NCCL moves device
// memory only): the few numbers a rank agrees on with the others (flags, counters, its loss),
// which would otherwise each need their own device tensor. Bulk tensors (weights, gradients,
// shards) live on the device already and pass through untouched.
class Staging {
 public:
  explicit Staging(c10::Device device) : device_(device) {}
  // What the group is given for `tensor`: itself when it is on the group's device, else a
  // device copy; `result`: the operation writes it, so CopyBack returns it to `tensor`.
  at::Tensor In(const at::Tensor& tensor, bool result);
  // Once the operation is done: every result back into its host tensor.
  void CopyBack();

 private:
  c10::Device device_;
  std::vector<std::pair<at::Tensor, at::Tensor>> results_;  // the host tensor, its device copy
};

// Started c10d operations. Wait waits for each within the group's timeout, then runs `finish`,
// the local part of the collective (a reduce-scatter's sum), and fails with the same
// CollectiveError as the synchronous path. It keeps the group's settings, not the group.
class C10dWork final : public PendingWork {
 public:
  C10dWork(const char* what, std::vector<c10::intrusive_ptr<c10d::Work>> works, GroupScope scope,
           std::function<void()> finish = {});
  void Wait() override;

 private:
  const char* what_;
  std::vector<c10::intrusive_ptr<c10d::Work>> works_;
  GroupScope scope_;
  std::function<void()> finish_;
};

class C10dCollectives final : public Collectives {
 public:
  // `subgroups` builds the process groups of NewGroup (none: NewGroup is refused);
  // `world_ranks` are the world's ranks of this group's members (empty: this is the world).
  C10dCollectives(const RendezvousOptions& options, c10::intrusive_ptr<c10d::Store> store,
                  c10::intrusive_ptr<GroupBase> group, c10::Device device, ShardedPath sharded,
                  GroupFactory subgroups = {}, std::vector<int> world_ranks = {});

  int rank() const override { return scope_.options.rank; }
  int world_size() const override { return scope_.options.world_size; }
  c10::Device device() const override { return device_; }
  void AllReduce(std::vector<at::Tensor>& tensors, ReduceOp op) override;
  // One c10d operation per tensor, started on the group's worker threads; Wait waits for each
  // within the group timeout.
  std::unique_ptr<PendingWork> AllReduceAsync(std::vector<at::Tensor>& tensors, ReduceOp op) override;
  void Broadcast(std::vector<at::Tensor>& tensors, int root) override;
  void AllGather(const at::Tensor& input, at::Tensor& output) override;
  void Barrier() override;
  // Through the group's store, not its back end: each rank adds itself to a count of arrivals,
  // and a rank at its work adds to a count of beats each time it says it still works. A waiting
  // rank polls both, and gives up when neither moved for the timeout.
  void MeetAfterWork(const char* what, const std::function<void()>& work) override;

  // The collectives of sharded data parallelism (c10d_sharded.cpp), by the group's ShardedPath.
  // Composed: a reduce-scatter with a ring's volume, one all-to-all sending chunk r of the
  // input to rank r ((N-1)/N of the input leaves each rank, as in a ring reduce-scatter, half
  // an all-reduce's), the N chunks received reduced locally, float16 and bfloat16 in float32
  // and rounded once at the end. Native: the back end's reduce-scatter.
  void ReduceScatter(const at::Tensor& input, at::Tensor& output, ReduceOp op) override;
  // The all-to-all runs on the group's threads; Wait waits for it and reduces the chunks.
  std::unique_ptr<PendingWork> ReduceScatterAsync(const at::Tensor& input, at::Tensor& output,
                                                  ReduceOp op) override;
  std::unique_ptr<PendingWork> AllGatherAsync(const at::Tensor& input, at::Tensor& output) override;
  // c10d's scatter: the root sends each rank its chunk only.
  void Scatter(const std::vector<at::Tensor>& chunks, at::Tensor& output, int root) override;
  // c10d's gather: only the root receives.
  void Gather(const at::Tensor& input, at::Tensor& output, int root) override;
  // A process group of the back end over a PrefixStore of this group's store, its keys under
  // the call's sequence number and `ranks`, so every NewGroup call of a job rendezvouses apart.
  // It holds the store (and the network device) itself: it stays usable whichever is destroyed
  // first. Failing to form it within the timeout is a CollectiveError (`new_group`).
  std::unique_ptr<Collectives> NewGroup(const std::vector<int>& ranks) override;

 private:
  // Runs `body`, turning any exception into this group's CollectiveError for `what`.
  void Guard(const char* what, const std::function<void()>& body);

  GroupScope scope_;
  c10::intrusive_ptr<c10d::Store> store_;
  c10::intrusive_ptr<GroupBase> group_;
  c10::Device device_;
  ShardedPath sharded_;
  GroupFactory subgroups_;
  std::vector<int> world_ranks_;
  int groups_formed_ = 0;  // NewGroup calls so far: the first part of each subgroup's prefix
  int64_t meetings_ = 0;   // MeetAfterWork calls so far
};

}  // namespace accel::rt::distributed::internal

#endif  // ACCEL_RUNTIME_DISTRIBUTED_C10D_GROUP_H_
