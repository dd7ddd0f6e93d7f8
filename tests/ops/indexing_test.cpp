// Tensor::index and index_put_ (kiln/indexing.h) on every device, with every index
// kind: integers, slices, None, Ellipsis, integer tensors (one, several adjacent,
// several apart, broadcast) and bool tensors, over x = arange(24).reshape(2, 3, 4).
// The expected values are those Debian's python3-torch 1.13.1 prints for the same
// indices (tests/ops/pytorch_reference.py, run by hand on 2026-11-26).
#include "ops/conformance.h"

namespace kiln::test {
namespace {

using namespace kiln::indexing;

class Indexing : public DeviceTest {
 protected:
  Tensor x() const { return arange(24, opts()).reshape({2, 3, 4}); }
  Tensor ints(const std::vector<double>& v, const Shape& shape) const {
    return make(v, shape, int64);
  }
  static double at(int64_t a, int64_t b, int64_t c) {
    return static_cast<double>(a * 12 + b * 4 + c);
  }
};

TEST_P(Indexing, BasicIndicesGiveViews) {
  Tensor t = x();
  Tensor row = t.index({0});
  EXPECT_TRUE(row.shares_storage_with(t));
  EXPECT_TRUE(matches(row, {3, 4}, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}));
  EXPECT_TRUE(matches(t.index({Slice(), 1}), {2, 4}, {4, 5, 6, 7, 16, 17, 18, 19}));
  EXPECT_TRUE(matches(t.index({Ellipsis, -1}), {2, 3}, {3, 7, 11, 15, 19, 23}));
  EXPECT_TRUE(matches(t.index({None, 0, Slice(1, None, 2)}), {1, 1, 4}, {4, 5, 6, 7}));
  EXPECT_TRUE(matches(t.index({1, Slice(-2), Slice(None, None, 3)}), {2, 2}, {16, 19, 20, 23}));
  EXPECT_TRUE(matches(t.index({Slice(), Ellipsis, None}), {2, 3, 4, 1}, ref_of(t).values));
  EXPECT_TRUE(t.index({Ellipsis}).shares_storage_with(t));
  EXPECT_TRUE(matches(t[1][2], {4}, {20, 21, 22, 23}));  // operator[]: select(0, i)
  EXPECT_TRUE(matches(t[ints({1}, {1})], {1, 3, 4}, ref_of(t.index({Slice(1, 2)})).values));
}

TEST_P(Indexing, OneIndexTensorPicksSlices) {
  Tensor t = x();
  Tensor picked = t.index({ints({1, 0, -1}, {3})});
  EXPECT_FALSE(picked.shares_storage_with(t));
  std::vector<double> expected;
  for (int64_t a : {1, 0, 1})
    for (int64_t b = 0; b < 3; ++b)
      for (int64_t c = 0; c < 4; ++c) expected.push_back(at(a, b, c));
  EXPECT_TRUE(matches(picked, {3, 3, 4}, expected));
  // x[:, [2, 0]] keeps the indexed dim in place.
  EXPECT_TRUE(matches(t.index({Slice(), ints({2, 0}, {2})}), {2, 2, 4},
                      {8, 9, 10, 11, 0, 1, 2, 3, 20, 21, 22, 23, 12, 13, 14, 15}));
}

TEST_P(Indexing, SeveralIndexTensors) {
  Tensor t = x();
  // Adjacent: x[:, [0, 2], [3, 1]] -> [2, 2] in place.
  EXPECT_TRUE(matches(t.index({Slice(), ints({0, 2}, {2}), ints({3, 1}, {2})}), {2, 2},
                      {at(0, 0, 3), at(0, 2, 1), at(1, 0, 3), at(1, 2, 1)}));
  // Apart: x[[1, 0], :, [0, 3]] -> the index dims first: [2, 3].
  EXPECT_TRUE(matches(t.index({ints({1, 0}, {2}), Slice(), ints({0, 3}, {2})}), {2, 3},
                      {12, 16, 20, 3, 7, 11}));
  // Broadcast: i [2, 1] with j [2] -> [2, 2], apart, so first: [2, 2, 3].
  Tensor i = ints({0, 1}, {2, 1}), j = ints({0, 2}, {2});
  Ref expected = Ref::filled({2, 2, 3}, 0);
  for_each_index(expected.shape, [&](const Shape& k, int64_t linear) {
    const int64_t a = k[0], b = k[1] == 0 ? 0 : 2;
    expected.values[static_cast<size_t>(linear)] = at(a, k[2], b);
  });
  EXPECT_TRUE(matches(t.index({i, Slice(), j}), expected, kExact));
  // An integer is a select first (PyTorch, not NumPy): x[0, :, [1, 2]] is [3, 2].
  EXPECT_TRUE(matches(t.index({0, Slice(), ints({1, 2}, {2})}), {3, 2}, {1, 2, 5, 6, 9, 10}));
}

TEST_P(Indexing, BoolMasks) {
  Tensor t = x();
  EXPECT_TRUE(matches(t.index({t > 20}), {3}, {21, 22, 23}));
  EXPECT_TRUE(matches(t.index({t > 100}), {0}, {}));  // empty mask
  EXPECT_EQ(t.index({t >= 0}).numel(), 24);           // full mask
  Tensor first = make({1, 0}, {2}, kbool);
  EXPECT_TRUE(matches(t.index({first}), {1, 3, 4}, ref_of(t.index({Slice(0, 1)})).values));
  // A 2-D mask over dims 1 and 2, after a full slice: [2, count].
  Tensor corners = make({1, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0}, {3, 4}, kbool);
  EXPECT_TRUE(matches(t.index({Slice(), corners}), {2, 3}, {0, 3, 8, 12, 15, 20}));
}

TEST_P(Indexing, BadIndicesThrow) {
  Tensor t = x();
  EXPECT_KILN_ERROR(t.index({0, 0, 0, 0}), "4 indices");
  EXPECT_KILN_ERROR(t.index({2}), "out of range");
  // Index values out of range are data the device reads: reported at the op or at the
  // next synchronization (reading the result), as in BadInput.IndexSelectErrors.
  EXPECT_KILN_ERROR(t.index({ints({0, 2}, {2})}).to_vector<float>(), "out of range");
  EXPECT_KILN_ERROR(t.index({ints({0, 1}, {2}), ints({0, 5}, {2})}).to_vector<float>(),
                    "out of range");
  EXPECT_KILN_ERROR(t.index({make({1, 0, 1}, {3}, kbool)}), "does not match");
  EXPECT_KILN_ERROR(t.index({make({0.0}, {1})}), "int64, int32 or bool");
  EXPECT_KILN_ERROR(t.index({Ellipsis, 0, Ellipsis}), "one Ellipsis");
  EXPECT_KILN_ERROR(t.index({Slice(0, 2, 0)}), "step");
  // The tensor is usable afterwards.
  EXPECT_TRUE(matches(t.index({1, 2, 3}), {}, {23}));
}

TEST_P(Indexing, IndexPut) {
  Tensor t = x();
  t.index_put_({0, Slice()}, 5);
  EXPECT_TRUE(matches(t.index({0}), Ref::filled({3, 4}, 5), kExact));
  EXPECT_TRUE(matches(t.index({1, 0}), {4}, {12, 13, 14, 15}));

  Tensor y = make({-1, 2, -3, 4}, {2, 2});
  y.index_put_({y < 0}, 0.0);
  EXPECT_TRUE(matches(y, {2, 2}, {0, 2, 0, 4}));

  Tensor z = zeros({3, 4}, opts());
  z.index_put_({ints({2, 0}, {2})}, make({1, 2, 3, 4}, {4}));  // broadcast over the rows
  EXPECT_TRUE(matches(z, {3, 4}, {1, 2, 3, 4, 0, 0, 0, 0, 1, 2, 3, 4}));
  z.index_put_({ints({0, 0, 1}, {3})}, ones({3, 4}, opts()), /*accumulate=*/true);
  EXPECT_TRUE(matches(z, {3, 4}, {3, 4, 5, 6, 1, 1, 1, 1, 1, 2, 3, 4}));
  EXPECT_KILN_ERROR(z.index_put_({ints({1, 1}, {2})}, make({1, 2}, {2, 1})), "more than once");
  Tensor hot = zeros({4}, opts());
  hot.index_put_({ints({1, 3, 1}, {3})}, 1);  // one value: a repeated position is fine
  EXPECT_TRUE(matches(hot, {4}, {0, 1, 0, 1}));
  Tensor needs = ones({2}, opts()).requires_grad_();
  EXPECT_KILN_ERROR(hot.index_put_({ints({0, 2}, {2})}, needs), "require grad");
  z.index_put_({ints({0, 2}, {2}), ints({3, 0}, {2})}, make({7, 8}, {2}));
  EXPECT_TRUE(matches(z, {3, 4}, {3, 4, 5, 7, 1, 1, 1, 1, 8, 2, 3, 4}));

  // Writes go through a transposed view into its base.
  Tensor base = zeros({4, 3}, opts());
  Tensor view = base.t();  // [3, 4]
  view.index_put_({Slice(), ints({1}, {1})}, make({1, 2, 3}, {3, 1}));
  EXPECT_TRUE(matches(base, {4, 3}, {0, 0, 0, 1, 2, 3, 0, 0, 0, 0, 0, 0}));
}

TEST_P(Indexing, GradientsReachTheIndexedElements) {
  Tensor t = x().to(float64).requires_grad_();
  Tensor picked = t.index({Slice(), ints({2, 2, 0}, {3})});
  picked.sum().backward();
  Ref expected = Ref::filled({2, 3, 4}, 0);
  for_each_index(expected.shape, [&](const Shape& k, int64_t linear) {
    expected.values[static_cast<size_t>(linear)] = k[1] == 2 ? 2 : k[1] == 0 ? 1 : 0;
  });
  EXPECT_TRUE(matches(t.grad(), expected, kExact));

  Tensor u = x().to(float64).requires_grad_();
  (u.index({u > 20}) * 2).sum().backward();
  EXPECT_TRUE(matches(u.grad(), map_unary(ref_of(x()), [](double v) { return v > 20 ? 2.0 : 0.0; }),
                      kExact));
}

KILN_INSTANTIATE_FOR_EVERY_DEVICE(Indexing);

}  // namespace
}  // namespace kiln::test
