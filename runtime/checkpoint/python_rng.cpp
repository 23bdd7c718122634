#include "runtime/checkpoint/python_rng.h"

#include <vector>

namespace accel::rt::checkpoint {

// The reference generator's initialisation (Matsumoto and Nishimura, mt19937ar.c), which both
// Python's _randommodule.c and NumPy's legacy RandomState use.
MersenneState NumpySeededState(uint32_t seed) {
  MersenneState mt{};
  mt[0] = seed;
  for (uint32_t i = 1; i < kMersenneWords; ++i) mt[i] = 1812433253u * (mt[i - 1] ^ (mt[i - 1] >> 30)) + i;
  return mt;
}

MersenneState PythonSeededState(uint64_t seed) {
  // Python splits the seed into 32-bit words, least significant first; 0 is one word.
  std::vector<uint32_t> key;
  do {
    key.push_back(static_cast<uint32_t>(seed & 0xFFFFFFFFu));
    seed >>= 32;
  } while (seed != 0);
  MersenneState mt = NumpySeededState(19650218u);
  uint32_t i = 1, j = 0;
  const uint32_t n = kMersenneWords, length = static_cast<uint32_t>(key.size());
  for (uint32_t k = n > length ? n : length; k > 0; --k) {
    mt[i] = (mt[i] ^ ((mt[i - 1] ^ (mt[i - 1] >> 30)) * 1664525u)) + key[j] + j;
    ++i;
    ++j;
    if (i >= n) {
      mt[0] = mt[n - 1];
      i = 1;
    }
    if (j >= length) j = 0;
  }
  for (uint32_t k = n - 1; k > 0; --k) {
    mt[i] = (mt[i] ^ ((mt[i - 1] ^ (mt[i - 1] >> 30)) * 1566083941u)) - i;
    ++i;
    if (i >= n) {
      mt[0] = mt[n - 1];
      i = 1;
    }
  }
  mt[0] = 0x80000000u;  // non-zero initial array
  return mt;
}

}  // namespace accel::rt::checkpoint
