// kiln.copy (with dtype conversion) and kiln.fill.
#include <algorithm>
#include <cstring>

#include "elementwise.h"
#include "registry.h"

namespace kiln::cpu {

namespace {

// Same dtype: move bytes. Contiguous rows become one memcpy.
template <class Bits>
struct MoveLoop {
  void operator()(char* const* p, const int64_t* s, int64_t n) const {
    Bits* y = reinterpret_cast<Bits*>(p[0]);
    const Bits* x = reinterpret_cast<const Bits*>(p[1]);
    if (s[0] == 1 && s[1] == 1) {
      if (y != x) std::memcpy(y, x, static_cast<size_t>(n) * sizeof(Bits));
    } else if (s[1] == 0) {
      const Bits v = x[0];
      for (int64_t i = 0; i < n; ++i) y[i * s[0]] = v;
    } else {
      for (int64_t i = 0; i < n; ++i) y[i * s[0]] = x[i * s[1]];
    }
  }
};

template <class Out, class In>
struct ConvertLoop {
  void operator()(char* const* p, const int64_t* s, int64_t n) const {
    Out* y = reinterpret_cast<Out*>(p[0]);
    const In* x = reinterpret_cast<const In*>(p[1]);
    if (s[0] == 1 && s[1] == 1) {
      contiguous(y, x, n);
    } else if (s[1] == 0) {
      const Out v = convert<Out>(x[0]);
      for (int64_t i = 0; i < n; ++i) y[i * s[0]] = v;
    } else {
      for (int64_t i = 0; i < n; ++i) y[i * s[0]] = convert<Out>(x[i * s[1]]);
    }
  }
  void contiguous(Out* __restrict y, const In* __restrict x, int64_t n) const {
    for (int64_t i = 0; i < n; ++i) y[i] = convert<Out>(x[i]);
  }
};

// A copy whose output is contiguous along one dim but whose input is contiguous along
// another (making a transpose contiguous) reads one cache line per element when it
// follows the output's order. Copying square tiles instead keeps both sides' lines
// in cache. Returns false when the layout is not of that kind.
constexpr int64_t kTile = 32;

template <class Out, class In>
bool try_tiled_copy(const LoopPlan<2>& p) {
  if (p.ndim < 2 || p.numel < 4 * kTile * kTile) return false;
  const int last = p.ndim - 1;  // the output's unit-stride dim (dims are sorted)
  if (p.strides[0][last] != 1 || p.strides[1][last] == 1) return false;
  int t = -1;  // the input's unit-stride dim
  for (int d = 0; d < last; ++d) {
    if (p.strides[1][d] == 1) t = d;
  }
  if (t < 0 || p.shape[t] < kTile || p.shape[last] < kTile) return false;

  int others[kMaxLoopDims];
  int num_others = 0;
  int64_t outer = 1;
  for (int d = 0; d < last; ++d) {
    if (d != t) {
      others[num_others++] = d;
      outer *= p.shape[d];
    }
  }
  const int64_t tiles_t = (p.shape[t] + kTile - 1) / kTile;
  const int64_t tiles_last = (p.shape[last] + kTile - 1) / kTile;
  const int64_t y_stride_t = p.strides[0][t];
  const int64_t x_stride_last = p.strides[1][last];
  pool().parallel_for(0, outer * tiles_t * tiles_last, kParallelGrain / (kTile * kTile),
                      [&](int64_t begin, int64_t end) {
                        for (int64_t item = begin; item < end; ++item) {
                          const int64_t tile_last = item % tiles_last;
                          const int64_t tile_t = item / tiles_last % tiles_t;
                          int64_t rest = item / tiles_last / tiles_t;
                          int64_t y_offset = 0, x_offset = 0;  // bytes
                          for (int k = num_others - 1; k >= 0; --k) {
                            const int d = others[k];
                            const int64_t index = rest % p.shape[d];
                            rest /= p.shape[d];
                            y_offset += index * p.byte_strides[0][d];
                            x_offset += index * p.byte_strides[1][d];
                          }
                          Out* y = reinterpret_cast<Out*>(p.base[0] + y_offset);
                          const In* x = reinterpret_cast<const In*>(p.base[1] + x_offset);
                          const int64_t i_end = std::min(p.shape[t], (tile_t + 1) * kTile);
                          const int64_t j_begin = tile_last * kTile;
                          const int64_t j_end = std::min(p.shape[last], j_begin + kTile);
                          for (int64_t i = tile_t * kTile; i < i_end; ++i) {
                            for (int64_t j = j_begin; j < j_end; ++j)
                              y[i * y_stride_t + j] = convert<Out>(x[i + j * x_stride_last]);
                          }
                        }
                      });
  return true;
}

void copy_impl(const OpArgs& args) {
  args.expect_counts(1, 1);
  const TensorView x = args.input(0);
  const TensorView y = args.output(0);
  expect_same_shape(x, y, "x");
  copy_tensor(y, x);
}

}  // namespace

void copy_tensor(const TensorView& y, const TensorView& x) {
  const TensorView* ops[2] = {&y, &x};
  const LoopPlan<2> plan = make_loop_plan(ops);
  if (x.dtype == y.dtype) {
    visit_by_size(x.itemsize, [&](auto tag) {
      using Bits = typename decltype(tag)::type;
      if (!try_tiled_copy<Bits, Bits>(plan)) run_loop(plan, MoveLoop<Bits>{});
    });
    return;
  }
  visit_dtype<AllTypes>(y.dtype, [&](auto out_tag) {
    using Out = typename decltype(out_tag)::type;
    visit_dtype<AllTypes>(x.dtype, [&](auto in_tag) {
      using In = typename decltype(in_tag)::type;
      if constexpr (!std::is_same_v<Out, In>) {
        if (!try_tiled_copy<Out, In>(plan)) run_loop(plan, ConvertLoop<Out, In>{});
      }
    });
  });
}

namespace {

template <class Bits>
struct FillLoop {
  Bits value;
  void operator()(char* const* p, const int64_t* s, int64_t n) const {
    Bits* y = reinterpret_cast<Bits*>(p[0]);
    if (s[0] == 1) {
      for (int64_t i = 0; i < n; ++i) y[i] = value;
    } else {
      for (int64_t i = 0; i < n; ++i) y[i * s[0]] = value;
    }
  }
};

void fill_impl(const OpArgs& args) {
  args.expect_counts(0, 1);
  const double value = sdk::attrs::fill::read(args).value;
  const TensorView y = args.output(0);
  const TensorView* ops[1] = {&y};
  const LoopPlan<1> plan = make_loop_plan(ops);
  visit_dtype<AllTypes>(y.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T typed = convert<T>(value);
    bits_t<sizeof(T)> bits;
    std::memcpy(&bits, &typed, sizeof bits);
    run_loop(plan, FillLoop<bits_t<sizeof(T)>>{bits});
  });
}

}  // namespace

void add_copy_kernels(KernelList& list) {
  list.push_back(catalogue_entry<op::copy>(&run_kernel<copy_impl>, nullptr, kStridedInOut));
  list.push_back(
      catalogue_entry<op::fill>(&run_kernel<fill_impl>, nullptr, KILN_KERNEL_STRIDED_OUTPUTS));
}

}  // namespace kiln::cpu
