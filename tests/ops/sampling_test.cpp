// kiln::multinomial and kiln::sample_logits on every device of the suite: the frequencies of many
// draws against the weights (with and without replacement), shapes, the generator, and refused
// input. Draws come from a fixed seed, so each check is one fixed outcome; the margins are 5
// standard deviations of a frequency over the number of draws.
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "ops/conformance.h"

namespace kiln::test {
namespace {

class Sampling : public DeviceTest {};

// How often each value in 0..categories-1 occurs in `samples`, as a fraction.
std::vector<double> frequencies(const Tensor& samples, int64_t categories) {
  std::vector<double> f(static_cast<size_t>(categories), 0.0);
  const std::vector<int64_t> v = samples.to_vector<int64_t>();
  for (int64_t s : v) {
    EXPECT_TRUE(s >= 0 && s < categories) << s;
    if (s >= 0 && s < categories) f[static_cast<size_t>(s)] += 1.0 / static_cast<double>(v.size());
  }
  return f;
}

TEST_P(Sampling, WithReplacementFollowsTheWeights) {
  manual_seed(11);
  const int64_t n = 20000;
  for (DType dtype : {float32, float64, bfloat16}) {
    SCOPED_TRACE(std::string(dtype_name(dtype)));
    // Weights need not sum to 1: 1 : 0 : 6 : 3.
    Tensor s = multinomial(make({1, 0, 6, 3}, {4}, dtype), n, true);
    EXPECT_EQ(s.dtype(), int64);
    EXPECT_EQ(s.device(), device());
    EXPECT_EQ(s.shape(), IntArrayRef({n}));
    const std::vector<double> f = frequencies(s, 4);
    const double want[] = {0.1, 0.0, 0.6, 0.3};
    for (int i = 0; i < 4; ++i)
      EXPECT_NEAR(f[size_t(i)], want[i], 5 * std::sqrt(want[i] * (1 - want[i]) / n)) << i;
  }
  // One distribution per row; a row with one category of weight gives only that one.
  Tensor rows = multinomial(make({0, 0, 1, 2, 0, 0}, {2, 3}), 5, true);
  EXPECT_EQ(rows.shape(), IntArrayRef({2, 5}));
  EXPECT_EQ(rows.to_vector<int64_t>(), (std::vector<int64_t>{2, 2, 2, 2, 2, 0, 0, 0, 0, 0}));
}

// Many samples of many categories are drawn in chunks (at most 2^24 comparisons each):
// 4196 draws of 4096 categories take two.
TEST_P(Sampling, ManyDrawsOfManyCategories) {
  manual_seed(12);
  std::vector<double> w(4096);
  for (size_t i = 0; i < w.size(); i += 2) w[i] = 1.0 + static_cast<double>(i % 7);
  Tensor s = multinomial(make(w, {4096}, float64), 4196, true);
  ASSERT_EQ(s.shape(), IntArrayRef({4196}));
  for (int64_t v : s.to_vector<int64_t>()) {
    ASSERT_TRUE(v >= 0 && v < 4096 && v % 2 == 0) << v;  // never an odd (weight 0) one
  }
}

TEST_P(Sampling, WithoutReplacementDrawsInProportionAndNeverTwice) {
  manual_seed(13);
  const int64_t rows = 20000;
  // The same weights 1 : 0 : 6 : 3 in every row; 3 draws take every non-zero category.
  Tensor w = make({1, 0, 6, 3}, {1, 4}).expand({rows, 4}).contiguous();
  Tensor s = multinomial(w, 3);
  ASSERT_EQ(s.shape(), IntArrayRef({rows, 3}));
  const std::vector<int64_t> v = s.to_vector<int64_t>();
  double first[4] = {0, 0, 0, 0}, first_2_then_3 = 0;
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t a = v[size_t(3 * r)], b = v[size_t(3 * r + 1)], c = v[size_t(3 * r + 2)];
    std::vector<int64_t> drawn = {a, b, c};
    std::sort(drawn.begin(), drawn.end());
    ASSERT_EQ(drawn, (std::vector<int64_t>{0, 2, 3})) << "row " << r;
    first[a] += 1.0 / rows;
    if (a == 2 && b == 3) first_2_then_3 += 1.0 / rows;
  }
  const double want[] = {0.1, 0.0, 0.6, 0.3};
  for (int i = 0; i < 4; ++i)
    EXPECT_NEAR(first[i], want[i], 5 * std::sqrt(want[i] * (1 - want[i]) / rows)) << i;
  // Successive draws: P(2 first, then 3) = 0.6 * 0.3 / (1 + 3) = 0.45.
  EXPECT_NEAR(first_2_then_3, 0.45, 5 * std::sqrt(0.45 * 0.55 / rows));
  // One distribution, as many draws as categories: a permutation.
  Tensor p = multinomial(make({4, 1, 2, 3, 5}, {5}), 5);
  std::vector<int64_t> perm = p.to_vector<int64_t>();
  std::sort(perm.begin(), perm.end());
  EXPECT_EQ(perm, (std::vector<int64_t>{0, 1, 2, 3, 4}));
}

TEST_P(Sampling, TheSeedGivesTheSameDraws) {
  Tensor w = make({0.2, 0.5, 0.3}, {3});
  manual_seed(3);
  const std::vector<int64_t> a = multinomial(w, 50, true).to_vector<int64_t>();
  const std::vector<int64_t> b = multinomial(w, 3).to_vector<int64_t>();
  manual_seed(3);
  EXPECT_EQ(multinomial(w, 50, true).to_vector<int64_t>(), a);
  EXPECT_EQ(multinomial(w, 3).to_vector<int64_t>(), b);
}

TEST_P(Sampling, RefusesWhatIsNotADistribution) {
  const double inf = std::numeric_limits<double>::infinity();
  const double nan = std::numeric_limits<double>::quiet_NaN();
  EXPECT_KILN_ERROR(multinomial(make({0.5, -0.1}, {2}), 1), "negative weight");
  EXPECT_KILN_ERROR(multinomial(make({0.5, inf}, {2}), 1, true), "inf, NaN");
  EXPECT_KILN_ERROR(multinomial(make({nan, 1.0}, {2}), 1), "inf, NaN");
  EXPECT_KILN_ERROR(multinomial(make({1, 1, 0, 0}, {2, 2}), 1, true), "sum to 0");
  EXPECT_KILN_ERROR(multinomial(make({1, 1}, {2}), 3), "cannot draw 3 samples from 2");
  EXPECT_KILN_ERROR(multinomial(make({1, 0, 0}, {3}), 2), "fewer categories of non-zero");
  EXPECT_KILN_ERROR(multinomial(make({1, 1}, {1, 1, 2}), 1), "1-D", "3-D");
  EXPECT_KILN_ERROR(multinomial(make({1, 1}, {2}, int64), 1), "float tensor");
  EXPECT_KILN_ERROR(multinomial(make({1, 1}, {2}), 0), "positive");
  EXPECT_KILN_ERROR(multinomial(zeros({0}, opts()), 1, true), "no categories");
  EXPECT_KILN_ERROR(multinomial(Tensor(), 1), "undefined");
  // No distributions: no draws (as PyTorch), not a division by zero.
  EXPECT_EQ(multinomial(zeros({0, 3}, opts()), 2, true).shape(), IntArrayRef({0, 2}));
  EXPECT_EQ(multinomial(zeros({0, 3}, opts()), 2).shape(), IntArrayRef({0, 2}));
  // With replacement, more draws than categories is fine.
  EXPECT_EQ(multinomial(make({1, 1}, {2}), 7, true).numel(), 7);
}

// sample_logits: temperature 0 is the argmax; top_k and top_p cut the distribution to
// its most likely tokens, which keep their relative odds.
TEST_P(Sampling, SampleLogitsCutsAsGenerationDoes) {
  manual_seed(21);
  // log of 0.5 : 0.3 : 0.15 : 0.05, and a second row in reverse order.
  const std::vector<double> p = {0.5, 0.3, 0.15, 0.05};
  std::vector<double> logits;
  for (double v : p) logits.push_back(std::log(v));
  for (auto it = p.rbegin(); it != p.rend(); ++it) logits.push_back(std::log(*it));
  const Tensor rows = make(logits, {2, 4});
  const Tensor greedy = sample_logits(rows, 0.0);
  EXPECT_EQ(greedy.shape(), IntArrayRef({2, 1}));
  EXPECT_EQ(greedy.to_vector<int64_t>(), (std::vector<int64_t>{0, 3}));
  const int64_t n = 4000;
  const Tensor first = make(std::vector<double>(logits.begin(), logits.begin() + 4), {4});
  auto draws = [&](double temperature, int64_t top_k, double top_p) {
    std::vector<double> f(4, 0.0);
    for (int64_t i = 0; i < n; ++i) {
      const Tensor t = sample_logits(first, temperature, top_k, top_p);
      EXPECT_EQ(t.shape(), IntArrayRef({1}));
      f[static_cast<size_t>(t.item<int64_t>())] += 1.0 / static_cast<double>(n);
    }
    return f;
  };
  const double margin = 5 * std::sqrt(0.25 / static_cast<double>(n));
  // top_k 2: 0.5 : 0.3 renormalized.
  std::vector<double> f = draws(1.0, 2, 1.0);
  EXPECT_NEAR(f[0], 0.625, margin);
  EXPECT_NEAR(f[1], 0.375, margin);
  EXPECT_EQ(f[2] + f[3], 0.0);
  // top_p 0.7: the mass before token 2 is 0.8, so tokens 0 and 1 remain.
  f = draws(1.0, 0, 0.7);
  EXPECT_NEAR(f[0], 0.625, margin);
  EXPECT_EQ(f[2] + f[3], 0.0);
  // Temperature 2 flattens: p^(1/2) normalized.
  f = draws(2.0, 0, 1.0);
  double z = 0;
  for (double v : p) z += std::sqrt(v);
  for (size_t i = 0; i < 4; ++i) EXPECT_NEAR(f[i], std::sqrt(p[i]) / z, margin) << i;
  EXPECT_KILN_ERROR(sample_logits(first, -1.0), "temperature");
  EXPECT_KILN_ERROR(sample_logits(first, 1.0, -2), "top_k");
  EXPECT_KILN_ERROR(sample_logits(first, 1.0, 0, 0.0), "top_p");
  EXPECT_KILN_ERROR(sample_logits(make({1, 2}, {1, 1, 2}), 1.0), "[vocab]");
  const double inf = std::numeric_limits<double>::infinity();
  EXPECT_KILN_ERROR(sample_logits(make({-inf, -inf}, {2}), 1.0), "inf, NaN");
}

KILN_INSTANTIATE_FOR_EVERY_DEVICE(Sampling);

}  // namespace
}  // namespace kiln::test
