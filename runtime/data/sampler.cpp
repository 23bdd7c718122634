#include "runtime/data/sampler.h"

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>
#include <fmt/format.h>

#include <algorithm>
#include <string>

#include "llvm/Support/ErrorHandling.h"
#include "runtime/support/error.h"

namespace accel::rt::data {
namespace {

llvm::Error Validate(const ShardSpec& spec) {
  if (spec.dataset_size < 0) return Fail(fmt::format("dataset size {} is negative", spec.dataset_size));
  if (spec.batch_size < 1) {
    return Fail(fmt::format("batch_size must be at least 1, found {}", spec.batch_size));
  }
  if (spec.num_processes < 1) {
    return Fail(fmt::format("num_processes must be at least 1, found {}", spec.num_processes));
  }
  if (spec.process_index < 0 || spec.process_index >= spec.num_processes) {
    return Fail(fmt::format("process_index {} is outside [0, {})", spec.process_index, spec.num_processes));
  }
  if (spec.split_batches && spec.batch_size % spec.num_processes != 0) {
    int64_t next = (spec.batch_size / spec.num_processes + 1) * spec.num_processes;
    return Fail(
        fmt::format("split_batches: batch_size {} is not a multiple of num_processes {} [DL-001]; "
                    "each loader batch is split evenly across the processes, so use a multiple "
                    "such as {} or turn split_batches off",
                    spec.batch_size, spec.num_processes, next));
  }
  return llvm::Error::success();
}

std::vector<int64_t> ToVector(const at::Tensor& permutation) {
  const int64_t* data = permutation.data_ptr<int64_t>();
  return std::vector<int64_t>(data, data + permutation.numel());
}

// The generator Accelerate gives a shuffling sampler that has none: seeded with one int64 of
// the global RNG, here freshly seeded with `seed` (see the header).
at::Generator SynchronizedGenerator(uint64_t seed) {
  at::Generator global = at::make_generator<at::CPUGeneratorImpl>(seed);
  int64_t drawn = at::empty({}, at::kLong).random_(global).item<int64_t>();
  return at::make_generator<at::CPUGeneratorImpl>(static_cast<uint64_t>(drawn));
}

// torch's BatchSampler: consecutive runs of batch_size, the short tail kept unless drop_last.
BatchList BaseBatches(const std::vector<int64_t>& order, int64_t batch_size, bool drop_last) {
  BatchList batches;
  for (size_t begin = 0; begin < order.size(); begin += batch_size) {
    size_t end = std::min(order.size(), begin + static_cast<size_t>(batch_size));
    if (drop_last && end - begin < static_cast<size_t>(batch_size)) break;
    batches.emplace_back(order.begin() + begin, order.begin() + end);
  }
  return batches;
}

// Element i of `source` repeated end to end: the wrap-around Accelerate completes with.
int64_t Cyclic(const std::vector<int64_t>& source, size_t i) { return source[i % source.size()]; }

// BatchSamplerShard without split_batches.
BatchList ShardWhole(const BatchList& base, const ShardSpec& spec) {
  const size_t processes = spec.num_processes;
  const size_t rank = spec.process_index;
  const size_t batch_size = spec.batch_size;
  BatchList mine;
  // A round of P batches is handed out only once its last batch turns out full.
  size_t complete_rounds = 0;
  while ((complete_rounds + 1) * processes <= base.size() &&
         base[(complete_rounds + 1) * processes - 1].size() == batch_size) {
    mine.push_back(base[complete_rounds * processes + rank]);
    ++complete_rounds;
  }
  if (spec.drop_last || base.empty()) return mine;
  const size_t leftover = complete_rounds * processes;
  const size_t own = leftover + rank;
  if (!spec.even_batches) {
    if (own < base.size()) mine.push_back(base[own]);
    return mine;
  }
  if (own < base.size() && base[own].size() == batch_size) mine.push_back(base[own]);
  // The wrap-around source: the first P batches of the epoch, repeated.
  std::vector<int64_t> start;
  for (size_t i = 0; i < std::min(processes, base.size()); ++i) {
    start.insert(start.end(), base[i].begin(), base[i].end());
  }
  // Complete the short last batch (if any), then add whole batches until the round is full.
  size_t index = base.size();
  std::vector<int64_t> batch;
  if (base.back().size() < batch_size) {
    index = base.size() - 1;
    batch = base.back();
  }
  size_t cursor = 0;
  while (index % processes != 0 || !batch.empty()) {
    while (batch.size() < batch_size) batch.push_back(Cyclic(start, cursor++));
    if (index % processes == rank) mine.push_back(batch);
    batch.clear();
    ++index;
  }
  return mine;
}

// BatchSamplerShard with split_batches: every batch is cut into P slices.
BatchList ShardSplit(const BatchList& base, const ShardSpec& spec) {
  const size_t batch_size = spec.batch_size;
  const size_t slice = batch_size / spec.num_processes;
  const size_t begin = slice * spec.process_index;
  BatchList mine;
  for (const std::vector<int64_t>& batch : base) {
    if (batch.size() == batch_size) mine.emplace_back(batch.begin() + begin, batch.begin() + begin + slice);
  }
  if (spec.drop_last || base.empty() || base.back().size() == batch_size) return mine;
  std::vector<int64_t> last = base.back();
  if (!spec.even_batches) {
    if (last.size() > begin) {
      mine.emplace_back(last.begin() + begin, last.begin() + std::min(last.size(), begin + slice));
    }
    return mine;
  }
  // Complete the last batch from the first one, repeated.
  const std::vector<int64_t>& first = base.front();
  for (size_t i = 0; last.size() < batch_size; ++i) last.push_back(Cyclic(first, i));
  mine.emplace_back(last.begin() + begin, last.begin() + begin + slice);
  return mine;
}

// DataLoaderDispatcher: process 0 reads steps of P base batches (one when split) and each
// process takes its contiguous share of the concatenation.
BatchList Dispatch(const BatchList& base, const ShardSpec& spec) {
  const size_t processes = spec.num_processes;
  const size_t rank = spec.process_index;
  const size_t per_step = spec.split_batches ? 1 : processes;
  std::vector<std::vector<int64_t>> steps;
  for (size_t begin = 0; begin < base.size(); begin += per_step) {
    size_t end = std::min(base.size(), begin + per_step);
    // An incomplete step only exists at the end; drop_last discards it.
    if (end - begin < per_step && spec.drop_last) break;
    std::vector<int64_t> step;
    for (size_t i = begin; i < end; ++i) step.insert(step.end(), base[i].begin(), base[i].end());
    steps.push_back(std::move(step));
  }
  BatchList mine;
  if (steps.empty()) return mine;
  // The first P indices of the epoch complete a last step that does not divide by P.
  std::vector<int64_t> first(steps.front().begin(),
                             steps.front().begin() + std::min(processes, steps.front().size()));
  for (size_t s = 0; s < steps.size(); ++s) {
    std::vector<int64_t>& step = steps[s];
    size_t share = step.size() / processes;
    if (s + 1 == steps.size() && !spec.drop_last && step.size() % processes != 0) {
      step.insert(step.end(), first.begin(), first.end());
      ++share;
    }
    size_t begin = std::min(step.size(), rank * share);
    size_t end = std::min(step.size(), begin + share);
    mine.emplace_back(step.begin() + begin, step.begin() + end);
  }
  return mine;
}

BatchList Shard(const std::vector<int64_t>& order, const ShardSpec& spec) {
  BatchList base = BaseBatches(order, spec.batch_size, spec.drop_last);
  // Accelerate leaves a single process's loader alone (dispatch of one slice is the same).
  if (spec.num_processes == 1) return base;
  if (spec.dispatch_batches) return Dispatch(base, spec);
  return spec.split_batches ? ShardSplit(base, spec) : ShardWhole(base, spec);
}

}  // namespace

std::vector<int64_t> EpochOrder(const ShardSpec& spec, int64_t epoch) {
  llvm::Expected<EpochSharder> sharder = EpochSharder::Create(spec);
  // An invalid spec here is a caller's bug, not a user mistake.
  if (!sharder) llvm::report_fatal_error(llvm::Twine("EpochOrder: ") + llvm::toString(sharder.takeError()));
  return sharder->Order(epoch);
}

llvm::Expected<EpochSharder> EpochSharder::Create(const ShardSpec& spec) {
  if (llvm::Error error = Validate(spec)) return error;
  EpochSharder sharder(spec);
  // The sizes alone decide the shape of an epoch: shard the identity order once to count.
  std::vector<int64_t> identity(spec.dataset_size);
  for (int64_t i = 0; i < spec.dataset_size; ++i) identity[i] = i;
  BatchList batches = Shard(identity, spec);
  for (const std::vector<int64_t>& batch : batches) {
    if (batch.empty()) {
      return Fail(
          fmt::format("process {} of {} would get an empty batch: {} samples cannot give every "
                      "process a share; use more samples or fewer processes",
                      spec.process_index, spec.num_processes, spec.dataset_size));
    }
  }
  sharder.batches_per_epoch_ = static_cast<int64_t>(batches.size());
  return sharder;
}

EpochSharder::EpochSharder(const EpochSharder& other)
    : spec_(other.spec_), batches_per_epoch_(other.batches_per_epoch_), next_epoch_(other.next_epoch_) {
  if (other.generator_.defined()) generator_ = other.generator_.clone();
}

EpochSharder& EpochSharder::operator=(const EpochSharder& other) {
  if (this != &other) *this = EpochSharder(other);
  return *this;
}

std::vector<int64_t> EpochSharder::Order(int64_t epoch) {
  const int64_t n = spec_.dataset_size;
  if (!spec_.shuffle) {
    std::vector<int64_t> order(n);
    for (int64_t i = 0; i < n; ++i) order[i] = i;
    return order;
  }
  if (spec_.use_seedable_sampler) {
    // SeedableRandomSampler reseeds its generator with seed + epoch before every epoch.
    at::Generator generator =
        at::make_generator<at::CPUGeneratorImpl>(spec_.seed + static_cast<uint64_t>(epoch));
    return ToVector(at::randperm(n, generator, at::kLong));
  }
  // One generator for the whole run; going back means starting over.
  if (!generator_.defined() || epoch < next_epoch_) {
    generator_ = SynchronizedGenerator(spec_.seed);
    next_epoch_ = 0;
  }
  // RandomSampler draws two permutations per epoch (see the header); skip earlier epochs.
  for (; next_epoch_ < epoch; ++next_epoch_) {
    at::randperm(n, generator_, at::kLong);
    at::randperm(n, generator_, at::kLong);
  }
  std::vector<int64_t> order = ToVector(at::randperm(n, generator_, at::kLong));
  at::randperm(n, generator_, at::kLong);
  next_epoch_ = epoch + 1;
  return order;
}

BatchList EpochSharder::Batches(int64_t epoch) { return Shard(Order(epoch), spec_); }

llvm::Expected<BatchList> ShardBatches(const ShardSpec& spec, int64_t epoch) {
  if (epoch < 0) return Fail(fmt::format("epoch {} is negative", epoch));
  llvm::Expected<EpochSharder> sharder = EpochSharder::Create(spec);
  if (!sharder) return sharder.takeError();
  return sharder->Batches(epoch);
}

}  // namespace accel::rt::data
