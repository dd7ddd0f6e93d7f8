// The process-wide Philox generator: seeding, ranges, statistics, state save/restore,
// and bit-exact agreement with api/OPS.md's definition.
#include <cmath>

#include "support/kiln_test.h"
#include "support/philox.h"

namespace kiln {
namespace {

TEST(Random, ReferencePhiloxMatchesKnownAnswers) {
  // Random123's known-answer vectors for philox4x32-10: checks the tests' oracle.
  EXPECT_EQ(test::philox4x32_10({0, 0, 0, 0}, {0, 0}),
            (std::array<uint32_t, 4>{0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}));
  EXPECT_EQ(test::philox4x32_10({0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff},
                                {0xffffffff, 0xffffffff}),
            (std::array<uint32_t, 4>{0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}));
  EXPECT_EQ(test::philox4x32_10({0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344},
                                {0xa4093822, 0x299f31d0}),
            (std::array<uint32_t, 4>{0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}));
}

TEST(Random, ManualSeedReproduces) {
  manual_seed(42);
  auto a = rand({1000}).to_vector<float>();
  auto b = randn({100}).to_vector<float>();
  manual_seed(42);
  EXPECT_EQ(rand({1000}).to_vector<float>(), a);
  EXPECT_EQ(randn({100}).to_vector<float>(), b);
}

TEST(Random, ConsecutiveCallsAndDifferentSeedsDiffer) {
  manual_seed(1);
  auto a = rand({64}).to_vector<float>();
  auto b = rand({64}).to_vector<float>();
  EXPECT_NE(a, b);
  manual_seed(2);
  EXPECT_NE(rand({64}).to_vector<float>(), a);
}

TEST(Random, ManualSeedResetsTheOffsetAndEachCallAdvancesItByItsElementCount) {
  manual_seed(1234);
  EXPECT_EQ(generator_state().seed, 1234u);
  EXPECT_EQ(generator_state().offset, 0u);
  (void)rand({5});
  EXPECT_EQ(generator_state().offset, 5u);
  (void)randn({2, 3});
  EXPECT_EQ(generator_state().offset, 11u);
}

TEST(Random, RandIsBitExactWithTheCatalogueDefinition) {
  manual_seed(42);
  auto a = rand({10}).to_vector<float>();
  for (uint64_t i = 0; i < a.size(); ++i)
    EXPECT_EQ(a[i], test::philox_uniform_float32(42, 0, i)) << i;
  // The second call continues at the generator's offset.
  const auto state = generator_state();
  auto b = rand({7}).to_vector<float>();
  for (uint64_t i = 0; i < b.size(); ++i)
    EXPECT_EQ(b[i], test::philox_uniform_float32(42, state.offset, i)) << i;
  // float64 uses two words per element.
  manual_seed(7);
  auto d = rand({9}, float64).to_vector<double>();
  for (uint64_t i = 0; i < d.size(); ++i)
    EXPECT_EQ(d[i], test::philox_uniform_float64(7, 0, i)) << i;
}

TEST(Random, RandnMatchesTheCatalogueDefinition) {
  // Computed in float64 and rounded: at most a last-bit libm difference, so compare
  // within 2 float32 ulps.
  const uint64_t seed = 0x123456789abcdefull;  // both key words used
  manual_seed(seed);
  auto z = randn({11}).to_vector<float>();
  for (uint64_t i = 0; i < z.size(); ++i) {
    const double expected = test::philox_normal(seed, 0, i);
    EXPECT_NEAR(z[i], expected, 2.5e-7 * std::max(1.0, std::abs(expected))) << i;
  }
  manual_seed(seed);
  auto n = normal({6}, 3.0, 0.5, float64).to_vector<double>();
  for (uint64_t i = 0; i < n.size(); ++i)
    EXPECT_NEAR(n[i], test::philox_normal(seed, 0, i, 3.0, 0.5), 1e-12) << i;
}

TEST(Random, RandIsInTheHalfOpenUnitInterval) {
  manual_seed(3);
  for (DType d : {float32, float64, float16, bfloat16}) {
    auto x = rand({20000}, d);
    EXPECT_EQ(x.dtype(), d);
    auto v = x.to_vector<double>();
    double lo = 1, hi = 0;
    for (double e : v) {
      lo = std::min(lo, e);
      hi = std::max(hi, e);
    }
    EXPECT_GE(lo, 0.0) << d;
    // float32/float64 stay below 1; the half types may round the largest values up to 1.
    if (d == float32 || d == float64)
      EXPECT_LT(hi, 1.0) << d;
    else
      EXPECT_LE(hi, 1.0) << d;
    EXPECT_LT(lo, 0.01) << d;  // and it covers the interval
    EXPECT_GT(hi, 0.99) << d;
  }
}

TEST(Random, UniformRangeAndMean) {
  manual_seed(4);
  auto v = uniform({100000}, -3.0, 5.0).to_vector<double>();
  double sum = 0, lo = 1e9, hi = -1e9;
  for (double e : v) {
    sum += e;
    lo = std::min(lo, e);
    hi = std::max(hi, e);
  }
  EXPECT_GE(lo, -3.0);
  EXPECT_LT(hi, 5.0);
  // mean 1, std 8/sqrt(12) = 2.31; standard error 0.0073; 5 sigma = 0.037.
  EXPECT_NEAR(sum / v.size(), 1.0, 0.04);
}

/// Sample mean and standard deviation.
std::pair<double, double> moments(const std::vector<double>& v) {
  double mean = 0;
  for (double e : v) mean += e;
  mean /= v.size();
  double ss = 0;
  for (double e : v) ss += (e - mean) * (e - mean);
  return {mean, std::sqrt(ss / (v.size() - 1))};
}

TEST(Random, RandnMeanAndStd) {
  // n = 100000: the mean has standard error 1/sqrt(n) = 0.0032 and the std about
  // 1/sqrt(2n) = 0.0022; the bounds are 5 standard errors.
  manual_seed(5);
  auto [mean, sd] = moments(randn({100000}).to_vector<double>());
  EXPECT_NEAR(mean, 0.0, 0.016);
  EXPECT_NEAR(sd, 1.0, 0.011);
  auto [m2, s2] = moments(normal({100000}, -2.0, 3.0).to_vector<double>());
  EXPECT_NEAR(m2, -2.0, 0.048);
  EXPECT_NEAR(s2, 3.0, 0.033);
}

TEST(Random, GeneratorStateSaveAndRestore) {
  manual_seed(99);
  (void)rand({17});
  const GeneratorState saved = generator_state();
  auto a = randn({50}).to_vector<float>();
  auto b = rand({3, 3}).to_vector<float>();
  set_generator_state(saved);
  EXPECT_EQ(generator_state().seed, saved.seed);
  EXPECT_EQ(generator_state().offset, saved.offset);
  EXPECT_EQ(randn({50}).to_vector<float>(), a);
  EXPECT_EQ(rand({3, 3}).to_vector<float>(), b);
}

TEST(Random, NonFloatDTypesAreRefused) {
  EXPECT_KILN_ERROR(rand({3}, int64), "int64");
  EXPECT_KILN_ERROR(randn({3}, kbool), "bool");
}

}  // namespace
}  // namespace kiln

namespace kiln::test {
namespace {

TEST(Random, RandintCoversItsHalfOpenRangeUniformly) {
  manual_seed(11);
  Tensor k = randint(-3, 4, {7000});
  EXPECT_EQ(k.dtype(), int64);
  const std::vector<int64_t> v = k.to_vector<int64_t>();
  std::vector<int> counts(7, 0);
  for (int64_t x : v) {
    ASSERT_GE(x, -3);
    ASSERT_LT(x, 4);
    ++counts[static_cast<size_t>(x + 3)];
  }
  for (int c : counts) EXPECT_NEAR(c, 1000, 150) << "each value about 1/7 of the draws";
  EXPECT_EQ(randint(5, {3}, int32).dtype(), int32);
  EXPECT_KILN_ERROR(randint(2, 2, {3}), "below");
  manual_seed(11);
  EXPECT_EQ(randint(-3, 4, {7000}).to_vector<int64_t>(), v) << "seeded like every other draw";
}

}  // namespace
}  // namespace kiln::test
