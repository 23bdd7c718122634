#include "runtime/engine/reducer.h"

#include <ATen/ATen.h>
#include <torch/csrc/autograd/function.h>
#include <torch/csrc/autograd/function_hook.h>
#include <torch/csrc/autograd/variable.h>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

namespace accel::rt::train {

// Runs after the parameter's AccumulateGrad node, so `.grad` already holds the accumulated sum.
struct Reducer::Hook final : torch::autograd::FunctionPostHook {
  Hook(Reducer* reducer, size_t index) : reducer(reducer), index(index) {}
  torch::autograd::variable_list operator()(const torch::autograd::variable_list& outputs,
                                            const torch::autograd::variable_list& /*inputs*/) override {
    reducer->OnGradientReady(index);
    return outputs;
  }
  Reducer* reducer;
  size_t index;
};

Reducer::Reducer(std::vector<std::pair<std::string, at::Tensor>> named_parameters, ReducerOptions options,
                 distributed::Collectives& collectives)
    : options_(std::move(options)), collectives_(collectives) {
  if (options_.bucket_cap_bytes < 1) {
    throw std::invalid_argument(
        fmt::format("bucket cap of {} bytes; it must be positive", options_.bucket_cap_bytes));
  }
  for (auto& [name, parameter] : named_parameters) {
    // DDP reduces only what the optimizer trains.
    if (!parameter.requires_grad()) continue;
    names_.push_back(std::move(name));
    parameters_.push_back(std::move(parameter));
  }
  // Reverse order: the last layers' gradients come first in backward (as gradient_buckets.cpp).
  slots_.resize(parameters_.size());
  std::vector<int64_t> sizes;
  int64_t filled = 0;
  for (size_t i = parameters_.size(); i-- > 0;) {
    int64_t numel = parameters_[i].numel();
    int64_t bytes = numel * static_cast<int64_t>(sizeof(float));
    if (buckets_.empty() || (filled > 0 && filled + bytes > options_.bucket_cap_bytes)) {
      buckets_.emplace_back();
      sizes.push_back(0);
      filled = 0;
    }
    slots_[i] = {buckets_.size() - 1, sizes.back()};
    buckets_.back().members.push_back(i);
    sizes.back() += numel;
    filled += bytes;
  }
  ready_.assign(parameters_.size(), false);
  used_.assign(parameters_.size(), false);
  // One process has nothing to average: no buckets to fill, no hooks to run.
  if (collectives_.world_size() == 1) return;
  for (size_t b = 0; b < buckets_.size(); ++b) {
    buckets_[b].flat = at::zeros({sizes[b]}, parameters_.front().options().dtype(at::kFloat));
  }
  for (size_t i = 0; i < parameters_.size(); ++i) {
    // The variable holds its accumulator weakly; holding it here keeps the hook in future graphs.
    std::shared_ptr<torch::autograd::Node> accumulator =
        torch::autograd::impl::grad_accumulator(parameters_[i]);
    uintptr_t key = accumulator->add_post_hook(std::make_unique<Hook>(this, i));
    hooks_.emplace_back(std::move(accumulator), key);
  }
}

Reducer::~Reducer() {
  for (auto& [accumulator, key] : hooks_) accumulator->del_post_hook(key);
  try {
    WaitAll();
  } catch (const std::exception&) {
    // The failure was or will be reported by the collective that saw it; a destructor must not throw.
  }
}

size_t Reducer::buckets_launched_in_backward() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return launched_in_backward_;
}

void Reducer::PrepareForBackward(bool sync) {
  if (hooks_.empty()) return;
  std::lock_guard<std::mutex> lock(mutex_);
  if (syncing_ && std::find(ready_.begin(), ready_.end(), true) != ready_.end()) {
    throw std::logic_error(
        "the previous synced backward was not finalized; call Finalize after each synced backward");
  }
  syncing_ = sync;
  if (!sync) return;
  ready_.assign(parameters_.size(), false);
  for (Bucket& bucket : buckets_) bucket.pending = bucket.members.size();
  marked_twice_.clear();
  next_bucket_ = 0;
  launched_in_backward_ = 0;
  launch_error_ = nullptr;
}

void Reducer::OnGradientReady(size_t index) {
  std::lock_guard<std::mutex> lock(mutex_);
  // Noted in no_sync backwards too: a gradient accumulated there still needs averaging.
  if (parameters_[index].grad().defined()) used_[index] = true;
  if (!syncing_) return;
  if (ready_[index]) {
    // Reentrant backward (checkpointing) or a second backward over the graph: DDP refuses it.
    marked_twice_.push_back(names_[index]);
    return;
  }
  size_t before = next_bucket_;
  MarkReady(index);
  launched_in_backward_ += next_bucket_ - before;
}

at::Tensor Reducer::SlotView(size_t index) {
  const Slot& slot = slots_[index];
  return buckets_[slot.bucket].flat.narrow(0, slot.offset, parameters_[index].numel());
}

void Reducer::MarkReady(size_t index) {
  ready_[index] = true;
  at::Tensor view = SlotView(index);
  const at::Tensor& grad = parameters_[index].grad();
  if (grad.defined()) {
    view.copy_(grad.reshape({-1}));
  } else {
    view.zero_();
  }
  if (--buckets_[slots_[index].bucket].pending == 0) LaunchReadyBuckets();
}

