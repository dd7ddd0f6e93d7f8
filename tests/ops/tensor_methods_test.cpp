// The PyTorch-habit tensor methods on every device: predicates, std/norm/any/all,
// flip/roll/repeat/tile/tril/triu/diag, scatter/scatter_add/index_add, cumsum/cumprod,
// sort/argsort/topk, nonzero/argwhere/where(cond)/masked_select/masked_scatter, unique,
// einsum, F::pad and
// F::interpolate. Each is checked against a plain-loop float64 reference or against
// answers printed by Debian's python3-torch 1.13.1 for the same cases
// (tests/ops/pytorch_reference.py, run by hand on 2026-11-26). Two differences are
// Kiln's choice: topk keeps input order among ties (PyTorch's is unspecified), and
// unique sorts NaN last with a count of its own.
#include <algorithm>
#include <cmath>
#include <limits>

#include "ops/conformance.h"

namespace kiln::test {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

class TensorMethods : public DeviceTest {};

TEST_P(TensorMethods, Predicates) {
  auto x = make({1, kNaN, kInf, -kInf, 0, -2}, {6});
  EXPECT_TRUE(matches(x.isnan(), {6}, {0, 1, 0, 0, 0, 0}));
  EXPECT_TRUE(matches(x.isinf(), {6}, {0, 0, 1, 1, 0, 0}));
  EXPECT_TRUE(matches(x.isfinite(), {6}, {1, 0, 0, 0, 1, 1}));
  EXPECT_EQ(x.isnan().dtype(), kbool);
  auto i = make({1, 2}, {2}, int64);
  EXPECT_TRUE(matches(i.isnan(), {2}, {0, 0}));
  EXPECT_TRUE(matches(i.isfinite(), {2}, {1, 1}));
}

TEST_P(TensorMethods, StdAndNorm) {
  auto x = random({3, 5}, 7, float64);
  Ref r = ref_of(x);
  EXPECT_TRUE(matches(
      x.std({1}),
      map_unary(reduce(r, {1}, false, [](const std::vector<double>& v) { return ref_var(v, 1); }),
                [](double v) { return std::sqrt(v); }),
      kFloat64Tol));
  auto norm_ref = [&](double p, Shape dims) {
    return reduce(r, dims, false, [p](const std::vector<double>& v) {
      double acc = 0;
      for (double e : v) {
        if (std::isinf(p))
          acc = std::max(acc, std::abs(e));
        else if (p == 0)
          acc += e != 0;
        else
          acc += std::pow(std::abs(e), p);
      }
      return std::isinf(p) || p == 0 ? acc : std::pow(acc, 1 / p);
    });
  };
  for (double p : {2.0, 1.0, 3.0, 0.0, kInf}) {
    SCOPED_TRACE("p " + std::to_string(p));
    EXPECT_TRUE(matches(x.norm(p), norm_ref(p, {}), kFloat64Tol));
    EXPECT_TRUE(matches(x.norm(p, {0}), norm_ref(p, {0}), kFloat64Tol));
  }
  EXPECT_KILN_ERROR(make({1, 2}, {2}, int64).norm(), "floating");
  EXPECT_KILN_ERROR(x.norm(-1), "p must be");
}

TEST_P(TensorMethods, NormOfZeroHasZeroGradient) {
  auto x = zeros({3}, opts(float64)).requires_grad_();
  x.norm().backward();
  EXPECT_TRUE(matches(x.grad(), {3}, {0, 0, 0}));
  auto y = make({3, 4}, {2}, float64).requires_grad_();
  y.norm().backward();
  EXPECT_TRUE(matches(y.grad(), {2}, {0.6, 0.8}, kFloat64Tol));
}

TEST_P(TensorMethods, AnyAll) {
  auto x = make({0, 0, 1, kNaN, 0, 0}, {2, 3});
  EXPECT_TRUE(matches(x.any(), {}, {1}));
  EXPECT_TRUE(matches(x.all(), {}, {0}));
  EXPECT_TRUE(matches(x.any({1}), {2}, {1, 1}));
  EXPECT_TRUE(matches(x.any({0}), {3}, {1, 0, 1}));
  EXPECT_TRUE(matches(x.all({0}, true), {1, 3}, {0, 0, 0}));
  EXPECT_EQ(x.any().dtype(), kbool);
  auto e = zeros({0, 2}, opts());
  EXPECT_TRUE(matches(e.any(), {}, {0}));
  EXPECT_TRUE(matches(e.all(), {}, {1}));
}

TEST_P(TensorMethods, FlipAndRoll) {
  auto x = make({0, 1, 2, 3, 4, 5}, {2, 3}, float32, Layout::Transposed);
  EXPECT_TRUE(matches(x.flip({1}), {2, 3}, {2, 1, 0, 5, 4, 3}));
  EXPECT_TRUE(matches(x.flip({0, -1}), {2, 3}, {5, 4, 3, 2, 1, 0}));
  EXPECT_FALSE(x.flip({}).shares_storage_with(x));
  EXPECT_KILN_ERROR(x.flip({1, -1}), "twice");
  EXPECT_TRUE(matches(x.roll({1}, {1}), {2, 3}, {2, 0, 1, 5, 3, 4}));
  EXPECT_TRUE(matches(x.roll({-1, 4}, {0, 1}), {2, 3}, {5, 3, 4, 2, 0, 1}));
  EXPECT_TRUE(matches(x.roll({2}), {2, 3}, {4, 5, 0, 1, 2, 3}));  // flattened
  EXPECT_KILN_ERROR(x.roll({1, 2}, {0}), "shift");
}

TEST_P(TensorMethods, ZeroDimensionalInputs) {
  auto s = make({3}, {});
  EXPECT_TRUE(matches(s.flip({0}), {}, {3}));
  EXPECT_TRUE(matches(s.roll({1}, {0}), {}, {3}));
  EXPECT_KILN_ERROR(s.flip({1}), "out of range");
  auto g = make({-4}, {}, float64).requires_grad_();
  g.norm(2, {0}).backward();
  EXPECT_TRUE(matches(g.grad(), {}, {-1}));
  auto coords = where(make({1}, {}, kbool));
  ASSERT_EQ(coords.size(), 1u);
  EXPECT_TRUE(matches(coords[0], {1}, {0}));
}

TEST_P(TensorMethods, NormOfHalfTypesAndOtherP) {
  auto h = make({300, 400}, {2}, float16);  // 300^2 overflows float16
  EXPECT_TRUE(matches(h.norm(), {}, {500}, kFloat16Tol));
  EXPECT_EQ(h.norm().dtype(), float16);
  auto z = zeros({3}, opts(float64)).requires_grad_();
  z.norm(3).backward();  // PyTorch's subgradient: 0, not NaN
  EXPECT_TRUE(matches(z.grad(), {3}, {0, 0, 0}));
  auto w = make({0, 2}, {2}, float64).requires_grad_();
  w.norm(0.5).backward();  // 0 < p < 1: 0 at the zero element, not inf
  EXPECT_TRUE(matches(w.grad(), {2}, {0, 1}, kFloat64Tol));
}

TEST_P(TensorMethods, OneHotAndRandperm) {
  namespace F = kiln::nn::functional;
  auto labels = make({2, 0, 1}, {3}, int64);
  EXPECT_TRUE(matches(F::one_hot(labels), {3, 3}, {0, 0, 1, 1, 0, 0, 0, 1, 0}));
  EXPECT_EQ(F::one_hot(labels, 4).shape(), IntArrayRef({3, 4}));
  EXPECT_KILN_ERROR(F::one_hot(labels, 2), "outside the classes");
  EXPECT_KILN_ERROR(F::one_hot(make({-1}, {1}, int64), 3), "outside the classes");
  EXPECT_KILN_ERROR(F::one_hot(zeros({0}, opts(int64))), "empty labels");
  manual_seed(5);
  auto p = randperm(50, opts(int64));
  auto sorted = p.to_vector<int64_t>();
  std::sort(sorted.begin(), sorted.end());
  std::vector<int64_t> expected(50);
  for (int64_t i = 0; i < 50; ++i) expected[static_cast<size_t>(i)] = i;
  EXPECT_EQ(sorted, expected);
  EXPECT_NE(p.to_vector<int64_t>(), expected);  // 1 chance in 50! to be the identity
  EXPECT_KILN_ERROR(randperm(300, opts(uint8)), "do not fit");
  EXPECT_KILN_ERROR(randperm(3, opts(float32)), "integer dtype");
}

TEST_P(TensorMethods, RepeatAndTile) {
  auto x = make({1, 2, 3}, {3});
  EXPECT_TRUE(matches(x.repeat({2}), {6}, {1, 2, 3, 1, 2, 3}));
  EXPECT_TRUE(matches(x.repeat({2, 2}), {2, 6}, {1, 2, 3, 1, 2, 3, 1, 2, 3, 1, 2, 3}));
  auto m = make({1, 2, 3, 4}, {2, 2});
  EXPECT_TRUE(matches(m.repeat({1, 2}), {2, 4}, {1, 2, 1, 2, 3, 4, 3, 4}));
  EXPECT_TRUE(matches(m.repeat({2, 1}), {4, 2}, {1, 2, 3, 4, 1, 2, 3, 4}));
  EXPECT_TRUE(matches(m.tile({2}), {2, 4}, {1, 2, 1, 2, 3, 4, 3, 4}));  // reps padded to [1, 2]
  EXPECT_EQ(m.repeat({0, 3}).shape(), IntArrayRef({0, 6}));
  EXPECT_KILN_ERROR(m.repeat({2}), "at least one per dimension");
  EXPECT_KILN_ERROR(m.repeat({2, -1}), ">= 0");
}

TEST_P(TensorMethods, TriangleAndDiagonal) {
  auto x = random({2, 3, 4}, 9);
  Ref r = ref_of(x);
  for (int64_t k : {-1, 0, 2}) {
    SCOPED_TRACE("k " + std::to_string(k));
    Ref lower = r, upper = r;
    for_each_index(r.shape, [&](const Shape& i, int64_t linear) {
      if (i[2] - i[1] > k) lower.values[static_cast<size_t>(linear)] = 0;
      if (i[2] - i[1] < k) upper.values[static_cast<size_t>(linear)] = 0;
    });
    EXPECT_TRUE(matches(x.tril(k), lower, kExact));
    EXPECT_TRUE(matches(x.triu(k), upper, kExact));
  }
  auto m = make({0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}, {3, 4});
  EXPECT_TRUE(matches(m.diag(), {3}, {0, 5, 10}));
  EXPECT_TRUE(matches(m.diag(1), {3}, {1, 6, 11}));
  EXPECT_TRUE(matches(m.diag(3), {1}, {3}));
  EXPECT_TRUE(matches(m.diag(-2), {1}, {8}));
  EXPECT_EQ(m.diag(5).numel(), 0);
  auto v = make({1, 2}, {2});
  EXPECT_TRUE(matches(v.diag(), {2, 2}, {1, 0, 0, 2}));
  EXPECT_TRUE(matches(v.diag(1), {3, 3}, {0, 1, 0, 0, 0, 2, 0, 0, 0}));
  EXPECT_TRUE(matches(v.diag(-1), {3, 3}, {0, 0, 0, 1, 0, 0, 0, 2, 0}));
  EXPECT_KILN_ERROR(x.diag(), "1-D or 2-D");
  EXPECT_KILN_ERROR(v.tril(), "at least 2");
}

TEST_P(TensorMethods, ScatterAddAndIndexAdd) {
  auto x = make({1, 1, 1, 1, 1, 1}, {2, 3});
  auto index = make({0, 1, 0, 1, 1, 1}, {2, 3}, int64);
  auto src = make({1, 2, 3, 4, 5, 6, 7, 8}, {2, 4});
  // y[index[i][j]][j] += src[i][j] (dim 0); src's last column is unused.
  EXPECT_TRUE(matches(x.scatter_add(0, index, src), {2, 3}, {2, 1, 4, 6, 9, 8}));
  EXPECT_TRUE(matches(x, {2, 3}, {1, 1, 1, 1, 1, 1}));  // out of place
  // At the op or at the next synchronization, as in BadInput.IndexSelectErrors.
  EXPECT_KILN_ERROR(x.scatter_add(0, make({2, 0}, {1, 2}, int64), src).to_vector<float>(),
                    "out of range");
  EXPECT_KILN_ERROR(x.scatter_add(0, index.to(float32), src), "int64 or int32");
  auto rows = make({0, 2, 0}, {3}, int64);
  auto s = make({1, 2, 3, 4, 5, 6}, {3, 2});
  auto base = zeros({3, 2}, opts());
  EXPECT_TRUE(matches(base.index_add(0, rows, s), {3, 2}, {6, 8, 0, 0, 3, 4}));
  EXPECT_KILN_ERROR(base.index_add(0, rows, make({1, 2}, {1, 2})), "one slice per index");
}

// Answers printed by python3-torch 1.13.1 (tests/ops/pytorch_reference.py).
TEST_P(TensorMethods, CumprodWithZeros) {
  auto x = make({2, 0, 3, 4, 1, -2, 0, 0}, {2, 4}, float64).requires_grad_();
  auto y = x.cumprod(1);
  EXPECT_TRUE(matches(y, {2, 4}, {2, 0, 0, 0, 1, -2, 0, 0}));
  // Past a line's first zero the gradient is 0; at it, the product of the others.
  (y * make({1, 2, 3, 4, 0.5, 1, -1, 2}, {2, 4}, float64)).sum().backward();
  EXPECT_TRUE(matches(x.grad(), {2, 4}, {1, 118, 0, 0, -1.5, 1, 2, 0}));
  auto i = make({3, -2, 4}, {3}, int32).cumprod(0);
  EXPECT_EQ(i.dtype(), int64);
  EXPECT_EQ(i.to_vector<int64_t>(), (std::vector<int64_t>{3, -6, -24}));
}

TEST_P(TensorMethods, MaskedScatterAndScatter) {
  auto a = make({1, 2, 3, 4, 5, 6}, {2, 3});
  auto mask = make({1, 0, 1}, {3}, kbool);  // broadcast over the rows
  EXPECT_TRUE(matches(a.masked_scatter(mask, make({10, 20, 30, 40, 50}, {5})), {2, 3},
                      {10, 2, 20, 30, 5, 40}));
  EXPECT_KILN_ERROR(a.masked_scatter(mask, make({10, 20, 30}, {3})), "selects 4", "has 3");
  EXPECT_KILN_ERROR(a.masked_scatter(mask.to(int64), make({10, 20, 30, 40}, {4})), "bool");
  Tensor b = a.clone();
  b.masked_scatter_(make({0, 0, 0}, {3}, kbool), make({7}, {1}));
  EXPECT_TRUE(matches(b, {2, 3}, {1, 2, 3, 4, 5, 6}));  // nothing selected
  auto z = zeros({3, 4}, opts());
  auto index = make({0, 1, 2, 0, 2, 0, 0, 1}, {2, 4}, int64);
  auto src = make({1, 2, 3, 4, 5, 6, 7, 8}, {2, 4});
  EXPECT_TRUE(matches(z.scatter(0, index, src), {3, 4}, {1, 6, 7, 4, 0, 2, 0, 8, 5, 0, 3, 0}));
  EXPECT_TRUE(matches(z.scatter(1, make({3, 0, 1}, {3, 1}, int64), 9.5), {3, 4},
                      {0, 0, 0, 9.5, 9.5, 0, 0, 0, 0, 9.5, 0, 0}));
  z.scatter_(1, make({2, 2, 2}, {3, 1}, int64), -1.0);
  EXPECT_TRUE(matches(z, {3, 4}, {0, 0, -1, 0, 0, 0, -1, 0, 0, 0, -1, 0}));
  // PyTorch leaves the winner of a position named twice unspecified; Kiln refuses.
  EXPECT_KILN_ERROR(z.scatter(1, make({1, 1}, {1, 2}, int64), make({1, 2}, {1, 2})), "2 times");
  // One scalar written twice is no conflict.
  EXPECT_TRUE(
      matches(zeros({3}, opts()).scatter(0, make({1, 1}, {2}, int64), 1.0), {3}, {0, 1, 0}));
  EXPECT_KILN_ERROR(z.scatter(0, index, src.to(float64)), "src is float64");
  // A written -0.0 stays -0.0; bool tensors scatter too (the mask-building idiom).
  auto negative_zero = zeros({1}, opts()).scatter(0, make({0}, {1}, int64), make({-0.0}, {1}));
  EXPECT_TRUE(std::signbit(negative_zero.to_vector<float>()[0]));
  auto flags = zeros({4}, opts(kbool));
  EXPECT_TRUE(matches(flags.scatter(0, make({1, 3}, {2}, int64), true), {4}, {0, 1, 0, 1}));
  EXPECT_TRUE(matches(flags.scatter(0, make({2, 0}, {2}, int64), make({1, 0}, {2}, kbool)), {4},
                      {0, 0, 1, 0}));
}

TEST_P(TensorMethods, CumsumIsExactForIntegers) {
  const double big = 4611686018427387904.0;  // 2^62
  auto i = make({big, 1, 1, -3}, {4}, int64);
  auto c = i.cumsum(0);
  EXPECT_EQ(c.dtype(), int64);
  EXPECT_EQ(c.to_vector<int64_t>(),
            (std::vector<int64_t>{int64_t{1} << 62, (int64_t{1} << 62) + 1, (int64_t{1} << 62) + 2,
                                  (int64_t{1} << 62) - 1}));
  EXPECT_EQ(make({1, 2, 3}, {3}, int32).cumsum(0).dtype(), int64);
  EXPECT_TRUE(matches(make({1, 0, 1}, {3}, kbool).cumsum(0), {3}, {1, 1, 2}));
  auto f = random({3, 4}, 11, float64, Layout::Transposed);
  Ref expected = ref_of(f);
  for (int64_t row = 0; row < 3; ++row)
    for (int64_t col = 1; col < 4; ++col)
      expected.values[static_cast<size_t>(row * 4 + col)] +=
          expected.values[static_cast<size_t>(row * 4 + col - 1)];
  EXPECT_TRUE(matches(f.cumsum(1), expected, kFloat64Tol));
  EXPECT_TRUE(matches(make({5}, {}).cumsum(0), {}, {5}));
  EXPECT_KILN_ERROR(f.cumsum(2), "dim");
}

TEST_P(TensorMethods, SortTiesAndNaN) {
  // torch.sort(stable=True) rules: ties in input order, NaN above every number.
  auto x = make({3, kNaN, 1, 3, -1, kNaN, 1}, {7});
  auto [v, i] = x.sort();
  EXPECT_TRUE(matches(v, {7}, {-1, 1, 1, 3, 3, kNaN, kNaN}));
  EXPECT_EQ(i.to_vector<int64_t>(), (std::vector<int64_t>{4, 2, 6, 0, 3, 1, 5}));
  auto [vd, id] = x.sort(0, true);
  EXPECT_TRUE(matches(vd, {7}, {kNaN, kNaN, 3, 3, 1, 1, -1}));
  EXPECT_EQ(id.to_vector<int64_t>(), (std::vector<int64_t>{1, 5, 0, 3, 2, 6, 4}));
  EXPECT_EQ(x.argsort().to_vector<int64_t>(), i.to_vector<int64_t>());
  auto [tv, ti] = x.topk(3);
  EXPECT_TRUE(matches(tv, {3}, {kNaN, kNaN, 3}));
  EXPECT_EQ(ti.to_vector<int64_t>(), (std::vector<int64_t>{1, 5, 0}));
  auto [sv, si] = x.topk(2, 0, /*largest=*/false);
  EXPECT_TRUE(matches(sv, {2}, {-1, 1}));
  EXPECT_EQ(si.to_vector<int64_t>(), (std::vector<int64_t>{4, 2}));
  EXPECT_KILN_ERROR(x.topk(8), "out of range");
}

TEST_P(TensorMethods, SortAlongEveryDimMatchesReference) {
  auto x = random({3, 4, 5}, 12, float32, Layout::Transposed);
  Ref r = ref_of(x);
  for (int64_t dim : {0, 1, 2}) {
    SCOPED_TRACE("dim " + std::to_string(dim));
    auto [v, i] = x.sort(dim);
    // Each line ascending, and values == x gathered at the indices.
    EXPECT_TRUE(matches(v, ref_gather(r, dim, ref_of(i)), kExact));
    Ref vr = ref_of(v);
    for_each_index(vr.shape, [&](const Shape& at, int64_t) {
      if (at[static_cast<size_t>(dim)] == 0) return;
      Shape before = at;
      --before[static_cast<size_t>(dim)];
      EXPECT_LE(vr.at(before), vr.at(at));
    });
  }
}

TEST_P(TensorMethods, NonzeroAndMasks) {
  auto x = make({0, 2, 0, 3, 0, -1}, {2, 3});
  EXPECT_TRUE(matches(x.nonzero(), {3, 2}, {0, 1, 1, 0, 1, 2}));
  EXPECT_TRUE(matches(argwhere(x), {3, 2}, {0, 1, 1, 0, 1, 2}));
  auto coords = where(x != 0);
  ASSERT_EQ(coords.size(), 2u);
  EXPECT_TRUE(matches(coords[0], {3}, {0, 1, 1}));
  EXPECT_TRUE(matches(coords[1], {3}, {1, 0, 2}));
  EXPECT_EQ(zeros({2, 3}, opts()).nonzero().shape(), IntArrayRef({0, 2}));
  EXPECT_EQ(ones({2, 2}, opts()).nonzero().size(0), 4);
  auto mask = x > 0;
  EXPECT_TRUE(matches(x.masked_select(mask), {2}, {2, 3}));
  EXPECT_TRUE(matches(x.masked_select(x == 100), {0}, {}));                 // empty mask
  EXPECT_TRUE(matches(x.masked_select(x == x), {6}, {0, 2, 0, 3, 0, -1}));  // full mask
  auto columns = make({1, 0, 1}, {3}, kbool);                               // broadcast over rows
  EXPECT_TRUE(matches(x.masked_select(columns), {4}, {0, 0, 3, -1}));
  EXPECT_KILN_ERROR(x.masked_select(x), "bool");
}

TEST_P(TensorMethods, Unique) {
  auto x = make({3, 1, 3, kNaN, 2, 1}, {2, 3});
  auto [values, inverse, counts] = unique(x);
  EXPECT_TRUE(matches(values, {4}, {1, 2, 3, kNaN}));
  EXPECT_TRUE(matches(inverse, {2, 3}, {2, 0, 2, 3, 1, 0}));
  EXPECT_TRUE(matches(counts, {4}, {2, 1, 2, 1}));
  auto ints = make({5, 5, 5}, {3}, int32);
  EXPECT_TRUE(matches(unique(ints).values, {1}, {5}));
  EXPECT_EQ(unique(zeros({0}, opts())).values.numel(), 0);
}

TEST_P(TensorMethods, GradientsFlowToTheInput) {
  auto x = random({3, 4}, 13, float64).requires_grad_();
  auto picked = x.masked_select(x > 0);
  picked.sum().backward();
  EXPECT_TRUE(
      matches(x.grad(), map_unary(ref_of(x), [](double v) { return v > 0 ? 1.0 : 0.0; }), kExact));
  auto y = random({5}, 14, float64).requires_grad_();
  auto [top, where_top] = y.topk(2);
  top.sum().backward();
  std::vector<double> expected(5, 0);
  for (int64_t k : where_top.to_vector<int64_t>()) expected[static_cast<size_t>(k)] = 1;
  EXPECT_TRUE(matches(y.grad(), {5}, expected));
}

TEST_P(TensorMethods, EinsumMatchesTheOpsItStandsFor) {
  auto a = random({3, 4}, 21, float64), b = random({4, 5}, 22, float64);
  auto c = random({5, 2}, 23, float64), v = random({4}, 24, float64);
  auto sq = random({4, 4}, 25, float64);
  auto ba = random({2, 3, 4}, 26, float64), bb = random({2, 4, 5}, 27, float64);
  EXPECT_TRUE(matches(einsum("ij,jk->ik", {a, b}), ref_of(matmul(a, b)), kFloat64Tol));
  EXPECT_TRUE(matches(einsum("ij,jk", {a, b}), ref_of(matmul(a, b)), kFloat64Tol));  // implicit
  EXPECT_TRUE(matches(einsum("bij,bjk->bik", {ba, bb}), ref_of(matmul(ba, bb)), kFloat64Tol));
  EXPECT_TRUE(
      matches(einsum("ij,jk,kl->il", {a, b, c}), ref_of(matmul(matmul(a, b), c)), kFloat64Tol));
  EXPECT_TRUE(matches(einsum("i,j->ij", {v, v}), ref_of(v.unsqueeze(1) * v), kFloat64Tol));
  EXPECT_TRUE(matches(einsum("i,i->", {v, v}), ref_of((v * v).sum()), kFloat64Tol));
  EXPECT_TRUE(matches(einsum("ii->", {sq}), ref_of(sq.diag().sum()), kFloat64Tol));
  EXPECT_TRUE(matches(einsum("ii->i", {sq}), ref_of(sq.diag()), kExact));
  EXPECT_TRUE(matches(einsum("ij->ji", {a}), ref_of(a.t()), kExact));
  EXPECT_TRUE(matches(einsum("ij->j", {a}), ref_of(a.sum({0})), kFloat64Tol));
  EXPECT_TRUE(matches(einsum("i j -> ", {a}), ref_of(a.sum()), kFloat64Tol));
  EXPECT_TRUE(matches(einsum("bij->bji", {ba}), ref_of(ba.transpose(1, 2)), kExact));
  EXPECT_KILN_ERROR(einsum("ij,jk->ik", {a}), "2 operands");
  EXPECT_KILN_ERROR(einsum("ijk->i", {a}), "3 labels");
  EXPECT_KILN_ERROR(einsum("ij,jk->ik", {a, a}), "sizes 4 and 3");
  EXPECT_KILN_ERROR(einsum("ij->iz", {a}), "in no operand");
  EXPECT_KILN_ERROR(einsum("ij->ii", {a}), "twice");
  // "..." (PyTorch's rules, checked with torch 1.13): batch dims, broadcast, summed.
  EXPECT_TRUE(matches(einsum("...ij,jk->...ik", {ba, b}), ref_of(matmul(ba, b)), kFloat64Tol));
  EXPECT_TRUE(matches(einsum("...ij,jk", {ba, b}), ref_of(matmul(ba, b)), kFloat64Tol));
  EXPECT_TRUE(
      matches(einsum("...ij,jk->ik", {ba, b}), ref_of(matmul(ba, b).sum({0})), kFloat64Tol));
  auto c1 = random({1, 3, 2}, 28, float64), d1 = random({4, 2, 1}, 29, float64);
  EXPECT_TRUE(matches(einsum("...ij,...jk->...ik", {c1, d1}), ref_of(matmul(c1, d1)), kFloat64Tol));
  EXPECT_TRUE(
      matches(einsum("b...,b...->b", {ba, ba}), ref_of((ba * ba).sum({1, 2})), kFloat64Tol));
  EXPECT_TRUE(matches(einsum("...ij->ij", {a}), ref_of(a), kExact));  // "..." of no dims
  // A "..." dim of size 0 broadcasts like any other (against 1) and gives an empty result.
  EXPECT_EQ(einsum("...i->...i", {zeros({0, 3}, opts(float64))}).shape().vec(),
            (std::vector<int64_t>{0, 3}));
  EXPECT_EQ(einsum("...ij,...jk->...ik",
                   {zeros({0, 2, 3}, opts(float64)), ones({1, 3, 4}, opts(float64))})
                .shape()
                .vec(),
            (std::vector<int64_t>{0, 2, 4}));
  EXPECT_KILN_ERROR(einsum("...ij,jk->...ik", {ba}), "2 operands but 1");
  EXPECT_KILN_ERROR(einsum("...ijk->i", {a}), "3 labels besides '...'");
  EXPECT_KILN_ERROR(einsum("..i->i", {v}), "outside '...'");
  EXPECT_KILN_ERROR(einsum("...ij,...jk->...ik", {random({2, 3, 2}, 30, float64), d1}),
                    "do not broadcast");
  EXPECT_KILN_ERROR(einsum("i1->i", {v}), "not a letter");
  // A label's sizes broadcast across operands as PyTorch's (1.13: "ij,j" of [3, 4] and
  // [1] is a · v[0] summed over j; a size-1 dim against 0 gives the empty sum).
  auto one = random({1}, 31, float64).requires_grad_();
  EXPECT_TRUE(matches(einsum("ij,j", {a, one}), ref_of(a.sum({1}) * one), kFloat64Tol));
  einsum("ij,j", {a, one}).sum().backward();
  EXPECT_TRUE(matches(one.grad(), ref_of(a.sum().reshape({1})), kFloat64Tol));
  EXPECT_TRUE(matches(einsum("ij,j", {zeros({2, 0}, opts(float64)), one}), {2}, {0.0, 0.0}));
  EXPECT_KILN_ERROR(einsum("ii->i", {random({1, 3}, 32, float64)}), "sizes 1 and 3 of operand 0");
  // The size-1 side is squeezed, so the other operand sums over the label first, as in
  // PyTorch 1.13: [[2, -1]] x [[-inf]] is (2 - 1) * -inf = -inf, not -inf + inf = NaN.
  Tensor lhs = make({2, -1}, {1, 2}, float64), rhs = make({-kInf}, {1, 1}, float64);
  EXPECT_EQ(einsum("ij,jk->ik", {lhs, rhs}).item<double>(), -kInf);
}

TEST_P(TensorMethods, Pad) {
  namespace F = kiln::nn::functional;
  auto x = make({1, 2, 3, 4, 5, 6}, {1, 2, 3});
  EXPECT_TRUE(matches(F::pad(x, {1, 2}), {1, 2, 6}, {0, 1, 2, 3, 0, 0, 0, 4, 5, 6, 0, 0}));
  EXPECT_TRUE(matches(F::pad(x, {0, 1, 1, 0}, "constant", 9), {1, 3, 4},
                      {9, 9, 9, 9, 1, 2, 3, 9, 4, 5, 6, 9}));
  EXPECT_TRUE(matches(F::pad(x, {-1, 0}), {1, 2, 2}, {2, 3, 5, 6}));  // crops
  auto r = make({1, 2, 3, 4}, {1, 1, 4});
  EXPECT_TRUE(matches(F::pad(r, {2, 1}, "reflect"), {1, 1, 7}, {3, 2, 1, 2, 3, 4, 3}));
  EXPECT_TRUE(matches(F::pad(r, {2, 1}, "replicate"), {1, 1, 7}, {1, 1, 1, 2, 3, 4, 4}));
  EXPECT_TRUE(matches(F::pad(r, {1, 2}, "circular"), {1, 1, 7}, {4, 1, 2, 3, 4, 1, 2}));
  EXPECT_KILN_ERROR(F::pad(r, {4, 0}, "reflect"), "smaller than");
  EXPECT_KILN_ERROR(F::pad(r, {1}), "pairs");
  EXPECT_KILN_ERROR(F::pad(r, {1, 1}, "mirror"), "mode");
  EXPECT_KILN_ERROR(F::pad(r, {-5, 0}), "below zero");
}

TEST_P(TensorMethods, Interpolate) {
  namespace F = kiln::nn::functional;
  auto x = make({0, 1, 2, 3}, {1, 1, 4});
  EXPECT_TRUE(matches(F::interpolate(x, {8}), {1, 1, 8}, {0, 0, 1, 1, 2, 2, 3, 3}));
  EXPECT_TRUE(matches(F::interpolate(x, {2}), {1, 1, 2}, {0, 2}));
  auto two = make({0, 10}, {1, 1, 2});
  EXPECT_TRUE(matches(F::interpolate(two, {4}, "linear"), {1, 1, 4}, {0, 2.5, 7.5, 10}));
  EXPECT_TRUE(matches(F::interpolate(two, {3}, "linear", true), {1, 1, 3}, {0, 5, 10}));
  auto img = make({0, 1, 2, 3}, {1, 1, 2, 2});
  EXPECT_TRUE(matches(F::interpolate(img, {3, 3}, "bilinear", true), {1, 1, 3, 3},
                      {0, 0.5, 1, 1, 1.5, 2, 2, 2.5, 3}));
  EXPECT_TRUE(matches(F::interpolate(img, {4, 4}), {1, 1, 4, 4},
                      {0, 0, 1, 1, 0, 0, 1, 1, 2, 2, 3, 3, 2, 2, 3, 3}));
  EXPECT_KILN_ERROR(F::interpolate(img, {3, 3}, "linear"), "spatial");
  EXPECT_KILN_ERROR(F::interpolate(img, {3}), "one output size per spatial");
  EXPECT_KILN_ERROR(F::interpolate(img, {3, 3}, "cubic"), "mode");
}

// A huge size fails at its first allocation with the device's out-of-memory error and
// leaves the device usable: the positions are never a host list (one took 16.8 GB
// before ending in std::bad_alloc).
TEST_P(TensorMethods, HugePadAndInterpolateSizesFailCleanly) {
  namespace F = kiln::nn::functional;
  const int64_t huge = int64_t{1} << 40, most = std::numeric_limits<int64_t>::max();
  auto r = make({1, 2, 3, 4}, {1, 1, 4});
  EXPECT_KILN_ERROR(F::interpolate(r, {huge}), "out of memory");
  EXPECT_KILN_ERROR(F::interpolate(r, {huge}, "linear"), "out of memory");
  EXPECT_KILN_ERROR(F::interpolate(r, {most}, "linear", true), "memory");
  EXPECT_KILN_ERROR(F::pad(r, {huge, 0}, "replicate"), "out of memory");
  EXPECT_KILN_ERROR(F::pad(r, {0, huge}), "out of memory");
  EXPECT_KILN_ERROR(F::pad(r, {huge, 0}, "circular"), "more than once");
  EXPECT_KILN_ERROR(F::pad(r, {most, 1}, "replicate"), "overflows int64");
  EXPECT_KILN_ERROR(F::pad(r, {1, most}), "overflows int64");
  EXPECT_TRUE(matches(F::pad(r, {1, 1}, "replicate"), {1, 1, 6}, {1, 1, 2, 3, 4, 4}));
  EXPECT_TRUE(matches(F::interpolate(r, {2}), {1, 1, 2}, {1, 3}));
}

// Next to an infinity PyTorch's (1 − λ)·a + λ·b keeps the infinity where λ is 0 and
// gives NaN where a 0 weight meets it (Kiln's a + (b − a)·λ gave NaN for both).
TEST_P(TensorMethods, InterpolateNextToAnInfinity) {
  namespace F = kiln::nn::functional;
  auto x = make({kInf, 1, 2}, {1, 1, 3}).requires_grad_();
  auto y = F::interpolate(x, {4}, "linear");
  EXPECT_TRUE(matches(y, {1, 1, 4}, {kInf, kInf, 1.375, 2}, kFloat32Tol));
  y.backward(make({1, 2, 3, 4}, {1, 1, 4}));
  EXPECT_TRUE(matches(x.grad(), {1, 1, 3}, {1.75, 3.125, 5.125}, kFloat32Tol));
  EXPECT_TRUE(matches(F::interpolate(make({0, kInf, 2}, {1, 1, 3}), {5}, "linear", true), {1, 1, 5},
                      {kNaN, kInf, kInf, kInf, 2}, kFloat32Tol));
  auto img = make({0, kInf, 1, 2}, {1, 1, 2, 2});
  EXPECT_TRUE(matches(F::interpolate(img, {3, 3}, "bilinear", true), {1, 1, 3, 3},
                      {kNaN, kInf, kNaN, kNaN, kInf, kNaN, 1, 1.5, 2}, kFloat32Tol));
  EXPECT_TRUE(matches(F::interpolate(img, {3, 3}, "bilinear"), {1, 1, 3, 3},
                      {kNaN, kInf, kInf, kNaN, kInf, kInf, 1, 1.5, 2}, kFloat32Tol));
}

KILN_INSTANTIATE_FOR_EVERY_DEVICE(TensorMethods);

}  // namespace
}  // namespace kiln::test
