// cat, stack, index_select and gather on every device, against float64 references.
#include "ops/conformance.h"

namespace kiln::test {
namespace {

class JoinIndex : public DeviceTest {};

std::vector<double> as_doubles(const std::vector<int64_t>& v) { return {v.begin(), v.end()}; }

TEST_P(JoinIndex, CatAlongEveryDim) {
  for (int64_t dim : {0, 1, 2, -1, -3}) {
    SCOPED_TRACE("dim " + std::to_string(dim));
    Shape sa = {2, 3, 4}, sb = {2, 3, 4}, sc = {2, 3, 4};
    const int64_t d = dim < 0 ? dim + 3 : dim;
    sb[d] = 1;
    sc[d] = 2;
    auto a = random(sa, 1);
    auto b = random(sb, 2, float32, Layout::Strided);
    auto c = random(sc, 3, float32, Layout::Transposed);
    auto y = cat({a, b, c}, dim);
    EXPECT_EQ(y.device(), device());
    EXPECT_TRUE(matches(y, ref_cat({ref_of(a), ref_of(b), ref_of(c)}, dim), kExact));
  }
}

TEST_P(JoinIndex, CatSingleEmptyAndExpandedPieces) {
  auto a = random({2, 3}, 4);
  EXPECT_TRUE(matches(cat({a}, 0), ref_of(a), kExact));
  auto e = zeros({0, 3}, opts());
  auto y = cat({e, a, e}, 0);
  EXPECT_TRUE(matches(y, ref_of(a), kExact));
  auto x = make({1, 2, 3}, {1, 3}).expand({2, 3});
  EXPECT_TRUE(matches(cat({x, a}, 0), ref_cat({ref_of(x), ref_of(a)}, 0), kExact));
  auto all_empty = cat({e, e}, 0);
  EXPECT_EQ(all_empty.shape(), IntArrayRef({0, 3}));
}

TEST_P(JoinIndex, CatPromotesDTypes) {
  auto i = make({1, 2}, {2}, int32);
  auto f = make({0.5}, {1}, float32);
  auto y = cat({i, f}, 0);
  EXPECT_EQ(y.dtype(), float32);
  EXPECT_TRUE(matches(y, {3}, {1, 2, 0.5}));
  auto l = cat({i, make({7}, {1}, int64)}, 0);
  EXPECT_EQ(l.dtype(), int64);
  EXPECT_EQ(l.to_vector<int64_t>(), (std::vector<int64_t>{1, 2, 7}));
  auto d = cat({f, make({0.25}, {1}, float64)}, 0);
  EXPECT_EQ(d.dtype(), float64);
  auto b = cat({make({1, 0}, {2}, kbool), make({1}, {1}, kbool)}, 0);
  EXPECT_EQ(b.dtype(), kbool);
  EXPECT_EQ(b.to_vector<bool>(), (std::vector<bool>{true, false, true}));
}

TEST_P(JoinIndex, StackAlongEveryNewDim) {
  for (int64_t dim : {0, 1, 2, -1, -3}) {
    SCOPED_TRACE("dim " + std::to_string(dim));
    auto a = random({2, 3}, 5);
    auto b = random({2, 3}, 6, float32, Layout::Transposed);
    auto c = random({2, 3}, 7, float32, Layout::Offset);
    auto y = stack({a, b, c}, dim);
    EXPECT_EQ(y.dim(), 3);
    EXPECT_TRUE(matches(y, ref_stack({ref_of(a), ref_of(b), ref_of(c)}, dim), kExact));
  }
}

TEST_P(JoinIndex, StackZeroDimAndEmptyAndPromotion) {
  auto y = stack({make({1}, {}), make({2}, {}), make({3}, {})}, 0);
  EXPECT_TRUE(matches(y, {3}, {1, 2, 3}));
  auto e = stack({zeros({0, 2}, opts()), zeros({0, 2}, opts())}, 1);
  EXPECT_EQ(e.shape(), IntArrayRef({0, 2, 2}));
  auto p = stack({make({1}, {1}, int64), make({1.5}, {1}, float32)}, 0);
  EXPECT_EQ(p.dtype(), float32);
  EXPECT_TRUE(matches(p, {2, 1}, {1, 1.5}));
}

TEST_P(JoinIndex, IndexSelectAlongEveryDim) {
  auto x = random({3, 4, 5}, 8, float32, Layout::Transposed);
  const Ref rx = ref_of(x);
  const std::vector<int64_t> i0 = {2, 0, 2}, i1 = {3, 1}, i2 = {4, 4, 0, 1};
  EXPECT_TRUE(matches(index_select(x, 0, make(as_doubles(i0), {3}, int64)),
                      ref_index_select(rx, 0, i0), kExact));
  EXPECT_TRUE(matches(index_select(x, 1, make(as_doubles(i1), {2}, int64)),
                      ref_index_select(rx, 1, i1), kExact));
  EXPECT_TRUE(matches(index_select(x, 2, make(as_doubles(i2), {4}, int64)),
                      ref_index_select(rx, 2, i2), kExact));
  EXPECT_TRUE(matches(index_select(x, -1, make(as_doubles(i2), {4}, int64, Layout::Strided)),
                      ref_index_select(rx, 2, i2), kExact));
}

TEST_P(JoinIndex, IndexSelectInt32IndexEmptyIndexAndOtherDTypes) {
  auto x = make({10, 20, 30, 40}, {4}, int64);
  auto y = index_select(x, 0, make({3, 1}, {2}, int32));
  EXPECT_EQ(y.dtype(), int64);
  EXPECT_EQ(y.to_vector<int64_t>(), (std::vector<int64_t>{40, 20}));
  auto none = index_select(random({3, 2}, 9), 0, zeros({0}, opts(int64)));
  EXPECT_EQ(none.shape(), IntArrayRef({0, 2}));
  auto b = index_select(make({1, 0, 1}, {3}, kbool), 0, make({1, 2}, {2}, int64));
  EXPECT_EQ(b.to_vector<bool>(), (std::vector<bool>{false, true}));
  auto h = index_select(make({0.5, 1.5, 2.5}, {3}, float16), 0, make({2, 0}, {2}, int64));
  EXPECT_EQ(h.dtype(), float16);
  EXPECT_TRUE(matches(h, {2}, {2.5, 0.5}));
}

TEST_P(JoinIndex, GatherAlongEachDim) {
  auto x = random({3, 4}, 10, float32, Layout::Strided);
  const Ref rx = ref_of(x);
  // dim 0: index values < 3; index may be smaller than x in the other dim.
  auto i0 = make({2, 0, 1, 1, 0, 2}, {2, 3}, int64);
  EXPECT_TRUE(matches(gather(x, 0, i0), ref_gather(rx, 0, ref_of(i0)), kExact));
  auto i1 = make({3, 3, 0, 1, 2, 0}, {3, 2}, int64, Layout::Transposed);
  EXPECT_TRUE(matches(gather(x, 1, i1), ref_gather(rx, 1, ref_of(i1)), kExact));
  EXPECT_TRUE(matches(gather(x, -1, i1), ref_gather(rx, 1, ref_of(i1)), kExact));
  auto x3 = random({2, 3, 4}, 11);
  auto i3 = make(random_ints(2 * 2 * 5, 12, 0, 2), {2, 2, 5}, int64);
  auto i3s = i3.narrow(2, 0, 4);  // [2, 2, 4], non-contiguous
  EXPECT_TRUE(matches(gather(x3, 1, i3s), ref_gather(ref_of(x3), 1, ref_of(i3s)), kExact));
  auto empty_index = gather(x, 0, zeros({0, 4}, opts(int64)));
  EXPECT_EQ(empty_index.shape(), IntArrayRef({0, 4}));
  auto ints = gather(make({5, 6, 7}, {3}, int32), 0, make({2, 2, 0}, {3}, int64));
  EXPECT_EQ(ints.dtype(), int32);
  EXPECT_EQ(ints.to_vector<int32_t>(), (std::vector<int32_t>{7, 7, 5}));
}

KILN_INSTANTIATE_FOR_EVERY_DEVICE(JoinIndex);

}  // namespace
}  // namespace kiln::test
