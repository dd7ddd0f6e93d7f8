// The SDK headers every backend shares: Philox (known-answer tests), the half-type
// conversions (exhaustive and against a brute-force nearest-value reference) and the
// status helpers, and the generated attribute structs. Header-only, so tested here without the
// plugin.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <new>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "kiln/sdk/half.h"
#include "kiln/sdk/op_attrs.h"
#include "kiln/sdk/philox.h"
#include "kiln/sdk/status.h"
#include "plugin_fixture.h"

namespace kiln::test {
namespace {

using sdk::bfloat16;
using sdk::float16;

TEST(SdkPhilox, KnownAnswersFromRandom123) {
  // Random123's kat_vectors for philox4x32 with 10 rounds.
  const auto zero = sdk::philox4x32_10(0, 0, 0, 0, 0, 0);
  EXPECT_EQ(zero.w[0], 0x6627e8d5u);
  EXPECT_EQ(zero.w[1], 0xe169c58du);
  EXPECT_EQ(zero.w[2], 0xbc57ac4cu);
  EXPECT_EQ(zero.w[3], 0x9b00dbd8u);
  const uint32_t f = 0xffffffffu;
  const auto ones = sdk::philox4x32_10(f, f, f, f, f, f);
  EXPECT_EQ(ones.w[0], 0x408f276du);
  EXPECT_EQ(ones.w[1], 0x41c83b0eu);
  EXPECT_EQ(ones.w[2], 0xa20bc7c6u);
  EXPECT_EQ(ones.w[3], 0x6d5451fdu);
  const auto pi = sdk::philox4x32_10(0x243f6a88u, 0x85a308d3u, 0x13198a2eu, 0x03707344u,
                                     0xa4093822u, 0x299f31d0u);
  EXPECT_EQ(pi.w[0], 0xd16cfe09u);
  EXPECT_EQ(pi.w[1], 0x94fdccebu);
  EXPECT_EQ(pi.w[2], 0x5001e420u);
  EXPECT_EQ(pi.w[3], 0x24126ea1u);
  static_assert(sdk::philox4x32_10(0, 0, 0, 0, 0, 0).w[0] == 0x6627e8d5u,
                "usable in constant expressions");
}

TEST(SdkPhilox, BlockAndSeedLayout) {
  // Counter (lo32(b), hi32(b), 0, 0); key (lo32(seed), hi32(seed)).
  const uint64_t seed = 0x0123456789abcdefull, block = 0xfedcba9876543210ull;
  const auto a = sdk::philox_block(seed, block);
  const auto b = sdk::philox4x32_10(0x76543210u, 0xfedcba98u, 0, 0, 0x89abcdefu, 0x01234567u);
  EXPECT_EQ(std::memcmp(&a, &b, sizeof a), 0);
}

TEST(SdkPhilox, ValueMappingsStayInRange) {
  EXPECT_EQ(sdk::unit_float_from_word(0), 0.0f);
  EXPECT_EQ(sdk::unit_float_from_word(0xffffffffu), 1.0f - 0x1p-24f);
  EXPECT_LT(sdk::unit_double_from_words(0xffffffffu, 0xffffffffu), 1.0);
  EXPECT_EQ(sdk::uniform_f32_from_word(0, -3.0f, 5.0f), -3.0f);
  EXPECT_LT(sdk::uniform_f32_from_word(0xffffffffu, -3.0f, 5.0f), 5.0f);
  // u1 = 1 (largest word): radius 0, so exactly the mean; u1 smallest: finite.
  EXPECT_EQ(sdk::normal_from_words(0xffffffffu, 12345, 2.5, 3.0), 2.5);
  EXPECT_TRUE(std::isfinite(sdk::normal_from_words(0, 0, 0.0, 1.0)));
  EXPECT_NEAR(sdk::normal_from_words(0, 0, 0.0, 1.0), std::sqrt(-2 * std::log(0x1p-24)), 1e-12);
  // Element i uses word i % 4 of block offset + i / 4.
  const auto block = sdk::philox_block(77, 10 + 2);
  EXPECT_EQ(sdk::random_uniform_f32(77, 10, 9, 0.0f, 1.0f), sdk::unit_float_from_word(block.w[1]));
}

TEST(SdkHalf, EveryFloat16RoundTripsThroughFloat) {
  for (uint32_t bits = 0; bits <= 0xffff; ++bits) {
    const float16 h = float16::from_bits(static_cast<uint16_t>(bits));
    const float f = static_cast<float>(h);
    const bool nan = (bits & 0x7c00u) == 0x7c00u && (bits & 0x3ffu) != 0;
    ASSERT_EQ(std::isnan(f), nan) << std::hex << bits;
    if (nan) {
      ASSERT_TRUE(std::isnan(static_cast<float>(float16(f)))) << std::hex << bits;
    } else {
      ASSERT_EQ(float16(f).bits, bits) << std::hex << bits;
      ASSERT_EQ(float16(static_cast<double>(f)).bits, bits) << std::hex << bits;
    }
  }
  EXPECT_EQ(static_cast<float>(float16::from_bits(0x0001)), 0x1p-24f);  // smallest subnormal
  EXPECT_EQ(static_cast<float>(float16::from_bits(0x7bff)), 65504.0f);
}

// Nearest float16 to |x| (x finite, >= 0) by search over the ordered positive values,
// ties to the even bit pattern: an independent statement of round-to-nearest-even.
uint16_t reference_half_bits(double x) {
  if (x >= 65520.0) return 0x7c00;
  uint32_t lo = 0, hi = 0x7bff;
  while (lo < hi) {  // largest pattern whose value is <= x
    const uint32_t mid = (lo + hi + 1) / 2;
    if (static_cast<double>(static_cast<float>(float16::from_bits(static_cast<uint16_t>(mid)))) <=
        x)
      lo = mid;
    else
      hi = mid - 1;
  }
  if (lo == 0x7bff) return 0x7bff;  // x in [65504, 65520)
  const double below = static_cast<float>(float16::from_bits(static_cast<uint16_t>(lo)));
  const double above = static_cast<float>(float16::from_bits(static_cast<uint16_t>(lo + 1)));
  if (x - below < above - x) return static_cast<uint16_t>(lo);
  if (x - below > above - x) return static_cast<uint16_t>(lo + 1);
  return static_cast<uint16_t>((lo & 1) ? lo + 1 : lo);
}

TEST(SdkHalf, FloatAndDoubleToFloat16RoundToNearestEven) {
  uint32_t state = 12345;
  auto next = [&] {
    state = state * 1664525u + 1013904223u;
    return state;
  };
  for (int i = 0; i < 200000; ++i) {
    // Exponents around float16's range, random mantissas, both signs.
    const uint32_t exponent = 95 + next() % 50;  // 2^-32 .. 2^17
    const uint32_t bits = (next() & 0x80000000u) | (exponent << 23) | (next() & 0x7fffffu);
    float f;
    std::memcpy(&f, &bits, sizeof f);
    const uint16_t sign = (bits >> 31) ? 0x8000 : 0;
    ASSERT_EQ(float16(f).bits, sign | reference_half_bits(std::fabs(static_cast<double>(f)))) << f;
    // A double with bits below float precision: must round once, directly.
    const double d = static_cast<double>(f) * (1.0 + 0x1p-30 * static_cast<double>(next() % 7));
    ASSERT_EQ(float16(d).bits, (d < 0 ? 0x8000 : 0) | reference_half_bits(std::fabs(d))) << d;
  }
  // Exact ties go to even; values just past a tie go up.
  EXPECT_EQ(float16(1.0f + 0x1p-11f).bits, 0x3c00);
  EXPECT_EQ(float16(1.0f + 3 * 0x1p-11f).bits, 0x3c02);
  EXPECT_EQ(float16(1.0 + 0x1p-11 + 0x1p-40).bits, 0x3c01);
  EXPECT_EQ(float16(65519.0f).bits, 0x7bff);
  EXPECT_EQ(float16(65520.0f).bits, 0x7c00);
  EXPECT_EQ(float16(-1e30).bits, 0xfc00);
  EXPECT_EQ(float16(0x1p-25f).bits, 0x0000);  // tie between 0 and the smallest subnormal
  EXPECT_EQ(float16(0x1.8p-25f).bits, 0x0001);
  EXPECT_TRUE(std::isnan(static_cast<float>(float16(std::numeric_limits<double>::quiet_NaN()))));
}

// bfloat16 reference: the two neighbours are the truncated pattern and the next one.
uint16_t reference_bfloat16_bits(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, sizeof bits);
  const uint32_t truncated = bits >> 16;
  float below, above;
  const uint32_t below_bits = truncated << 16, above_bits = (truncated + 1) << 16;
  std::memcpy(&below, &below_bits, sizeof below);
  std::memcpy(&above, &above_bits, sizeof above);
  const double x = std::fabs(static_cast<double>(f));
  const double db = std::fabs(static_cast<double>(below)),
               da = std::fabs(static_cast<double>(above));
  if (x - db < da - x) return static_cast<uint16_t>(truncated);
  if (x - db > da - x) return static_cast<uint16_t>(truncated + 1);
  return static_cast<uint16_t>((truncated & 1) ? truncated + 1 : truncated);
}

TEST(SdkHalf, BFloat16RoundsToNearestEvenAndKeepsNaN) {
  for (uint64_t bits = 0; bits < (uint64_t{1} << 32); bits += 7919) {
    const uint32_t b = static_cast<uint32_t>(bits);
    if ((b & 0x7f800000u) == 0x7f800000u) continue;  // inf/NaN below
    if ((b & 0x7fffffffu) >= 0x7f7f8000u) continue;  // rounds up to inf: no finite neighbour
    float f;
    std::memcpy(&f, &b, sizeof f);
    ASSERT_EQ(bfloat16(f).bits, reference_bfloat16_bits(f)) << std::hex << b;
  }
  EXPECT_EQ(bfloat16(3.4e38f).bits, 0x7f80) << "overflow to inf";
  EXPECT_EQ(static_cast<float>(bfloat16(1.0f)), 1.0f);
  EXPECT_EQ(bfloat16(1.0f + 0x1p-8f).bits, 0x3f80) << "tie to even";
  EXPECT_EQ(bfloat16(1.0 + 0x1p-8 + 0x1p-40).bits, 0x3f81) << "double rounds once";
  const float nan = std::numeric_limits<float>::quiet_NaN();
  EXPECT_TRUE(std::isnan(static_cast<float>(bfloat16(nan))));
  // A signalling-looking NaN whose payload lives in the low bits must stay NaN.
  uint32_t low_payload = 0x7f800001u;
  float snan;
  std::memcpy(&snan, &low_payload, sizeof snan);
  EXPECT_TRUE(std::isnan(static_cast<float>(bfloat16(snan))));
  EXPECT_TRUE(std::isnan(static_cast<float>(float16(snan))));
}

TEST(SdkStatus, OwnsItsMessage) {
  std::string text = "kiln.add: something broke";
  kiln_status* s = sdk::make_status(KILN_STATUS_INVALID_ARGUMENT, text);
  text.assign("overwritten");
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(s->struct_size, sizeof(kiln_status));
  EXPECT_EQ(s->code, KILN_STATUS_INVALID_ARGUMENT);
  EXPECT_STREQ(s->message, "kiln.add: something broke");
  s->destroy(s);
}

TEST(SdkStatus, GuardTurnsExceptionsIntoStatuses) {
  auto code_and_message = [](kiln_status* s) {
    EXPECT_NE(s, nullptr);
    std::pair<int32_t, std::string> out{s->code, s->message};
    s->destroy(s);
    return out;
  };
  EXPECT_EQ(sdk::guard([] {}), nullptr);
  EXPECT_EQ(sdk::guard([]() -> kiln_status* { return nullptr; }), nullptr);
  const auto passed =
      code_and_message(sdk::guard([] { return sdk::make_status(KILN_STATUS_UNSUPPORTED, "x"); }));
  EXPECT_EQ(passed.first, KILN_STATUS_UNSUPPORTED);

  const auto kiln_error = code_and_message(sdk::guard("kiln.gather", [] {
    KILN_SDK_CHECK(1 + 1 == 3, KILN_STATUS_INVALID_ARGUMENT, "index ", 7, " out of range");
  }));
  EXPECT_EQ(kiln_error.first, KILN_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(kiln_error.second, "kiln.gather: index 7 out of range");

  const auto oom = code_and_message(sdk::guard([] { throw std::bad_alloc(); }));
  EXPECT_EQ(oom.first, KILN_STATUS_OUT_OF_MEMORY);
  const auto internal = code_and_message(sdk::guard([] { throw std::logic_error("bug"); }));
  EXPECT_EQ(internal.first, KILN_STATUS_INTERNAL);
  EXPECT_EQ(internal.second, "bug");
  const auto unknown = code_and_message(sdk::guard([] { throw 42; }));
  EXPECT_EQ(unknown.first, KILN_STATUS_INTERNAL);
  EXPECT_EQ(unknown.second, "unknown exception");
}

// The message of the sdk::Error that reading `Attrs` from `attrs` throws ("" if none).
template <class Attrs>
std::string attrs_error(const std::vector<kiln_attr>& attrs) {
  const kiln_op_args raw{sizeof raw, nullptr, 0, nullptr, 0, attrs.data(), attrs.size(), nullptr};
  try {
    Attrs::read(sdk::OpArgs(&raw));
  } catch (const sdk::Error& e) {
    EXPECT_EQ(e.code(), KILN_STATUS_INVALID_ARGUMENT);
    return e.what();
  }
  return "";
}

// kiln/sdk/op_attrs.h is generated from api/ops.json: each op's attributes by name,
// type, count and default, read in one call.
TEST(SdkAttrs, GeneratedStructsReadEveryAttributeByNameAndType) {
  const std::vector<kiln_attr> sgd = {
      float_attr("momentum", 0.9),  float_attr("lr", 0.1),   int_attr("first_step", 1),
      float_attr("dampening", 0.0), int_attr("nesterov", 0), float_attr("weight_decay", 5e-4)};
  const kiln_op_args raw{sizeof raw, nullptr, 0, nullptr, 0, sgd.data(), sgd.size(), nullptr};
  const sdk::attrs::sgd_step a = sdk::attrs::sgd_step::read(sdk::OpArgs(&raw));
  EXPECT_EQ(a.lr, 0.1);  // found by name, whatever the order
  EXPECT_EQ(a.momentum, 0.9);
  EXPECT_EQ(a.weight_decay, 5e-4);
  EXPECT_EQ(a.first_step, 1);
  EXPECT_EQ(a.nesterov, 0);

  const std::vector<kiln_attr> missing(sgd.begin(), sgd.end() - 1);
  EXPECT_EQ(attrs_error<sdk::attrs::sgd_step>(missing), "missing attribute 'weight_decay'");
  std::vector<kiln_attr> mistyped = sgd;
  mistyped[1] = int_attr("lr", 1);
  EXPECT_EQ(attrs_error<sdk::attrs::sgd_step>(mistyped), "attribute 'lr' must be FLOAT");

  // INTS carry their count; the optional precision has the catalogue's default.
  const int64_t one[3] = {1, 1, 1}, zero[2] = {0, 0};
  std::vector<kiln_attr> conv = {ints_attr("stride", one, 2), ints_attr("padding", zero),
                                 ints_attr("dilation", one, 2), int_attr("groups", 1)};
  const kiln_op_args conv_raw{sizeof conv_raw, nullptr,     0,      nullptr, 0,
                              conv.data(),     conv.size(), nullptr};
  const sdk::attrs::conv2d c = sdk::attrs::conv2d::read(sdk::OpArgs(&conv_raw));
  EXPECT_STREQ(c.precision, "highest");
  EXPECT_EQ(c.padding[1], 0);
  conv[0] = ints_attr("stride", one);
  EXPECT_EQ(attrs_error<sdk::attrs::conv2d>(conv), "attribute 'stride' must hold 2 values, got 3");
  static_assert(std::is_same_v<sdk::attrs::conv2d_backward_weight, sdk::attrs::conv2d>,
                "ops with one attribute list share one struct");
}

// An attribute a caller may leave out (a vendor op's, or one a later catalogue entry
// added) reads as its default when absent, of every scalar type, and is still
// type-checked when present.
TEST(SdkOpArgs, OptionalAttributesOfEveryScalarTypeFallBackToTheirDefaults) {
  const std::vector<kiln_attr> passed = {float_attr("beta", 2.5), int_attr("dim", 3),
                                         string_attr("mode", "tanh")};
  const kiln_op_args raw{sizeof raw, nullptr, 0, nullptr, 0, passed.data(), passed.size(), nullptr};
  const sdk::OpArgs args(&raw);
  EXPECT_EQ(args.attr_float_or("beta", 1.0), 2.5);
  EXPECT_EQ(args.attr_int_or("dim", -1), 3);
  EXPECT_STREQ(args.attr_string_or("mode", "none"), "tanh");
  EXPECT_TRUE(args.has_attr("beta"));
  EXPECT_EQ(args.attr_float_or("threshold", 20.0), 20.0);
  EXPECT_EQ(args.attr_int_or("keepdim", 0), 0);
  EXPECT_STREQ(args.attr_string_or("precision", "highest"), "highest");
  EXPECT_FALSE(args.has_attr("threshold"));

  const kiln_op_args none{sizeof none, nullptr, 0, nullptr, 0, nullptr, 0, nullptr};
  EXPECT_EQ(sdk::OpArgs(&none).attr_float_or("beta", 1.0), 1.0);
  EXPECT_FALSE(sdk::OpArgs(&none).has_attr("beta"));

  const auto error_of = [&](auto read) -> std::string {
    try {
      read();
    } catch (const sdk::Error& e) {
      EXPECT_EQ(e.code(), KILN_STATUS_INVALID_ARGUMENT);
      return e.what();
    }
    return "";
  };
  EXPECT_EQ(error_of([&] { args.attr_float_or("dim", 1.0); }), "attribute 'dim' must be FLOAT");
  EXPECT_EQ(error_of([&] { args.attr_int_or("beta", 0); }), "attribute 'beta' must be INT");
  EXPECT_EQ(error_of([&] { args.attr_string_or("beta", "x"); }), "attribute 'beta' must be STRING");
}

}  // namespace
}  // namespace kiln::test
