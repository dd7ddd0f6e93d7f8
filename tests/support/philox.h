#pragma once
/// @file philox.h
/// An independent Philox4x32-10 and the element mappings of api/OPS.md ("Random
/// numbers"), so the tests can check rand/randn bit for bit on every backend.

#include <array>
#include <cmath>
#include <cstdint>

namespace kiln::test {

/// Philox4x32 with 10 rounds (Salmon et al., SC'11), as in Random123.
inline std::array<uint32_t, 4> philox4x32_10(std::array<uint32_t, 4> ctr,
                                             std::array<uint32_t, 2> key) {
  for (int round = 0; round < 10; ++round) {
    if (round > 0) {
      key[0] += 0x9E3779B9u;
      key[1] += 0xBB67AE85u;
    }
    const uint64_t p0 = uint64_t{0xD2511F53u} * ctr[0];
    const uint64_t p1 = uint64_t{0xCD9E8D57u} * ctr[2];
    ctr = {static_cast<uint32_t>(p1 >> 32) ^ ctr[1] ^ key[0], static_cast<uint32_t>(p1),
           static_cast<uint32_t>(p0 >> 32) ^ ctr[3] ^ key[1], static_cast<uint32_t>(p0)};
  }
  return ctr;
}

/// Block `b` of the stream keyed by `seed`: counter (lo32(b), hi32(b), 0, 0).
inline std::array<uint32_t, 4> philox_block(uint64_t seed, uint64_t b) {
  return philox4x32_10({static_cast<uint32_t>(b), static_cast<uint32_t>(b >> 32), 0, 0},
                       {static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32)});
}

/// Element i of random_uniform(low=0, high=1) in float32.
inline float philox_uniform_float32(uint64_t seed, uint64_t offset, uint64_t i) {
  const auto w = philox_block(seed, offset + i / 4)[i % 4];
  return static_cast<float>(static_cast<double>(w >> 8) * 0x1p-24);
}

/// Element i of random_uniform(low=0, high=1) in float64.
inline double philox_uniform_float64(uint64_t seed, uint64_t offset, uint64_t i) {
  const auto w = philox_block(seed, offset + i / 2);
  const uint64_t lo = w[2 * (i % 2)], hi = w[2 * (i % 2) + 1];
  return static_cast<double>(((hi << 32) | lo) >> 11) * 0x1p-53;
}

/// Element i of random_normal(mean, std) in float64 (round it to the dtype).
inline double philox_normal(uint64_t seed, uint64_t offset, uint64_t i, double mean = 0,
                            double std = 1) {
  const auto w = philox_block(seed, offset + i / 2);
  const uint32_t a = w[2 * (i % 2)], c = w[2 * (i % 2) + 1];
  const double u1 = (static_cast<double>(a >> 8) + 1) * 0x1p-24;
  const double u2 = static_cast<double>(c >> 8) * 0x1p-24;
  const double z = std::sqrt(-2 * std::log(u1)) * std::cos(2 * M_PI * u2);
  return mean + std * z;
}

}  // namespace kiln::test