void Reducer::LaunchReadyBuckets() {
  // In bucket order only: collectives are matched by order, and hooks may fire in another
  // order on another rank.
  while (next_bucket_ < buckets_.size() && buckets_[next_bucket_].pending == 0) {
    Launch(buckets_[next_bucket_++]);
  }
}

void Reducer::Launch(Bucket& bucket) {
  // After a failed launch the group is unusable; Finalize reports the failure.
  if (launch_error_) return;
  int64_t world = collectives_.world_size();
  if (options_.comm_hook == plan::DDPCommunicationHookType::fp16) {
    // torch's fp16_compress_hook: cast first, then divide in float16.
    bucket.wire = bucket.flat.to(at::kHalf);
    bucket.wire.div_(world);
  } else if (options_.comm_hook == plan::DDPCommunicationHookType::bf16) {
    // torch's bf16_compress_hook, likewise in bfloat16.
    bucket.wire = bucket.flat.to(at::kBFloat16);
    bucket.wire.div_(world);
  } else {
    // DDP divides before summing; world sizes are usually powers of two, where this is exact.
    bucket.flat.div_(world);
    bucket.wire = bucket.flat;
  }
  try {
    std::vector<at::Tensor> tensors{bucket.wire};
    bucket.work = collectives_.AllReduceAsync(tensors, distributed::ReduceOp::kSum);
  } catch (...) {
    launch_error_ = std::current_exception();
  }
}

void Reducer::WaitAll() {
  std::exception_ptr first = launch_error_;
  for (Bucket& bucket : buckets_) {
    if (!bucket.work) continue;
    try {
      bucket.work->Wait();
    } catch (...) {
      if (!first) first = std::current_exception();
    }
    bucket.work.reset();
  }
  launch_error_ = nullptr;
  if (first) std::rethrow_exception(first);
}

void Reducer::Finalize() {
  if (hooks_.empty()) return;
  std::lock_guard<std::mutex> lock(mutex_);
  if (!syncing_) return;
  syncing_ = false;
  // The used flags cover one synced step, whatever happens below.
  std::vector<bool> used = std::move(used_);
  used_.assign(parameters_.size(), false);
  std::vector<size_t> unready;
  for (size_t i = 0; i < parameters_.size(); ++i) {
    if (!ready_[i]) unready.push_back(i);
  }
  if (!marked_twice_.empty() || (!unready.empty() && !options_.find_unused_parameters)) {
    // Drain what peers are reducing with us before reporting; their failures matter less.
    try {
      WaitAll();
    } catch (const distributed::CollectiveError&) {
    }
    next_bucket_ = 0;
    if (!marked_twice_.empty()) {
      throw std::logic_error(
          fmt::format("parameter{} {} got a gradient twice in one synced backward (reentrant backward or "
                      "activation checkpointing); DDP does not support this either",
                      marked_twice_.size() == 1 ? "" : "s", fmt::join(marked_twice_, ", ")));
    }
    std::vector<std::string> names;
    for (size_t i : unready) names.push_back("`" + names_[i] + "`");
    throw UnusedParametersError(
        fmt::format("parameter{} {} received no gradient in this backward on rank {}; if the model leaves "
                    "parameters unused, set accelerator.ddp.find_unused_parameters = true",
                    names.size() == 1 ? "" : "s", fmt::join(names, ", "), collectives_.rank()));
  }
  // Unused here: what earlier no_sync backwards accumulated, or zeros (DDP does the same).
  for (size_t i : unready) MarkReady(i);
  next_bucket_ = 0;
  // Launched after every bucket, so all ranks start it in the same place.
  at::Tensor used_anywhere;
  std::unique_ptr<distributed::PendingWork> used_work;
  if (options_.find_unused_parameters && !launch_error_) {
    used_anywhere = at::zeros({static_cast<int64_t>(parameters_.size())}, at::kInt);
    for (size_t i = 0; i < used.size(); ++i) used_anywhere.data_ptr<int>()[i] = used[i] ? 1 : 0;
    std::vector<at::Tensor> tensors{used_anywhere};
    try {
      used_work = collectives_.AllReduceAsync(tensors, distributed::ReduceOp::kSum);
    } catch (...) {
      launch_error_ = std::current_exception();
    }
  }
  WaitAll();
  if (used_work) used_work->Wait();

  for (Bucket& bucket : buckets_) {
    if (options_.comm_hook == plan::DDPCommunicationHookType::fp16 ||
        options_.comm_hook == plan::DDPCommunicationHookType::bf16) {
      bucket.flat.copy_(bucket.wire);
    }
    bucket.wire = at::Tensor();
  }
  for (size_t i = 0; i < parameters_.size(); ++i) {
    // Unused on every rank: leave `.grad` as it is (DDP: "globally unused" parameters).
    if (used_anywhere.defined() && used_anywhere.data_ptr<int>()[i] == 0) continue;
    at::Tensor& parameter = parameters_[i];
    at::Tensor mean = SlotView(i).view(parameter.sizes());
    if (parameter.grad().defined()) {
      parameter.mutable_grad().copy_(mean);
    } else {
      parameter.mutable_grad() = mean.to(parameter.scalar_type(), /*non_blocking=*/false, /*copy=*/true);
    }
  }
}

}  // namespace accel::rt::train
