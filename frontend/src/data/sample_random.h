#pragma once
// Counter-based randomness for the data pipeline: every random choice is a pure
// function of its coordinates (seed, epoch, index, ...), so it does not depend on
// the order in which batches are prepared, on the thread preparing them, or on the
// global generator in random.h. SplitMix64 (Steele, Lea, Flood 2014) is the mixer:
// fixed arithmetic, identical on every platform and standard library.

#include <cstdint>

namespace kiln::data::detail {

inline uint64_t splitmix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

/// A 64-bit hash of a (salt, a, b, c) tuple; the salt separates the streams of
/// different users (shuffling, flipping, ...).
inline uint64_t hash_coordinates(uint64_t salt, uint64_t a, uint64_t b, uint64_t c = 0) {
  uint64_t h = splitmix64(salt);
  h = splitmix64(h ^ a);
  h = splitmix64(h ^ b);
  return splitmix64(h ^ c);
}

/// A uniform double in [0, 1) from the top 53 bits of `bits`.
inline double unit_interval(uint64_t bits) { return static_cast<double>(bits >> 11) * 0x1.0p-53; }

/// A SplitMix64 stream, for sequences of choices (a Fisher-Yates shuffle).
class SplitMixStream {
 public:
  explicit SplitMixStream(uint64_t state) : state_(state) {}
  uint64_t next() {
    state_ += 0x9E3779B97F4A7C15ull;
    uint64_t z = state_;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  /// Uniform in [0, bound), bound >= 1, without modulo bias (rejection sampling).
  uint64_t below(uint64_t bound) {
    const uint64_t threshold = (0 - bound) % bound;  // 2^64 mod bound
    for (;;) {
      uint64_t r = next();
      if (r >= threshold) return r % bound;
    }
  }

 private:
  uint64_t state_;
};

inline constexpr uint64_t kShuffleSalt = 0x53485546464C4531ull;  // "SHUFFLE1"
inline constexpr uint64_t kFlipSalt = 0x48464C4950303031ull;     // "HFLIP001"

}  // namespace kiln::data::detail
