#include "tests/support/fault_injection.h"

#include <signal.h>

#include <stdexcept>
#include <thread>

#include <fmt/format.h>

namespace accel::rt::distributed {

FaultInjectingCollectives::FaultInjectingCollectives(std::unique_ptr<Collectives> inner,
                                                     std::vector<Fault> faults)
    : inner_(std::move(inner)), faults_(std::move(faults)) {}

int FaultInjectingCollectives::calls(const std::string& primitive) const {
  auto it = calls_.find(primitive);
  return it == calls_.end() ? 0 : it->second;
}

bool FaultInjectingCollectives::Before(const std::string& primitive) {
  int call = ++calls_[primitive];
  int total = ++total_calls_;
  for (const Fault& fault : faults_) {
    bool hit =
        fault.primitive == "*" ? fault.call == total : fault.primitive == primitive && fault.call == call;
    if (!hit) continue;
    switch (fault.action) {
      case Fault::Action::kDelay:
        std::this_thread::sleep_for(fault.delay);
        break;
      case Fault::Action::kThrow:
        throw CollectiveError(
            fmt::format("injected failure in {} call {} on rank {}", primitive, call, rank()));
      case Fault::Action::kSkip:
        return false;
      case Fault::Action::kKill:
        ::raise(SIGKILL);
        break;
    }
  }
  return true;
}

void FaultInjectingCollectives::AllReduce(std::vector<at::Tensor>& tensors, ReduceOp op) {
  if (Before("all_reduce")) inner_->AllReduce(tensors, op);
}

std::unique_ptr<PendingWork> FaultInjectingCollectives::AllReduceAsync(std::vector<at::Tensor>& tensors,
                                                                       ReduceOp op) {
  if (!Before("all_reduce")) return std::make_unique<CompletedWork>();
  return inner_->AllReduceAsync(tensors, op);
}

void FaultInjectingCollectives::Broadcast(std::vector<at::Tensor>& tensors, int root) {
  if (Before("broadcast")) inner_->Broadcast(tensors, root);
}

void FaultInjectingCollectives::AllGather(const at::Tensor& input, at::Tensor& output) {
  if (Before("all_gather")) inner_->AllGather(input, output);
}

void FaultInjectingCollectives::Barrier() {
  if (Before("barrier")) inner_->Barrier();
}

void FaultInjectingCollectives::ReduceScatter(const at::Tensor& input, at::Tensor& output, ReduceOp op) {
  if (Before("reduce_scatter")) inner_->ReduceScatter(input, output, op);
}

std::unique_ptr<PendingWork> FaultInjectingCollectives::ReduceScatterAsync(const at::Tensor& input,
                                                                           at::Tensor& output, ReduceOp op) {
  if (!Before("reduce_scatter")) return std::make_unique<CompletedWork>();
  return inner_->ReduceScatterAsync(input, output, op);
}

std::unique_ptr<PendingWork> FaultInjectingCollectives::AllGatherAsync(const at::Tensor& input,
                                                                       at::Tensor& output) {
  if (!Before("all_gather")) return std::make_unique<CompletedWork>();
  return inner_->AllGatherAsync(input, output);
}

void FaultInjectingCollectives::Scatter(const std::vector<at::Tensor>& chunks, at::Tensor& output, int root) {
  if (Before("scatter")) inner_->Scatter(chunks, output, root);
}

void FaultInjectingCollectives::Gather(const at::Tensor& input, at::Tensor& output, int root) {
  if (Before("gather")) inner_->Gather(input, output, root);
}

std::unique_ptr<Collectives> FaultInjectingCollectives::NewGroup(const std::vector<int>& ranks) {
  int call = ++calls_["new_group"];
  for (const Fault& fault : faults_) {
    if (fault.primitive == "new_group" && fault.call == call && fault.action == Fault::Action::kThrow)
      throw std::logic_error("this back end forms no subgroups");
  }
  return inner_->NewGroup(ranks);
}

std::vector<Fault> ParseFaults(const std::string& text) {
  std::vector<Fault> faults;
  size_t start = 0;
  while (start < text.size()) {
    size_t comma = text.find(',', start);
    std::string item = text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    start = comma == std::string::npos ? text.size() : comma + 1;
    size_t first = item.find(':');
    size_t second = first == std::string::npos ? first : item.find(':', first + 1);
    if (second == std::string::npos) {
      throw std::invalid_argument(fmt::format("fault `{}`: expected primitive:call:action", item));
    }
    Fault fault;
    fault.primitive = item.substr(0, first);
    if (fault.primitive != "*" && fault.primitive != "all_reduce" && fault.primitive != "broadcast" &&
        fault.primitive != "all_gather" && fault.primitive != "reduce_scatter" &&
        fault.primitive != "scatter" && fault.primitive != "gather" && fault.primitive != "barrier") {
      throw std::invalid_argument(fmt::format("fault `{}`: unknown primitive `{}`", item, fault.primitive));
    }
    std::string call = item.substr(first + 1, second - first - 1);
    try {
      fault.call = std::stoi(call);
    } catch (const std::exception&) {
      throw std::invalid_argument(fmt::format("fault `{}`: `{}` is not a call number", item, call));
    }
    std::string action = item.substr(second + 1);
    if (action == "throw") {
      fault.action = Fault::Action::kThrow;
    } else if (action == "skip") {
      fault.action = Fault::Action::kSkip;
    } else if (action == "kill") {
      fault.action = Fault::Action::kKill;
    } else if (action.rfind("delay=", 0) == 0 && action.size() > 8 &&
               action.substr(action.size() - 2) == "ms") {
      fault.action = Fault::Action::kDelay;
      fault.delay = std::chrono::milliseconds(std::stol(action.substr(6, action.size() - 8)));
    } else {
      throw std::invalid_argument(
          fmt::format("fault `{}`: unknown action `{}`; use throw, skip, kill or delay=<N>ms", item, action));
    }
    faults.push_back(fault);
  }
  return faults;
}

}  // namespace accel::rt::distributed
