// Views share storage with their base; metadata and values of every view op.
#include "support/kiln_test.h"

namespace kiln {
namespace {

using test::matches;

/// [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9, 10, 11]] as float32.
Tensor grid() { return arange(12, float32).reshape({3, 4}); }

TEST(Views, ReshapeOfContiguousIsAView) {
  auto x = grid();
  auto y = x.reshape({4, 3});
  EXPECT_TRUE(y.shares_storage_with(x));
  EXPECT_EQ(y.shape(), IntArrayRef({4, 3}));
  EXPECT_TRUE(matches(y, {4, 3}, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}));
  auto z = x.reshape({-1});
  EXPECT_EQ(z.shape(), IntArrayRef({12}));
  EXPECT_EQ(x.reshape({2, -1, 3}).shape(), IntArrayRef({2, 2, 3}));
  EXPECT_EQ(x.view({6, 2}).shape(), IntArrayRef({6, 2}));
  EXPECT_TRUE(x.view({6, 2}).shares_storage_with(x));
  EXPECT_EQ(x.reshape({1, 12, 1}).dim(), 3);
}

TEST(Views, ReshapeErrors) {
  auto x = grid();
  EXPECT_KILN_ERROR(x.reshape({5, 3}), "12");
  EXPECT_KILN_ERROR(x.reshape({-1, -1}));
  EXPECT_KILN_ERROR(x.reshape({-1, 5}));
  EXPECT_KILN_ERROR(x.view({7}));
}

TEST(Views, ViewOfNonContiguousThrowsButReshapeCopies) {
  auto x = grid();
  auto t = x.t();  // [4, 3], strides [1, 4]
  EXPECT_FALSE(t.is_contiguous());
  EXPECT_KILN_ERROR(t.view({12}));
  auto r = t.reshape({12});
  EXPECT_FALSE(r.shares_storage_with(x));
  EXPECT_TRUE(r.is_contiguous());
  EXPECT_TRUE(matches(r, {12}, {0, 4, 8, 1, 5, 9, 2, 6, 10, 3, 7, 11}));
  // A view is still possible when the strides allow it: splitting a dimension.
  auto split = t.view({2, 2, 3});
  EXPECT_TRUE(split.shares_storage_with(x));
  EXPECT_TRUE(matches(split, {2, 2, 3}, {0, 4, 8, 1, 5, 9, 2, 6, 10, 3, 7, 11}));
}

TEST(Views, TransposeAndT) {
  auto x = grid();
  auto t = x.transpose(0, 1);
  EXPECT_TRUE(t.shares_storage_with(x));
  EXPECT_EQ(t.shape(), IntArrayRef({4, 3}));
  EXPECT_EQ(t.strides(), IntArrayRef({1, 4}));
  EXPECT_TRUE(matches(t, {4, 3}, {0, 4, 8, 1, 5, 9, 2, 6, 10, 3, 7, 11}));
  EXPECT_TRUE(matches(x.t(), {4, 3}, {0, 4, 8, 1, 5, 9, 2, 6, 10, 3, 7, 11}));
  EXPECT_TRUE(matches(x.transpose(-1, -2), {4, 3}, {0, 4, 8, 1, 5, 9, 2, 6, 10, 3, 7, 11}));
  EXPECT_EQ(x.transpose(1, 1).strides(), x.strides());
  auto v = arange(3);
  EXPECT_EQ(v.t().shape(), IntArrayRef({3}));  // a 1-D tensor is its own transpose
  EXPECT_KILN_ERROR(zeros({2, 3, 4}).t(), "3");
  EXPECT_KILN_ERROR(x.transpose(0, 2), "2");
}

TEST(Views, Permute) {
  auto x = arange(24, float32).reshape({2, 3, 4});
  auto p = x.permute({2, 0, 1});
  EXPECT_TRUE(p.shares_storage_with(x));
  EXPECT_EQ(p.shape(), IntArrayRef({4, 2, 3}));
  EXPECT_EQ(p.strides(), IntArrayRef({1, 12, 4}));
  auto expected = test::ref_permute(test::ref_of(x), {2, 0, 1});
  EXPECT_TRUE(matches(p, expected, test::kExact));
  EXPECT_EQ(x.permute({-1, 0, 1}).shape(), IntArrayRef({4, 2, 3}));
  EXPECT_KILN_ERROR(x.permute({0, 0, 1}));
  EXPECT_KILN_ERROR(x.permute({0, 1}));
  EXPECT_KILN_ERROR(x.permute({0, 1, 3}));
}

TEST(Views, SliceWithStepsAndNegativeIndices) {
  auto x = arange(10);
  auto s = x.slice(0, 1, 8, 3);
  EXPECT_TRUE(s.shares_storage_with(x));
  EXPECT_EQ(s.to_vector<int64_t>(), (std::vector<int64_t>{1, 4, 7}));
  EXPECT_EQ(s.storage_offset(), 1);
  EXPECT_EQ(s.stride(0), 3);
  EXPECT_EQ(x.slice(0, -3, 10).to_vector<int64_t>(), (std::vector<int64_t>{7, 8, 9}));
  EXPECT_EQ(x.slice(0, -100, 2).to_vector<int64_t>(), (std::vector<int64_t>{0, 1}));  // clamped
  EXPECT_EQ(x.slice(0, 8, 1000).to_vector<int64_t>(), (std::vector<int64_t>{8, 9}));  // clamped
  EXPECT_EQ(x.slice(0, 0, -7).to_vector<int64_t>(), (std::vector<int64_t>{0, 1, 2}));
  EXPECT_EQ(x.slice(0, 6, 3).numel(), 0);  // start past end: empty, not an error
  EXPECT_EQ(x.slice(0, 0, 10, 4).to_vector<int64_t>(), (std::vector<int64_t>{0, 4, 8}));

  auto g = grid();
  auto cols = g.slice(1, 1, 4, 2);  // columns 1 and 3
  EXPECT_EQ(cols.shape(), IntArrayRef({3, 2}));
  EXPECT_TRUE(matches(cols, {3, 2}, {1, 3, 5, 7, 9, 11}));
  auto rows = g.slice(-2, -1, 3);
  EXPECT_TRUE(matches(rows, {1, 4}, {8, 9, 10, 11}));

  EXPECT_KILN_ERROR(x.slice(0, 0, 5, 0));
  EXPECT_KILN_ERROR(x.slice(0, 0, 5, -1));
  EXPECT_KILN_ERROR(x.slice(1, 0, 5));
}

TEST(Views, NarrowAndItsRangeErrors) {
  auto x = arange(10);
  auto n = x.narrow(0, 2, 3);
  EXPECT_TRUE(n.shares_storage_with(x));
  EXPECT_EQ(n.to_vector<int64_t>(), (std::vector<int64_t>{2, 3, 4}));
  EXPECT_EQ(x.narrow(0, 10, 0).numel(), 0);
  auto g = grid();
  EXPECT_TRUE(matches(g.narrow(1, 1, 2), {3, 2}, {1, 2, 5, 6, 9, 10}));
  EXPECT_KILN_ERROR(x.narrow(0, 8, 5), "narrow", "8", "10");  // start and the size
  EXPECT_KILN_ERROR(x.narrow(0, 11, 0));
  EXPECT_KILN_ERROR(x.narrow(0, 2, -1));
  EXPECT_KILN_ERROR(x.narrow(1, 0, 1));
}

TEST(Views, Select) {
  auto g = grid();
  auto row = g.select(0, 1);
  EXPECT_TRUE(row.shares_storage_with(g));
  EXPECT_TRUE(matches(row, {4}, {4, 5, 6, 7}));
  EXPECT_TRUE(matches(g.select(1, -1), {3}, {3, 7, 11}));
  auto element = g.select(0, 2).select(0, 3);
  EXPECT_EQ(element.dim(), 0);
  EXPECT_EQ(element.item<float>(), 11.0f);
  EXPECT_KILN_ERROR(g.select(0, 3), "3");
  EXPECT_KILN_ERROR(g.select(1, -5), "-5");
  EXPECT_KILN_ERROR(g.select(2, 0));
}

TEST(Views, SqueezeUnsqueeze) {
  auto x = zeros({1, 3, 1, 2});
  EXPECT_EQ(x.squeeze().shape(), IntArrayRef({3, 2}));
  EXPECT_TRUE(x.squeeze().shares_storage_with(x));
  EXPECT_EQ(x.squeeze(0).shape(), IntArrayRef({3, 1, 2}));
  EXPECT_EQ(x.squeeze(-2).shape(), IntArrayRef({1, 3, 2}));
  EXPECT_EQ(x.squeeze(1).shape(), IntArrayRef({1, 3, 1, 2}));  // not of size 1: unchanged
  EXPECT_EQ(zeros({1, 1}).squeeze().dim(), 0);
  EXPECT_KILN_ERROR(x.squeeze(4));

  auto v = arange(3);
  EXPECT_EQ(v.unsqueeze(0).shape(), IntArrayRef({1, 3}));
  EXPECT_EQ(v.unsqueeze(1).shape(), IntArrayRef({3, 1}));
  EXPECT_EQ(v.unsqueeze(-1).shape(), IntArrayRef({3, 1}));
  EXPECT_EQ(v.unsqueeze(-2).shape(), IntArrayRef({1, 3}));
  EXPECT_TRUE(v.unsqueeze(0).shares_storage_with(v));
  EXPECT_EQ(scalar_tensor(1.0).unsqueeze(0).shape(), IntArrayRef({1}));
  EXPECT_KILN_ERROR(v.unsqueeze(3));
  EXPECT_KILN_ERROR(v.unsqueeze(-3));
}

TEST(Views, ExpandBroadcastsWithoutCopying) {
  auto c = from_vector<float>({1, 2, 3}, {3, 1});
  auto e = c.expand({2, 3, 4});
  EXPECT_TRUE(e.shares_storage_with(c));
  EXPECT_EQ(e.shape(), IntArrayRef({2, 3, 4}));
  EXPECT_EQ(e.stride(0), 0);
  EXPECT_EQ(e.stride(2), 0);
  std::vector<double> expected;
  for (int b = 0; b < 2; ++b)
    for (int i = 1; i <= 3; ++i)
      for (int j = 0; j < 4; ++j) expected.push_back(i);
  EXPECT_TRUE(matches(e, {2, 3, 4}, expected));
  EXPECT_EQ(c.expand({-1, 5}).shape(), IntArrayRef({3, 5}));
  EXPECT_EQ(c.expand({3, 1}).shape(), IntArrayRef({3, 1}));
  EXPECT_EQ(scalar_tensor(2.0).expand({2, 2}).shape(), IntArrayRef({2, 2}));
  EXPECT_EQ(c.expand_as(zeros({3, 6})).shape(), IntArrayRef({3, 6}));
  EXPECT_KILN_ERROR(c.expand({4, 4}), "[3, 1]");  // a non-1 dimension cannot change
  EXPECT_KILN_ERROR(c.expand({4}));               // fewer dimensions
  EXPECT_KILN_ERROR(c.expand({-1, 3, 1}));        // -1 for a new leading dimension
}

TEST(Views, Flatten) {
  auto x = arange(24, float32).reshape({2, 3, 4});
  EXPECT_EQ(x.flatten().shape(), IntArrayRef({24}));
  EXPECT_TRUE(x.flatten().shares_storage_with(x));
  EXPECT_EQ(x.flatten(1).shape(), IntArrayRef({2, 12}));
  EXPECT_EQ(x.flatten(0, 1).shape(), IntArrayRef({6, 4}));
  EXPECT_EQ(x.flatten(-2, -1).shape(), IntArrayRef({2, 12}));
  auto t = x.transpose(0, 2).flatten();  // not viewable: copies, in the view's order
  auto expected = test::ref_permute(test::ref_of(x), {2, 1, 0});
  expected.shape = {24};
  EXPECT_TRUE(matches(t, expected, test::kExact));
  EXPECT_KILN_ERROR(x.flatten(2, 1));
}

TEST(Views, Contiguous) {
  auto x = grid();
  auto same = x.contiguous();
  EXPECT_TRUE(same.shares_storage_with(x));
  auto t = x.t();
  auto c = t.contiguous();
  EXPECT_TRUE(c.is_contiguous());
  EXPECT_FALSE(c.shares_storage_with(x));
  EXPECT_EQ(c.strides(), IntArrayRef({3, 1}));
  EXPECT_TRUE(matches(c, {4, 3}, {0, 4, 8, 1, 5, 9, 2, 6, 10, 3, 7, 11}));
  auto cl = x.clone();
  EXPECT_FALSE(cl.shares_storage_with(x));
  EXPECT_TRUE(matches(cl, test::ref_of(x), test::kExact));
}

TEST(Views, IsContiguous) {
  auto g = grid();
  EXPECT_TRUE(g.is_contiguous());
  EXPECT_FALSE(g.t().is_contiguous());
  EXPECT_FALSE(g.slice(1, 0, 4, 2).is_contiguous());
  EXPECT_TRUE(g.slice(0, 1, 3).is_contiguous());  // whole rows
  EXPECT_TRUE(g.narrow(0, 1, 1).is_contiguous());
  EXPECT_FALSE(from_vector<float>({1, 2}, {2, 1}).expand({2, 3}).is_contiguous());
}

TEST(Views, ChainedViewsIndexCorrectly) {
  auto x = arange(60, float32).reshape({3, 4, 5});
  auto v = x.permute({2, 0, 1}).slice(0, 1, 5, 2).select(2, 3);  // [2, 3]
  auto ref = test::ref_of(x);
  std::vector<double> expected;
  for (int k : {1, 3})
    for (int i = 0; i < 3; ++i) expected.push_back(ref.at({i, 3, k}));
  EXPECT_TRUE(matches(v, {2, 3}, expected));
  EXPECT_TRUE(v.shares_storage_with(x));
}

std::vector<int64_t> lengths(const std::vector<Tensor>& pieces, int64_t dim) {
  std::vector<int64_t> out;
  for (const Tensor& t : pieces) out.push_back(t.size(dim));
  return out;
}

TEST(Views, ChunkSplitAndUnbindGivePyTorchsPieces) {
  // Piece lengths as torch.chunk / torch.split give them (printed by Debian's
  // python3-torch 1.13.1 for these cases on 2026-11-26).
  struct Case {
    int64_t n, k;
    std::vector<int64_t> chunk, split;
  };
  const std::vector<Case> cases = {
      {10, 3, {4, 4, 2}, {3, 3, 3, 1}}, {6, 4, {2, 2, 2}, {4, 2}},    {5, 5, {1, 1, 1, 1, 1}, {5}},
      {5, 7, {1, 1, 1, 1, 1}, {5}},     {7, 2, {4, 3}, {2, 2, 2, 1}}, {1, 3, {1}, {1}},
      {0, 3, {0, 0, 0}, {0}},
  };
  for (const Case& c : cases) {
    const Tensor x = arange(2 * c.n, float32).reshape({2, c.n});
    EXPECT_EQ(lengths(x.chunk(c.k, 1), 1), c.chunk) << c.n << " chunk " << c.k;
    EXPECT_EQ(lengths(x.split(c.k, -1), 1), c.split) << c.n << " split " << c.k;
  }
  const Tensor g = grid();
  const std::vector<Tensor> parts = g.split({1, 3}, 1);
  ASSERT_EQ(parts.size(), 2u);
  EXPECT_TRUE(parts[1].shares_storage_with(g));
  EXPECT_TRUE(matches(parts[1], {3, 3}, {1, 2, 3, 5, 6, 7, 9, 10, 11}));
  const std::vector<Tensor> rows = g.unbind(0);
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_TRUE(matches(rows[2], {4}, {8, 9, 10, 11}));
  EXPECT_TRUE(matches(g.unbind(1)[3], {3}, {3, 7, 11}));
  EXPECT_TRUE(matches(g.chunk(2, 0)[1], {1, 4}, {8, 9, 10, 11}));
}

TEST(Views, PiecesCarryGradientsBackToTheirBase) {
  const Tensor x = arange(6, float64).reshape({2, 3}).requires_grad_();
  const std::vector<Tensor> cols = x.unbind(1);
  const std::vector<Tensor> halves = x.chunk(2, 0);
  (cols[0] * 2.0 + cols[2] * 3.0).sum().add(halves[1].sum()).backward();
  EXPECT_TRUE(matches(x.grad(), {2, 3}, {2, 0, 3, 3, 1, 4}));
}

TEST(Views, BadChunksAndSplitsAreErrors) {
  const Tensor g = grid();
  EXPECT_KILN_ERROR(g.chunk(0), "chunk: the number of chunks must be positive, got 0");
  EXPECT_KILN_ERROR(g.split(0, 1), "split: the piece size must be positive, got 0");
  EXPECT_KILN_ERROR(g.split({1, 2}, 1), "add up to 3, not to dimension 1's size 4");
  EXPECT_KILN_ERROR(g.split({3, 2}, 1), "add up to more than dimension 1's size 4");
  EXPECT_KILN_ERROR(g.split({-1, 5}, 1), "non-negative, got -1");
  EXPECT_KILN_ERROR(g.unbind(2), "unbind");
  EXPECT_KILN_ERROR(scalar_tensor(1.0).chunk(2), "0-d");
}

}  // namespace
}  // namespace kiln
