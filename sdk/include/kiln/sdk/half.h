// kiln/sdk/half.h — float16 and bfloat16 storage types with exact conversions.
//
// Kiln stores half-precision tensors as raw 16-bit patterns and computes in float32.
// These two structs are those patterns plus the conversions every backend must agree
// on: to half, round to nearest, ties to even, with overflow to ±inf, subnormals kept,
// and NaN kept NaN (quiet, sign preserved); from half, exact.
//
// @code
//   kiln::sdk::float16 h(3.14159f);        // rounds once, to nearest even
//   float f = static_cast<float>(h);       // 3.140625f, exact
//   auto b = kiln::sdk::bfloat16(1e40);    // from double: rounds once (here to +inf)
// @endcode
//
// Conversions from double round once, directly to the 16-bit format (not through a
// float32 that would round twice): OPS.md's kiln.copy from float64 demands it.
// Everything here is constexpr-free plain arithmetic and runs on a GPU as well
// (KILN_HOST_DEVICE).
#ifndef KILN_SDK_HALF_H
#define KILN_SDK_HALF_H

#include <cstdint>
#include <cstring>

#include "kiln/sdk/host_device.h"

namespace kiln::sdk {

namespace detail {

KILN_HOST_DEVICE inline uint32_t float_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}

KILN_HOST_DEVICE inline float bits_float(uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

// Rounds `d` to float32 "to odd": truncate toward zero, then set the last bit when the
// result is inexact. A value rounded to odd at 24 bits and then to nearest-even at
// 11 (float16) or 8 (bfloat16) bits gives the same result as one rounding of the
// double, because float32 keeps at least two more bits than either target at every
// exponent both can represent.
KILN_HOST_DEVICE inline uint32_t round_to_odd_float_bits(double d) {
  const float nearest = static_cast<float>(d);
  uint32_t bits = float_bits(nearest);
  const double back = static_cast<double>(nearest);
  if (back != d && d == d) {  // inexact (and not NaN)
    const double mag_back = back < 0 ? -back : back;
    const double mag_d = d < 0 ? -d : d;
    if (mag_back > mag_d) bits -= 1;  // rounded away from zero: step back toward zero
    bits |= 1u;
  }
  return bits;
}

KILN_HOST_DEVICE inline uint16_t float_bits_to_half_bits(uint32_t x) {
  const uint16_t sign = static_cast<uint16_t>((x >> 16) & 0x8000u);
  x &= 0x7fffffffu;
  if (x >= 0x7f800000u) {  // inf or NaN; NaN keeps its top payload bits and is quieted
    if (x == 0x7f800000u) return static_cast<uint16_t>(sign | 0x7c00u);
    return static_cast<uint16_t>(sign | 0x7e00u | ((x >> 13) & 0x3ffu));
  }
  // 65520 = halfway between 65504 (the largest half) and 2^16; ties-to-even goes up.
  if (x >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);
  const uint32_t exponent = x >> 23;
  if (exponent >= 113) {  // normal half: |x| >= 2^-14
    uint32_t q = ((exponent - 112) << 10) | ((x & 0x7fffffu) >> 13);
    const uint32_t rest = x & 0x1fffu;
    if (rest > 0x1000u || (rest == 0x1000u && (q & 1u))) ++q;  // carries into the exponent
    return static_cast<uint16_t>(sign | q);
  }
  // Subnormal half (or zero): the result is round(|x| / 2^-24). |x| = m * 2^(e-150)
  // with the implicit bit in m, so |x| / 2^-24 = m >> (126 - e).
  if (exponent < 102) return sign;  // |x| < 2^-25: rounds to zero
  const uint32_t mantissa = (x & 0x7fffffu) | 0x800000u;
  const uint32_t shift = 126 - exponent;  // 14..24
  uint32_t q = mantissa >> shift;
  const uint32_t rest = mantissa & ((1u << shift) - 1u);
  const uint32_t halfway = 1u << (shift - 1);
  if (rest > halfway || (rest == halfway && (q & 1u))) ++q;  // may become the smallest normal
  return static_cast<uint16_t>(sign | q);
}

KILN_HOST_DEVICE inline float half_bits_to_float(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exponent = (h >> 10) & 0x1fu;
  const uint32_t mantissa = h & 0x3ffu;
  if (exponent == 0x1f) return bits_float(sign | 0x7f800000u | (mantissa << 13));
  if (exponent == 0) {
    // mantissa * 2^-24 is exact in float; the sign is put back by bits.
    const float magnitude = static_cast<float>(mantissa) * 0x1p-24f;
    return bits_float(sign | float_bits(magnitude));
  }
  return bits_float(sign | ((exponent + 112) << 23) | (mantissa << 13));
}

KILN_HOST_DEVICE inline uint16_t float_bits_to_bfloat16_bits(uint32_t x) {
  if ((x & 0x7fffffffu) > 0x7f800000u) {  // NaN: keep sign and top payload, force quiet
    return static_cast<uint16_t>((x >> 16) | 0x0040u);
  }
  x += 0x7fffu + ((x >> 16) & 1u);  // nearest, ties to even; overflow carries into inf
  return static_cast<uint16_t>(x >> 16);
}

}  // namespace detail

/// IEEE 754 binary16. Trivially copyable, 2 bytes, layout = the bit pattern.
struct float16 {
  uint16_t bits;

  float16() = default;
  KILN_HOST_DEVICE explicit float16(float f)
      : bits(detail::float_bits_to_half_bits(detail::float_bits(f))) {}
  KILN_HOST_DEVICE explicit float16(double d)
      : bits(detail::float_bits_to_half_bits(detail::round_to_odd_float_bits(d))) {}
  KILN_HOST_DEVICE explicit operator float() const { return detail::half_bits_to_float(bits); }
  KILN_HOST_DEVICE explicit operator double() const { return detail::half_bits_to_float(bits); }

  KILN_HOST_DEVICE static float16 from_bits(uint16_t b) {
    float16 h;
    h.bits = b;
    return h;
  }
};

/// bfloat16: the top 16 bits of a float32. Trivially copyable, 2 bytes.
struct bfloat16 {
  uint16_t bits;

  bfloat16() = default;
  KILN_HOST_DEVICE explicit bfloat16(float f)
      : bits(detail::float_bits_to_bfloat16_bits(detail::float_bits(f))) {}
  KILN_HOST_DEVICE explicit bfloat16(double d)
      : bits(detail::float_bits_to_bfloat16_bits(detail::round_to_odd_float_bits(d))) {}
  KILN_HOST_DEVICE explicit operator float() const {
    return detail::bits_float(static_cast<uint32_t>(bits) << 16);
  }
  KILN_HOST_DEVICE explicit operator double() const { return static_cast<float>(*this); }

  KILN_HOST_DEVICE static bfloat16 from_bits(uint16_t b) {
    bfloat16 h;
    h.bits = b;
    return h;
  }
};

static_assert(sizeof(float16) == 2 && sizeof(bfloat16) == 2, "half types must be 2 bytes");

}  // namespace kiln::sdk

#endif  // KILN_SDK_HALF_H
