#ifndef ACCEL_RUNTIME_DATA_SAMPLER_H_
#define ACCEL_RUNTIME_DATA_SAMPLER_H_

#include <cstdint>
#include <vector>

#include <ATen/core/Generator.h>

#include "llvm/Support/Error.h"

// Which dataset rows each process trains on, batch by batch, exactly as the DataLoader that
// Accelerate's `prepare_data_loader` returns yields them for a map-style dataset (catalog §3.7).
//
// Order of an epoch (before sharding):
//  * shuffle off: 0, 1, ..., N-1.
//  * use_seedable_sampler (SeedableRandomSampler): `torch.randperm(N, generator=g)` with
//    `g = torch.Generator().manual_seed(seed + epoch)`.
//  * shuffle without the seedable sampler: Accelerate gives the RandomSampler one generator,
//    seeded once (when the loader is prepared) with an int64 drawn from the global torch RNG,
//    and keeps it synchronized across ranks (rank 0's state is broadcast at every epoch start).
//    RandomSampler then calls randperm twice per epoch: one permutation it yields and one it
//    slices to zero length (`num_samples % N` == 0), which still advances the generator. We
//    reproduce that stream with the global RNG freshly seeded by `seed`:
//        s0 = torch.manual_seed(seed); torch.empty((), dtype=torch.int64).random_()
//        g  = torch.Generator().manual_seed(s0)
//        epoch e's order = the (2e+1)-th `torch.randperm(N, generator=g)` call.
//    This equals Accelerate whenever nothing else drew from the global RNG between
//    `set_seed(seed)` and `prepare()`; a real script usually does (model init), which makes the
//    Python order unreproducible anyway. Every rank computes the same order from (seed, epoch)
//    alone, so resume can start at any epoch (at the cost of 2e permutations to get there).
//    With one process Accelerate leaves a plain RandomSampler that reseeds from the global RNG
//    each epoch; we use the same synchronized stream there too.
//
// Sharding of the order into this process's batches (the base loader's batches are
// `batch_size` consecutive indices of the order, the last one short unless drop_last):
//  * num_processes == 1: the base batches unchanged.
//  * not dispatch, not split (BatchSamplerShard): process r takes base batches r, r+P, ... in
//    rounds of P whose last batch is full. What is left over: drop_last drops it; with
//    even_batches off, r takes its leftover batch if it has one (maybe short, maybe none);
//    with even_batches on, r keeps its leftover batch if full, and the short last batch and the
//    missing batches of the round are completed by wrapping around to the start of the epoch's
//    order, so every process gets the same number of full batches.
//  * not dispatch, split: every full base batch is cut into P slices of batch_size/P; the short
//    last batch (unless drop_last) is cut as far as it goes (even_batches off: processes whose
//    slice would be empty get nothing) or first completed from the start of the order.
//  * dispatch_batches (DataLoaderDispatcher): process 0 reads P base batches per step (one
//    when split) and every process takes its contiguous 1/P of their concatenation.
//    even_batches is ignored, as in Accelerate. drop_last drops a short or incomplete last
//    step; otherwise a last step whose size is not a multiple of P gets the first P indices of
//    the epoch appended and each process takes size/P + 1 of it. In Accelerate only process 0
//    reads and broadcasts; every rank can read the dataset in Accel, so ShardBatches returns
//    the indices a rank ends up with and the rank gathers them locally: same batches, no
//    broadcast.
namespace accel::rt::data {

struct ShardSpec {
  int64_t dataset_size = 0;
  // The DataLoader's batch_size as the user wrote it (split_batches divides it by P).
  int64_t batch_size = 0;
  bool shuffle = false;
  bool drop_last = false;
  int num_processes = 1;
  int process_index = 0;
  bool split_batches = false;
  bool even_batches = true;
  bool dispatch_batches = false;
  bool use_seedable_sampler = false;
  // data_seed, or the job's seed: the generator seed (see the order of an epoch above).
  uint64_t seed = 0;
};

// A list of batches, each a list of dataset indices.
using BatchList = std::vector<std::vector<int64_t>>;

// This process's batches for `epoch` (0-based), in order. A pure function of its arguments:
// every rank computes the same order. Errors: batch_size < 1, num_processes < 1, a
// process_index outside [0, num_processes), a negative size or epoch, split_batches with a
// batch_size that is not a multiple of num_processes (DL-001; Accelerate's dispatch path lets
// batch size 1 through and then yields empty batches, we refuse it too), and a process that
// would receive an empty batch (dispatch with fewer samples than processes).
llvm::Expected<BatchList> ShardBatches(const ShardSpec& spec, int64_t epoch);

// The order of `epoch` before sharding: 0..N-1, or the permutation described above. `spec`
// must be valid (ShardBatches checks it).
std::vector<int64_t> EpochOrder(const ShardSpec& spec, int64_t epoch);

// ShardBatches for a stream of epochs: consecutive epochs cost one permutation each instead
// of 2e for the non-seedable shuffle. Not thread-safe.
class EpochSharder {
 public:
  // Validates `spec` as ShardBatches does.
  static llvm::Expected<EpochSharder> Create(const ShardSpec& spec);
  // Copies get their own generator state (at::Generator alone would share it).
  EpochSharder(const EpochSharder& other);
  EpochSharder& operator=(const EpochSharder& other);
  EpochSharder(EpochSharder&&) = default;
  EpochSharder& operator=(EpochSharder&&) = default;

  // Same as ShardBatches(spec, epoch); `epoch` must be >= 0.
  BatchList Batches(int64_t epoch);
  // How many batches this process gets per epoch (the same in every epoch: the count depends
  // on the sizes, not on the order).
  int64_t batches_per_epoch() const { return batches_per_epoch_; }
  const ShardSpec& spec() const { return spec_; }

 private:
  friend std::vector<int64_t> EpochOrder(const ShardSpec& spec, int64_t epoch);
  explicit EpochSharder(const ShardSpec& spec) : spec_(spec) {}
  std::vector<int64_t> Order(int64_t epoch);

  ShardSpec spec_;
  int64_t batches_per_epoch_ = 0;
  // The synchronized generator of the non-seedable shuffle, positioned at the first draw of
  // epoch `next_epoch_`. Undefined until needed.
  at::Generator generator_;
  int64_t next_epoch_ = 0;
};

}  // namespace accel::rt::data

#endif  // ACCEL_RUNTIME_DATA_SAMPLER_H_
