#ifndef ACCEL_RUNTIME_DISTRIBUTED_C10D_GROUP_H_
#define ACCEL_RUNTIME_DISTRIBUTED_C10D_GROUP_H_

// Internal to runtime/dist: what the Gloo and NCCL back ends share — the TCPStore rendezvous
// and the Collectives implementation over any c10d process group. Every c10d exception is
// caught here and rethrown as CollectiveError with what the user needs to know.

#include <torch/csrc/api/include/torch/version.h>
#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>
#include <torch/csrc/distributed/c10d/Store.hpp>

#include <string>
#include <string_view>

#include "runtime/distributed/collectives.h"

namespace accel::rt::distributed::internal {

// The class process-group implementations derive from: ProcessGroup up to LibTorch 1.13,
// Backend from 2.0 (where ProcessGroup became a dispatcher over backends).
#if TORCH_VERSION_MAJOR >= 2
using GroupBase = c10d::Backend;
#else
using GroupBase = c10d::ProcessGroup;
#endif

// Rank 0 serves a TCPStore at master_addr:master_port, the others connect; every rank checks
// in and waits for all the others, so a rank that never comes is named in every rank's error.
c10::intrusive_ptr<c10d::Store> Rendezvous(const RendezvousOptions& options);

// Text values of the rendezvous, stored behind a tag byte so that no value is empty: LibTorch
// 1.13's store answers a get of an empty value with its length sent MSG_MORE and no data after
// it, which the kernel holds back for up to 200 ms; every rank but 0 paid that at start, reading
// the empty verdict "nobody is missing".
void SetStoreText(c10d::Store& store, const std::string& key, std::string_view text);
std::string GetStoreText(c10d::Store& store, const std::string& key);

// Throws the error of a failed rendezvous, naming the address, rank and timeout: an
// OwnRendezvousError when this rank ran out of file descriptors (its own failure, with a hint),
// else a CollectiveError.
[[noreturn]] void ThrowRendezvousError(const RendezvousOptions& options, const std::exception& error);

// `; this process has N of its M file descriptors open: raise ulimit -n` when this process is
// (nearly) out of descriptors, the usual cause of a socket that cannot be opened; else "".
std::string DescriptorHint();

class C10dCollectives final : public Collectives {
 public:
  C10dCollectives(const RendezvousOptions& options, c10::intrusive_ptr<c10d::Store> store,
                  c10::intrusive_ptr<GroupBase> group, c10::Device device);

  int rank() const override { return options_.rank; }
  int world_size() const override { return options_.world_size; }
  c10::Device device() const override { return device_; }
  void AllReduce(std::vector<at::Tensor>& tensors, ReduceOp op) override;
  // One c10d operation per tensor, started on the group's worker threads; Wait waits for each
  // within the group timeout.
  std::unique_ptr<PendingWork> AllReduceAsync(std::vector<at::Tensor>& tensors, ReduceOp op) override;
  void Broadcast(std::vector<at::Tensor>& tensors, int root) override;
  void AllGather(const at::Tensor& input, at::Tensor& output) override;
  void Barrier() override;

 private:
  template <typename F>
  void Guard(const char* what, F&& body);

  RendezvousOptions options_;
  c10::intrusive_ptr<c10d::Store> store_;
  c10::intrusive_ptr<GroupBase> group_;
  c10::Device device_;
};

}  // namespace accel::rt::distributed::internal

#endif  // ACCEL_RUNTIME_DISTRIBUTED_C10D_GROUP_H_
