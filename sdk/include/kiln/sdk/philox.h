// kiln/sdk/philox.h — the random numbers every Kiln backend must reproduce bit for bit.
//
// `kiln.random_uniform` and `kiln.random_normal` (share/doc/kiln/OPS.md, "Random
// numbers") are defined in terms of Philox4x32-10 (Salmon et al., SC'11) and a fixed
// mapping from the generator's 32-bit words to values. This header is that definition
// in code: a backend that calls these functions for element `i` produces the same
// numbers as every other backend, on the host or (through KILN_HOST_DEVICE) on a GPU.
//
// @code
//   // element i of a float32 random_uniform(seed, offset, low, high):
//   y[i] = kiln::sdk::random_uniform_f32(seed, offset, i, low, high);
//
//   // or, four elements per Philox block, as a vectorizing kernel would:
//   kiln::sdk::PhiloxBlock w = kiln::sdk::philox_block(seed, offset + i / 4);
//   for (int j = 0; j < 4; ++j) y[i + j] = kiln::sdk::uniform_f32_from_word(w.w[j], low, high);
// @endcode
//
// Reproducibility rule for callers: the value functions below do one multiply and
// one add that must not be fused into an FMA. Under nvcc they use the `_rn`
// intrinsics, which the compiler never contracts; host code must be compiled
// without FP contraction across them (GCC/Clang: `-ffp-contract=off`, or simply no
// FMA-enabling -march), which the in-tree plugins do.
#ifndef KILN_SDK_PHILOX_H
#define KILN_SDK_PHILOX_H

#include <cmath>
#include <cstdint>

#include "kiln/sdk/host_device.h"

namespace kiln::sdk {

/// The four 32-bit words one Philox block yields.
struct PhiloxBlock {
  uint32_t w[4];
};

inline constexpr uint32_t kPhiloxMultiplier0 = 0xD2511F53u;
inline constexpr uint32_t kPhiloxMultiplier1 = 0xCD9E8D57u;
inline constexpr uint32_t kPhiloxKeyIncrement0 = 0x9E3779B9u;
inline constexpr uint32_t kPhiloxKeyIncrement1 = 0xBB67AE85u;

/// Philox4x32 with 10 rounds on an explicit counter and key: the generator exactly as
/// published (and as Random123's known-answer tests check it).
KILN_HOST_DEVICE constexpr PhiloxBlock philox4x32_10(uint32_t c0, uint32_t c1, uint32_t c2,
                                                     uint32_t c3, uint32_t k0, uint32_t k1) {
  for (int round = 0; round < 10; ++round) {
    if (round > 0) {
      k0 += kPhiloxKeyIncrement0;
      k1 += kPhiloxKeyIncrement1;
    }
    const uint64_t p0 = static_cast<uint64_t>(kPhiloxMultiplier0) * c0;
    const uint64_t p1 = static_cast<uint64_t>(kPhiloxMultiplier1) * c2;
    const uint32_t n0 = static_cast<uint32_t>(p1 >> 32) ^ c1 ^ k0;
    const uint32_t n1 = static_cast<uint32_t>(p1);
    const uint32_t n2 = static_cast<uint32_t>(p0 >> 32) ^ c3 ^ k1;
    const uint32_t n3 = static_cast<uint32_t>(p0);
    c0 = n0;
    c1 = n1;
    c2 = n2;
    c3 = n3;
  }
  return PhiloxBlock{{c0, c1, c2, c3}};
}

/// Block `block` of the stream keyed by `seed`, as OPS.md fixes it: key words are the
/// low and high halves of `seed`, the counter is (lo32(block), hi32(block), 0, 0).
KILN_HOST_DEVICE constexpr PhiloxBlock philox_block(uint64_t seed, uint64_t block) {
  return philox4x32_10(static_cast<uint32_t>(block), static_cast<uint32_t>(block >> 32), 0u, 0u,
                       static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32));
}

/// u = (w >> 8) * 2^-24, in [0, 1); exact in float.
KILN_HOST_DEVICE constexpr float unit_float_from_word(uint32_t w) {
  return static_cast<float>(w >> 8) * 0x1p-24f;
}

/// u = ((hi << 32 | lo) >> 11) * 2^-53, in [0, 1); exact in double.
KILN_HOST_DEVICE constexpr double unit_double_from_words(uint32_t lo, uint32_t hi) {
  return static_cast<double>(((static_cast<uint64_t>(hi) << 32) | lo) >> 11) * 0x1p-53;
}

/// random_uniform for float32 (and, rounded afterwards, float16/bfloat16):
/// y = low + (high - low) * u, every step in float32. `low` and `high` are the
/// op's float64 attributes already rounded to float32 by the caller.
KILN_HOST_DEVICE inline float uniform_f32_from_word(uint32_t w, float low, float high) {
  return mul_add_unfused(high - low, unit_float_from_word(w), low);
}

/// random_uniform for float64: y = low + (high - low) * u in float64.
KILN_HOST_DEVICE inline double uniform_f64_from_words(uint32_t lo, uint32_t hi, double low,
                                                      double high) {
  return mul_add_unfused(high - low, unit_double_from_words(lo, hi), low);
}

/// 2π rounded to the nearest double.
inline constexpr double kTwoPi = 6.283185307179586476925286766559;

/// random_normal for every float dtype (the caller rounds the float64 result):
/// u1 = ((a >> 8) + 1) * 2^-24 in (0, 1], u2 = (c >> 8) * 2^-24,
/// z = sqrt(-2 ln u1) * cos(2π u2), y = mean + std * z, all in float64.
KILN_HOST_DEVICE inline double normal_from_words(uint32_t a, uint32_t c, double mean,
                                                 double std_dev) {
  const double u1 = static_cast<double>((a >> 8) + 1u) * 0x1p-24;
  const double u2 = static_cast<double>(c >> 8) * 0x1p-24;
  const double radius = ::sqrt(-2.0 * ::log(u1));
  const double z = mul_unfused(radius, ::cos(mul_unfused(kTwoPi, u2)));
  return mul_add_unfused(std_dev, z, mean);
}

/// Element `i` (row-major) of a float32/float16/bfloat16 random_uniform.
KILN_HOST_DEVICE inline float random_uniform_f32(uint64_t seed, uint64_t offset, uint64_t i,
                                                 float low, float high) {
  const PhiloxBlock b = philox_block(seed, offset + i / 4);
  return uniform_f32_from_word(b.w[i % 4], low, high);
}

/// Element `i` (row-major) of a float64 random_uniform.
KILN_HOST_DEVICE inline double random_uniform_f64(uint64_t seed, uint64_t offset, uint64_t i,
                                                  double low, double high) {
  const PhiloxBlock b = philox_block(seed, offset + i / 2);
  const unsigned pair = static_cast<unsigned>(i % 2) * 2;
  return uniform_f64_from_words(b.w[pair], b.w[pair + 1], low, high);
}

/// Element `i` (row-major) of a random_normal of any float dtype, in float64.
KILN_HOST_DEVICE inline double random_normal(uint64_t seed, uint64_t offset, uint64_t i,
                                             double mean, double std_dev) {
  const PhiloxBlock b = philox_block(seed, offset + i / 2);
  const unsigned pair = static_cast<unsigned>(i % 2) * 2;
  return normal_from_words(b.w[pair], b.w[pair + 1], mean, std_dev);
}

}  // namespace kiln::sdk

#endif  // KILN_SDK_PHILOX_H
