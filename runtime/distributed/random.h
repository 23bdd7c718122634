#ifndef ACCEL_RUNTIME_DISTRIBUTED_RANDOM_H_
#define ACCEL_RUNTIME_DISTRIBUTED_RANDOM_H_

#include <cstdint>
#include <string>
#include <vector>

#include <ATen/core/Generator.h>

#include "runtime/distributed/collectives.h"

// Seeding and random-state synchronization (catalog §6.6).
namespace accel::rt::distributed {

// `set_seed`: seeds torch's CPU generator and every CUDA device's (when there are devices) with
// `seed`, plus `process_index` when `device_specific`; `deterministic` turns on torch's
// deterministic algorithms. (Python's `random` and NumPy, which Accelerate also seeds, do not
// exist here; the runtime's own samplers take their seeds from the plan.) Returns the seed used.
uint64_t SetSeed(uint64_t seed, bool device_specific = false, int process_index = 0,
                 bool deterministic = false);

// `synchronize_rng_states`: for each type in order, reads the chosen generator's state and
// sets rank 0's on every rank. Types: `torch` (the CPU generator), `cuda` (the current
// device's; an error without CUDA), `generator` (`generator`, which must be given). Unknown
// names are an OperationError listing the valid ones; Accelerate's other accelerators (xla,
// npu, mlu, sdaa, musa, xpu, hpu, neuron) are an error saying they are not available.
// Collective, and checked before any collective starts.
void SynchronizeRngStates(Collectives& collectives, const std::vector<std::string>& rng_types,
                          at::Generator* generator = nullptr);

}  // namespace accel::rt::distributed

#endif  // ACCEL_RUNTIME_DISTRIBUTED_RANDOM_H_
