#include "runtime/engine/shard_reductions.h"

#include <ATen/ATen.h>

#include <exception>
#include <stdexcept>

#include <fmt/format.h>

namespace accel::rt::train {

ShardReductions::ShardReductions(const std::vector<FlatUnit>& units, ShardGroups& groups,
                                 bool whole_gradients, int64_t bucket_elements)
    : units_(units), groups_(groups), whole_gradients_(whole_gradients) {
  int64_t filled = 0;
  for (size_t u = units_.size(); u-- > 0;) {
    const int64_t size = units_[u].padded;
    const bool alone = size >= kAloneElements;
    if (buckets_.empty() ||
        (filled > 0 && (alone || filled >= kAloneElements || filled + size > bucket_elements))) {
      buckets_.emplace_back();
      filled = 0;
    }
    buckets_.back().push_back(u);
    filled += size;
  }
  flats_.resize(units_.size());
  inputs_.resize(buckets_.size());
  outputs_.resize(buckets_.size());
  pending_.resize(buckets_.size());
}

ShardReductions::~ShardReductions() {
  for (std::unique_ptr<distributed::PendingWork>& work : pending_) {
    if (!work) continue;
    try {
      work->Wait();
    } catch (const std::exception&) {
      // Reported by the Finish that saw it, or the job is stopping already.
    }
  }
}

void ShardReductions::Begin() {
  for (at::Tensor& flat : flats_) flat = at::Tensor();
  for (size_t b = 0; b < buckets_.size(); ++b) {
    inputs_[b] = at::Tensor();
    outputs_[b] = at::Tensor();
  }
  launched_ = 0;
}

void ShardReductions::Ready(size_t unit, at::Tensor flat) {
  flats_.at(unit) = std::move(flat);
  while (launched_ < buckets_.size()) {
    for (size_t u : buckets_[launched_])
      if (!flats_[u].defined()) return;
    Launch(launched_++);
  }
}

void ShardReductions::Launch(size_t bucket) {
  const std::vector<size_t>& members = buckets_[bucket];
  const int64_t shards = groups_.shard_count();
  // A reduce-scatter hands chunk r of its input to rank r: the bucket's input is every unit's
  // chunk r, end to end, for r = 0, 1, ..., so rank r receives exactly its shards.
  int64_t shard_elements = 0;
  std::vector<at::Tensor> chunks;
  for (size_t u : members) {
    shard_elements += units_[u].shard_size;
    chunks.push_back(flats_[u].view({shards, units_[u].shard_size}));
  }
  inputs_[bucket] = chunks.size() == 1 ? flats_[members[0]] : at::cat(chunks, 1).view({-1});
  outputs_[bucket] = at::empty({shard_elements}, inputs_[bucket].options());
  pending_[bucket] = groups_.ReduceScatterSumAsync(inputs_[bucket], outputs_[bucket]);
}

std::vector<ShardReductions::Reduced> ShardReductions::Finish() {
  if (launched_ < buckets_.size()) {
    for (size_t u = 0; u < units_.size(); ++u) {
      if (!flats_[u].defined())
        throw std::logic_error(fmt::format("the gradient of unit {} was not reduced", u));
    }
  }
  std::vector<Reduced> reduced(units_.size());
  std::exception_ptr failure;
  for (size_t b = 0; b < buckets_.size(); ++b) {
    try {
      std::unique_ptr<distributed::PendingWork> work = std::move(pending_[b]);
      work->Wait();
    } catch (...) {
      if (!failure) failure = std::current_exception();
      continue;
    }
    int64_t offset = 0;
    for (size_t u : buckets_[b]) {
      const FlatUnit& unit = units_[u];
      reduced[u].shard = outputs_[b].narrow(0, offset, unit.shard_size);
      if (whole_gradients_) reduced[u].whole = flats_[u];
      offset += unit.shard_size;
    }
  }
  for (at::Tensor& flat : flats_) flat = at::Tensor();
  for (size_t b = 0; b < buckets_.size(); ++b) inputs_[b] = at::Tensor();
  if (failure) std::rethrow_exception(failure);
  return reduced;
}

}  // namespace accel::rt::train
