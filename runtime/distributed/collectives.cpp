#include "runtime/distributed/collectives.h"

#include <ATen/ATen.h>

#include <stdexcept>

#include <stdlib.h>

namespace accel::rt::distributed {

void KeepFlightRecorderOff() { ::setenv("TORCH_FR_BUFFER_SIZE", "0", /*overwrite=*/0); }

std::unique_ptr<PendingWork> Collectives::AllReduceAsync(std::vector<at::Tensor>& tensors, ReduceOp op) {
  AllReduce(tensors, op);
  return std::make_unique<CompletedWork>();
}

void Collectives::ReduceScatter(const at::Tensor& input, at::Tensor& output, ReduceOp op) {
  const int64_t chunk = output.numel();
  if (input.numel() != chunk * world_size()) {
    throw std::invalid_argument("ReduceScatter: the input must hold world_size chunks of the output's size");
  }
  std::vector<at::Tensor> whole{input.clone()};
  AllReduce(whole, op);
  output.view({-1}).copy_(whole[0].view({-1}).narrow(0, chunk * rank(), chunk));
}

std::unique_ptr<PendingWork> Collectives::ReduceScatterAsync(const at::Tensor& input, at::Tensor& output,
                                                             ReduceOp op) {
  ReduceScatter(input, output, op);
  return std::make_unique<CompletedWork>();
}

std::unique_ptr<PendingWork> Collectives::AllGatherAsync(const at::Tensor& input, at::Tensor& output) {
  AllGather(input, output);
  return std::make_unique<CompletedWork>();
}

void Collectives::Scatter(const std::vector<at::Tensor>& chunks, at::Tensor& output, int root) {
  CheckScatterChunks(chunks, output, rank() == root ? world_size() : 0);
  std::vector<at::Tensor> all;
  for (int r = 0; r < world_size(); ++r)
    all.push_back(rank() == root ? chunks[r].contiguous() : at::empty_like(output));
  Broadcast(all, root);
  output.copy_(all[rank()]);
}

void Collectives::Gather(const at::Tensor& input, at::Tensor& output, int root) {
  const bool receives = rank() == root;
  CheckGatherOutput(input, output, receives, world_size());
  at::Tensor everyone = receives ? output : at::empty({input.numel() * world_size()}, input.options());
  AllGather(input, everyone);
}

void CheckGatherOutput(const at::Tensor& input, const at::Tensor& output, bool receives, int world) {
  if (!receives) {
    if (output.defined()) throw std::invalid_argument("Gather: only the root passes an output");
    return;
  }
  if (!output.defined() || output.numel() != input.numel() * world ||
      output.scalar_type() != input.scalar_type() || !output.is_contiguous()) {
    throw std::invalid_argument(
        "Gather: the root's output must be contiguous, of the input's dtype, world_size × its elements");
  }
}

void CheckScatterChunks(const std::vector<at::Tensor>& chunks, const at::Tensor& output, int expected) {
  if (static_cast<int>(chunks.size()) != expected) {
    throw std::invalid_argument(expected == 0 ? "Scatter: only the root passes chunks"
                                              : "Scatter: the root must pass world_size chunks");
  }
  for (const at::Tensor& chunk : chunks) {
    if (chunk.sizes() != output.sizes() || chunk.scalar_type() != output.scalar_type())
      throw std::invalid_argument("Scatter: every chunk must have the output's shape and dtype");
  }
}

void Collectives::MeetAfterWork(const char*, const std::function<void()>& work) {
  work();
  Barrier();
}

std::unique_ptr<Collectives> Collectives::NewGroup(const std::vector<int>& ranks) {
  if (world_size() == 1 && ranks == std::vector<int>{0}) return MakeSingleProcess();
  throw std::logic_error("this process group cannot form subgroups");
}

namespace {

class SingleProcess final : public Collectives {
 public:
  int rank() const override { return 0; }
  int world_size() const override { return 1; }
  bool distributed() const override { return false; }
  void AllReduce(std::vector<at::Tensor>&, ReduceOp) override {}
  void Broadcast(std::vector<at::Tensor>&, int) override {}
  void AllGather(const at::Tensor& input, at::Tensor& output) override { output.view_as(input).copy_(input); }
  void Barrier() override {}
};

}  // namespace

std::unique_ptr<Collectives> MakeSingleProcess() { return std::make_unique<SingleProcess>(); }

}  // namespace accel::rt::distributed
