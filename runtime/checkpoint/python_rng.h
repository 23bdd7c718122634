#ifndef ACCEL_RUNTIME_CHECKPOINT_PYTHON_RNG_H_
#define ACCEL_RUNTIME_CHECKPOINT_PYTHON_RNG_H_

#include <array>
#include <cstdint>

// The Mersenne Twister states that Python's and NumPy's generators hold after `set_seed(seed)`
// (random.seed(seed); numpy.random.seed(seed)): what Accelerate's random_states_<rank>.pkl
// records besides torch's. Accel draws from neither, so a state it exports is the seeded one.
namespace accel::rt::checkpoint {

inline constexpr int kMersenneWords = 624;
using MersenneState = std::array<uint32_t, kMersenneWords>;

// random.seed(seed) for 0 <= seed < 2^64: MT19937's init_by_array over the seed's 32-bit words.
MersenneState PythonSeededState(uint64_t seed);

// numpy.random.seed(seed) for 0 <= seed < 2^32: MT19937's init_genrand.
MersenneState NumpySeededState(uint32_t seed);

}  // namespace accel::rt::checkpoint

#endif  // ACCEL_RUNTIME_CHECKPOINT_PYTHON_RNG_H_
