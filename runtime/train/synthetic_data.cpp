#include "runtime/train/synthetic_data.h"

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>

#include <cmath>
#include <stdexcept>
#include <string>

namespace accel::rt::train {
namespace {

// Distinct, reproducible streams for the data, its noise and each epoch's order: the plan's
// seed mixed with a purpose tag so changing one never shifts another.
at::Generator MakeGenerator(int64_t seed, int64_t stream) {
  uint64_t mixed = static_cast<uint64_t>(seed) * 0x9E3779B97F4A7C15ULL + static_cast<uint64_t>(stream);
  return at::make_generator<at::CPUGeneratorImpl>(mixed);
}

}  // namespace

SyntheticRegression::SyntheticRegression(const plan::BuildDataloader& spec, int rank, int world_size)
    : spec_(spec), rank_(rank), world_size_(world_size) {
  at::Generator generator = MakeGenerator(spec.seed, 0);
  features_ = at::randn({spec.samples, spec.features}, generator, at::kFloat);
  at::Tensor weights = at::randn({spec.features, spec.outputs}, generator, at::kFloat) /
                       std::sqrt(static_cast<double>(spec.features));
  targets_ = at::matmul(features_, weights);
  if (spec.noise > 0) targets_ += spec.noise * at::randn(targets_.sizes(), generator, at::kFloat);
  batch_features_ = at::empty({spec.batch_size, spec.features}, at::kFloat);
  batch_targets_ = at::empty({spec.batch_size, spec.outputs}, at::kFloat);
}

std::vector<int64_t> SyntheticRegression::ShardIndices(int64_t epoch) const {
  std::vector<int64_t> order(spec_.samples);
  if (spec_.shuffle) {
    at::Generator generator = MakeGenerator(spec_.seed, 1 + epoch);
    at::Tensor permutation = at::randperm(spec_.samples, generator, at::kLong);
    const int64_t* data = permutation.data_ptr<int64_t>();
    order.assign(data, data + spec_.samples);
  } else {
    for (int64_t i = 0; i < spec_.samples; ++i) order[i] = i;
  }
  // Wrap around so every rank gets the same count.
  int64_t total = (spec_.samples + world_size_ - 1) / world_size_ * world_size_;
  std::vector<int64_t> shard;
  for (int64_t i = rank_; i < total; i += world_size_) shard.push_back(order[i % spec_.samples]);
  return shard;
}

int64_t SyntheticRegression::batches_per_epoch() const {
  int64_t per_rank = (spec_.samples + world_size_ - 1) / world_size_;
  return (per_rank + spec_.batch_size - 1) / spec_.batch_size;
}

void SyntheticRegression::StartEpoch() {
  ++epoch_;
  std::vector<int64_t> shard = ShardIndices(epoch_);
  shard_ = at::tensor(shard, at::kLong);
  position_ = 0;
}

void SyntheticRegression::Restore(int64_t epoch, int64_t position) {
  if (epoch < 0) {
    // Nothing was drawn yet.
    epoch_ = -1;
    position_ = 0;
    return;
  }
  epoch_ = epoch - 1;
  StartEpoch();
  if (position < 0 || position > shard_.size(0)) {
    throw std::invalid_argument("data position " + std::to_string(position) + " is outside epoch " +
                                std::to_string(epoch) + " (" + std::to_string(shard_.size(0)) +
                                " samples on this rank)");
  }
  position_ = position;
}

std::pair<at::Tensor, at::Tensor> SyntheticRegression::Next() {
  if (epoch_ < 0 || position_ >= shard_.size(0)) StartEpoch();
  int64_t count = std::min<int64_t>(spec_.batch_size, shard_.size(0) - position_);
  at::Tensor indices = shard_.narrow(0, position_, count);
  position_ += count;
  // Gather into the reused batch buffers (fresh pages are expensive on these machines).
  at::Tensor x = batch_features_.narrow(0, 0, count);
  at::Tensor y = batch_targets_.narrow(0, 0, count);
  at::index_select_out(x, features_, 0, indices);
  at::index_select_out(y, targets_, 0, indices);
  return {x, y};
}

}  // namespace accel::rt::train
