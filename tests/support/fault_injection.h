#ifndef ACCEL_TESTS_SUPPORT_FAULT_INJECTION_H_
#define ACCEL_TESTS_SUPPORT_FAULT_INJECTION_H_

#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "runtime/distributed/collectives.h"

namespace accel::rt::distributed {

// What to do to one call of one primitive.
struct Fault {
  enum class Action {
    kDelay,  // sleep `delay`, then run the call (a straggler)
    kThrow,  // throw CollectiveError without calling (a local failure)
    kSkip,   // return without calling (a rank that silently misses a collective: peers time out)
    kKill,   // SIGKILL this process before calling (a rank dying mid-job)
  };
  // `all_reduce`, `broadcast`, `all_gather`, `reduce_scatter`, `barrier`, or `*` for any.
  std::string primitive = "*";
  // The 1-based call of that primitive (counted per name; `*` counts every call).
  int call = 1;
  Action action = Action::kThrow;
  std::chrono::milliseconds delay{0};
};

// Wraps real collectives and injects faults into chosen calls, so failure handling is tested
// on real process groups: a rank that dies mid-collective, a straggler, a skipped collective.
class FaultInjectingCollectives final : public Collectives {
 public:
  FaultInjectingCollectives(std::unique_ptr<Collectives> inner, std::vector<Fault> faults);

  int rank() const override { return inner_->rank(); }
  int world_size() const override { return inner_->world_size(); }
  bool distributed() const override { return inner_->distributed(); }
  c10::Device device() const override { return inner_->device(); }
  void AllReduce(std::vector<at::Tensor>& tensors, ReduceOp op) override;
  // Counts as an `all_reduce` call: the planned fault applies at launch, then the inner
  // group's AllReduceAsync runs (a skipped call returns a CompletedWork).
  std::unique_ptr<PendingWork> AllReduceAsync(std::vector<at::Tensor>& tensors, ReduceOp op) override;
  void Broadcast(std::vector<at::Tensor>& tensors, int root) override;
  void AllGather(const at::Tensor& input, at::Tensor& output) override;
  void Barrier() override;
  // Count as `reduce_scatter` and `all_gather` calls, as AllReduceAsync counts.
  void ReduceScatter(const at::Tensor& input, at::Tensor& output, ReduceOp op) override;
  std::unique_ptr<PendingWork> ReduceScatterAsync(const at::Tensor& input, at::Tensor& output,
                                                  ReduceOp op) override;
  std::unique_ptr<PendingWork> AllGatherAsync(const at::Tensor& input, at::Tensor& output) override;
  void Scatter(const std::vector<at::Tensor>& chunks, at::Tensor& output, int root) override;
  void Gather(const at::Tensor& input, at::Tensor& output, int root) override;
  // The wrapped group's subgroup, without faults of its own. `new_group:N:throw` refuses the
  // N-th with std::logic_error, as a back end that forms no subgroups refuses (callers that can
  // stand the world in for a subgroup catch it).
  std::unique_ptr<Collectives> NewGroup(const std::vector<int>& ranks) override;

  // Calls seen so far, by primitive name.
  int calls(const std::string& primitive) const;

 private:
  // Applies the fault planned for this call, if any; false when the call must not run.
  bool Before(const std::string& primitive);

  std::unique_ptr<Collectives> inner_;
  std::vector<Fault> faults_;
  std::map<std::string, int> calls_;
  int total_calls_ = 0;
};

// Parses a fault list such as `all_gather:2:kill,broadcast:1:delay=500ms,*:3:skip` (for test
// workers that take faults on the command line). Throws std::invalid_argument on bad text.
std::vector<Fault> ParseFaults(const std::string& text);

}  // namespace accel::rt::distributed

#endif  // ACCEL_TESTS_SUPPORT_FAULT_INJECTION_H_
