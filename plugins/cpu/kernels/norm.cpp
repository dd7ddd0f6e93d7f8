// kiln.batch_norm, kiln.layer_norm and their backward kernels.
//
// Contiguous operands; float32 and float64; every statistic (means, variances, the
// sums of the backward pass) accumulates in float64, two-pass, as OPS.md asks. Work
// is split over channels (batch norm) or rows and columns (layer norm) so that each
// sum is computed by one thread in a fixed order: deterministic.
#include <algorithm>
#include <cmath>
#include <utility>
#include <vector>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "elementwise.h"
#include "kiln/sdk/norm.h"
#include "registry.h"
#include "widen.h"

namespace kiln::cpu {

namespace {

using NormTypes = TypeList<float, double>;

template <class F>
void visit_norm(kiln_dtype dtype, F&& fn) {
  if (!visit_dtype<NormTypes>(dtype, fn)) unsupported_dtype(dtype);
}

using sdk::ChannelLayout;
using sdk::RowLayout;

// Float64 sums over a channel for batch norm, in eight lanes: element i of each
// (sample, channel) block goes to lane i mod 8, and the lanes are added pairwise at
// the end. A single running sum made every add wait for the previous one (a few
// cycles each); eight independent ones pipeline and vectorize. The order depends on
// the shapes alone, so results are the same on every run and thread count.
struct Lanes {
  double v[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  double total() const { return ((v[0] + v[1]) + (v[2] + v[3])) + ((v[4] + v[5]) + (v[6] + v[7])); }
};

// lanes += one(i) for i in [begin, n), into lane i mod 8 (the tails the vector loops
// leave, and every element where there is no SSE2).
template <class One>
inline void add_lanes_scalar(Lanes& lanes, int64_t begin, int64_t n, const One& one) {
  for (int64_t i = begin; i < n; ++i) lanes.v[i & 7] += one(i);
}

// Σ x over the block, in lanes.
template <class T>
void lanes_sum(Lanes& lanes, const T* x, int64_t n) {
  int64_t i = 0;
#if defined(__SSE2__)
  if constexpr (std::is_same_v<T, float>) {
    __m128d a0 = _mm_loadu_pd(lanes.v), a1 = _mm_loadu_pd(lanes.v + 2);
    __m128d a2 = _mm_loadu_pd(lanes.v + 4), a3 = _mm_loadu_pd(lanes.v + 6);
    for (; i + 8 <= n; i += 8) {
      const __m128 lo = _mm_loadu_ps(x + i), hi = _mm_loadu_ps(x + i + 4);
      a0 = _mm_add_pd(a0, _mm_cvtps_pd(lo));
      a1 = _mm_add_pd(a1, _mm_cvtps_pd(_mm_movehl_ps(lo, lo)));
      a2 = _mm_add_pd(a2, _mm_cvtps_pd(hi));
      a3 = _mm_add_pd(a3, _mm_cvtps_pd(_mm_movehl_ps(hi, hi)));
    }
    _mm_storeu_pd(lanes.v, a0);
    _mm_storeu_pd(lanes.v + 2, a1);
    _mm_storeu_pd(lanes.v + 4, a2);
    _mm_storeu_pd(lanes.v + 6, a3);
  }
#endif
  add_lanes_scalar(lanes, i, n, [x](int64_t j) { return static_cast<double>(x[j]); });
}

// Σ (x − mu)² over the block, in lanes.
template <class T>
void lanes_squares(Lanes& lanes, const T* x, int64_t n, double mu) {
  int64_t i = 0;
#if defined(__SSE2__)
  if constexpr (std::is_same_v<T, float>) {
    const __m128d m = _mm_set1_pd(mu);
    __m128d a0 = _mm_loadu_pd(lanes.v), a1 = _mm_loadu_pd(lanes.v + 2);
    __m128d a2 = _mm_loadu_pd(lanes.v + 4), a3 = _mm_loadu_pd(lanes.v + 6);
    for (; i + 8 <= n; i += 8) {
      const __m128 lo = _mm_loadu_ps(x + i), hi = _mm_loadu_ps(x + i + 4);
      const __m128d d0 = _mm_sub_pd(_mm_cvtps_pd(lo), m);
      const __m128d d1 = _mm_sub_pd(_mm_cvtps_pd(_mm_movehl_ps(lo, lo)), m);
      const __m128d d2 = _mm_sub_pd(_mm_cvtps_pd(hi), m);
      const __m128d d3 = _mm_sub_pd(_mm_cvtps_pd(_mm_movehl_ps(hi, hi)), m);
      a0 = _mm_add_pd(a0, _mm_mul_pd(d0, d0));
      a1 = _mm_add_pd(a1, _mm_mul_pd(d1, d1));
      a2 = _mm_add_pd(a2, _mm_mul_pd(d2, d2));
      a3 = _mm_add_pd(a3, _mm_mul_pd(d3, d3));
    }
    _mm_storeu_pd(lanes.v, a0);
    _mm_storeu_pd(lanes.v + 2, a1);
    _mm_storeu_pd(lanes.v + 4, a2);
    _mm_storeu_pd(lanes.v + 6, a3);
  }
#endif
  add_lanes_scalar(lanes, i, n, [x, mu](int64_t j) {
    const double d = static_cast<double>(x[j]) - mu;
    return d * d;
  });
}

// Σ g and Σ g·(x − mu) over the block, in two sets of lanes.
template <class T>
void lanes_grad_sums(Lanes& sum_g, Lanes& sum_gx, const T* g, const T* x, int64_t n, double mu) {
  int64_t i = 0;
#if defined(__SSE2__)
  if constexpr (std::is_same_v<T, float>) {
    const __m128d m = _mm_set1_pd(mu);
    __m128d s0 = _mm_loadu_pd(sum_g.v), s1 = _mm_loadu_pd(sum_g.v + 2);
    __m128d s2 = _mm_loadu_pd(sum_g.v + 4), s3 = _mm_loadu_pd(sum_g.v + 6);
    __m128d t0 = _mm_loadu_pd(sum_gx.v), t1 = _mm_loadu_pd(sum_gx.v + 2);
    __m128d t2 = _mm_loadu_pd(sum_gx.v + 4), t3 = _mm_loadu_pd(sum_gx.v + 6);
    for (; i + 8 <= n; i += 8) {
      const __m128 glo = _mm_loadu_ps(g + i), ghi = _mm_loadu_ps(g + i + 4);
      const __m128 xlo = _mm_loadu_ps(x + i), xhi = _mm_loadu_ps(x + i + 4);
      const __m128d g0 = _mm_cvtps_pd(glo), g1 = _mm_cvtps_pd(_mm_movehl_ps(glo, glo));
      const __m128d g2 = _mm_cvtps_pd(ghi), g3 = _mm_cvtps_pd(_mm_movehl_ps(ghi, ghi));
      s0 = _mm_add_pd(s0, g0);
      s1 = _mm_add_pd(s1, g1);
      s2 = _mm_add_pd(s2, g2);
      s3 = _mm_add_pd(s3, g3);
      t0 = _mm_add_pd(t0, _mm_mul_pd(g0, _mm_sub_pd(_mm_cvtps_pd(xlo), m)));
      t1 = _mm_add_pd(t1, _mm_mul_pd(g1, _mm_sub_pd(_mm_cvtps_pd(_mm_movehl_ps(xlo, xlo)), m)));
      t2 = _mm_add_pd(t2, _mm_mul_pd(g2, _mm_sub_pd(_mm_cvtps_pd(xhi), m)));
      t3 = _mm_add_pd(t3, _mm_mul_pd(g3, _mm_sub_pd(_mm_cvtps_pd(_mm_movehl_ps(xhi, xhi)), m)));
    }
    _mm_storeu_pd(sum_g.v, s0);
    _mm_storeu_pd(sum_g.v + 2, s1);
    _mm_storeu_pd(sum_g.v + 4, s2);
    _mm_storeu_pd(sum_g.v + 6, s3);
    _mm_storeu_pd(sum_gx.v, t0);
    _mm_storeu_pd(sum_gx.v + 2, t1);
    _mm_storeu_pd(sum_gx.v + 4, t2);
    _mm_storeu_pd(sum_gx.v + 6, t3);
  }
#endif
  for (; i < n; ++i) {
    const double gi = static_cast<double>(g[i]);
    sum_g.v[i & 7] += gi;
    sum_gx.v[i & 7] += gi * (static_cast<double>(x[i]) - mu);
  }
}

template <class Fn>
void for_each_channel(const ChannelLayout& l, const Fn& fn) {
  pool().parallel_for(0, l.c,
                      std::max<int64_t>(1, kParallelGrain / std::max<int64_t>(1, l.count())),
                      [&](int64_t begin, int64_t end) {
                        for (int64_t ch = begin; ch < end; ++ch) fn(ch);
                      });
}

void batch_norm_impl(const OpArgs& args) {
  const sdk::BatchNorm o = sdk::batch_norm_operands(args);
  const TensorView &x = o.x, &weight = o.weight, &bias = o.bias, &y = o.y, &mean = o.mean,
                   &invstd = o.invstd, &running_mean = o.running_mean, &running_var = o.running_var;
  const double momentum = o.momentum, eps = o.eps;
  const ChannelLayout& l = o.layout;
  visit_norm(x.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* in = x.ptr<const T>();
    T* out = y.ptr<T>();
    for_each_channel(l, [&](int64_t ch) {
      const int64_t count = l.count();
      Lanes sum_lanes;
      for (int64_t b = 0; b < l.n; ++b) lanes_sum(sum_lanes, in + l.at(b, ch), l.s);
      const double sum = sum_lanes.total();
      const double mu = count > 0 ? sum / static_cast<double>(count) : 0.0;
      Lanes square_lanes;
      for (int64_t b = 0; b < l.n; ++b) lanes_squares(square_lanes, in + l.at(b, ch), l.s, mu);
      const double squares = square_lanes.total();
      const double var = count > 0 ? squares / static_cast<double>(count) : 0.0;
      const double inv = 1.0 / std::sqrt(var + eps);
      const double scale = inv * static_cast<double>(weight.ptr<const T>()[ch]);
      const double shift = static_cast<double>(bias.ptr<const T>()[ch]);
      for (int64_t b = 0; b < l.n; ++b) {
        const T* p = in + l.at(b, ch);
        T* q = out + l.at(b, ch);
        for (int64_t i = 0; i < l.s; ++i)
          q[i] = static_cast<T>((static_cast<double>(p[i]) - mu) * scale + shift);
      }
      mean.ptr<T>()[ch] = static_cast<T>(mu);
      invstd.ptr<T>()[ch] = static_cast<T>(inv);
      // Running statistics use the unbiased variance.
      const double unbiased = count > 1 ? squares / static_cast<double>(count - 1) : var;
      T& rm = running_mean.ptr<T>()[ch];
      T& rv = running_var.ptr<T>()[ch];
      rm = static_cast<T>((1.0 - momentum) * static_cast<double>(rm) + momentum * mu);
      rv = static_cast<T>((1.0 - momentum) * static_cast<double>(rv) + momentum * unbiased);
    });
  });
}

void batch_norm_backward_impl(const OpArgs& args) {
  const sdk::BatchNormBackward o = sdk::batch_norm_backward_operands(args);
  const TensorView &grad_y = o.grad_y, &x = o.x, &weight = o.weight, &mean = o.mean,
                   &invstd = o.invstd, &grad_x = o.grad_x, &grad_weight = o.grad_weight,
                   &grad_bias = o.grad_bias;
  const ChannelLayout& l = o.layout;
  visit_norm(x.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    for_each_channel(l, [&](int64_t ch) {
      const double mu = static_cast<double>(mean.ptr<const T>()[ch]);
      const double inv = static_cast<double>(invstd.ptr<const T>()[ch]);
      Lanes g_lanes, gx_lanes;
      for (int64_t b = 0; b < l.n; ++b) {
        lanes_grad_sums(g_lanes, gx_lanes, grad_y.ptr<const T>() + l.at(b, ch),
                        x.ptr<const T>() + l.at(b, ch), l.s, mu);
      }
      // Σ g·xhat = inv · Σ g·(x − mu): one multiply per channel instead of per element.
      const double sum_g = g_lanes.total(), sum_g_xhat = gx_lanes.total() * inv;
      grad_bias.ptr<T>()[ch] = static_cast<T>(sum_g);
      grad_weight.ptr<T>()[ch] = static_cast<T>(sum_g_xhat);
      const double count = static_cast<double>(std::max<int64_t>(1, l.count()));
      const double mean_g = sum_g / count, mean_g_xhat = sum_g_xhat / count;
      const double scale = static_cast<double>(weight.ptr<const T>()[ch]) * inv;
      for (int64_t b = 0; b < l.n; ++b) {
        const T* g = grad_y.ptr<const T>() + l.at(b, ch);
        const T* p = x.ptr<const T>() + l.at(b, ch);
        T* dx = grad_x.ptr<T>() + l.at(b, ch);
        for (int64_t i = 0; i < l.s; ++i) {
          const double xhat = (static_cast<double>(p[i]) - mu) * inv;
          dx[i] = static_cast<T>(scale * (static_cast<double>(g[i]) - mean_g - xhat * mean_g_xhat));
        }
      }
    });
  });
}

template <class Fn>
void for_each_row(const RowLayout& l, const Fn& fn) {
  pool().parallel_for(0, l.m, std::max<int64_t>(1, kParallelGrain / std::max<int64_t>(1, l.d)),
                      [&](int64_t begin, int64_t end) {
                        for (int64_t r = begin; r < end; ++r) fn(r);
                      });
}

void layer_norm_impl(const OpArgs& args) {
  const sdk::LayerNorm o = sdk::layer_norm_operands(args);
  const TensorView &x = o.x, &weight = o.weight, &bias = o.bias, &y = o.y, &mean = o.mean,
                   &invstd = o.invstd;
  const double eps = o.eps;
  const RowLayout& l = o.layout;
  visit_norm(x.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* w = weight.ptr<const T>();
    const T* b = bias.ptr<const T>();
    for_each_row(l, [&](int64_t r) {
      const T* p = x.ptr<const T>() + r * l.d;
      T* q = y.ptr<T>() + r * l.d;
      double sum = 0;
      for (int64_t i = 0; i < l.d; ++i) sum += static_cast<double>(p[i]);
      const double mu = sum / static_cast<double>(l.d);
      double squares = 0;
      for (int64_t i = 0; i < l.d; ++i) {
        const double dev = static_cast<double>(p[i]) - mu;
        squares += dev * dev;
      }
      const double inv = 1.0 / std::sqrt(squares / static_cast<double>(l.d) + eps);
      for (int64_t i = 0; i < l.d; ++i) {
        q[i] = static_cast<T>((static_cast<double>(p[i]) - mu) * inv * static_cast<double>(w[i]) +
                              static_cast<double>(b[i]));
      }
      mean.ptr<T>()[r] = static_cast<T>(mu);
      invstd.ptr<T>()[r] = static_cast<T>(inv);
    });
  });
}

void layer_norm_backward_impl(const OpArgs& args) {
  const sdk::LayerNormBackward o = sdk::layer_norm_backward_operands(args);
  const TensorView &grad_y = o.grad_y, &x = o.x, &weight = o.weight, &mean = o.mean,
                   &invstd = o.invstd, &grad_x = o.grad_x, &grad_weight = o.grad_weight,
                   &grad_bias = o.grad_bias;
  const RowLayout& l = o.layout;
  visit_norm(x.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* w = weight.ptr<const T>();
    // grad_x, one row per task.
    for_each_row(l, [&](int64_t r) {
      const T* g = grad_y.ptr<const T>() + r * l.d;
      const T* p = x.ptr<const T>() + r * l.d;
      T* dx = grad_x.ptr<T>() + r * l.d;
      const double mu = static_cast<double>(mean.ptr<const T>()[r]);
      const double inv = static_cast<double>(invstd.ptr<const T>()[r]);
      // PyTorch's arrangement, dx = inv·dy·w + b·x + c, so that an infinite weight or
      // input gives the same inf and NaN pattern as PyTorch 1.13 (in double here).
      double sum_dyw = 0, sum_dywx = 0;
      for (int64_t i = 0; i < l.d; ++i) {
        const double dyw = static_cast<double>(g[i]) * static_cast<double>(w[i]);
        sum_dyw += dyw;
        sum_dywx += dyw * static_cast<double>(p[i]);
      }
      const double scale = 1.0 / static_cast<double>(l.d);
      const double b = (sum_dyw * mu - sum_dywx) * inv * inv * inv * scale;
      const double c = -b * mu - sum_dyw * inv * scale;
      for (int64_t i = 0; i < l.d; ++i) {
        const double dyw = static_cast<double>(g[i]) * static_cast<double>(w[i]);
        dx[i] = static_cast<T>(inv * dyw + b * static_cast<double>(p[i]) + c);
      }
    });
    // grad_weight / grad_bias: column blocks, rows summed in order by one thread.
    constexpr int64_t kBlock = 256;
    const int64_t blocks = (l.d + kBlock - 1) / kBlock;
    pool().parallel_for(
        0, blocks, std::max<int64_t>(1, kParallelGrain / std::max<int64_t>(1, l.m * kBlock)),
        [&](int64_t begin, int64_t end) {
          double gw[kBlock], gb[kBlock];
          for (int64_t blk = begin; blk < end; ++blk) {
            const int64_t c0 = blk * kBlock, width = std::min(kBlock, l.d - c0);
            std::fill(gw, gw + width, 0.0);
            std::fill(gb, gb + width, 0.0);
            for (int64_t r = 0; r < l.m; ++r) {
              const T* g = grad_y.ptr<const T>() + r * l.d + c0;
              const T* p = x.ptr<const T>() + r * l.d + c0;
              const double mu = static_cast<double>(mean.ptr<const T>()[r]);
              const double inv = static_cast<double>(invstd.ptr<const T>()[r]);
              for (int64_t j = 0; j < width; ++j) {
                gb[j] += static_cast<double>(g[j]);
                gw[j] += static_cast<double>(g[j]) * (static_cast<double>(p[j]) - mu) * inv;
              }
            }
            for (int64_t j = 0; j < width; ++j) {
              grad_weight.ptr<T>()[c0 + j] = static_cast<T>(gw[j]);
              grad_bias.ptr<T>()[c0 + j] = static_cast<T>(gb[j]);
            }
          }
        });
  });
}

}  // namespace

// float16 and bfloat16 through the float32 kernels (widen.h): statistics in float32.
void add_norm_kernels(KernelList& list) {
  constexpr auto supports = &supports_widened<sdk::supports_norm>;
  list.push_back(
      catalogue_entry<op::batch_norm>(&run_kernel<widened<batch_norm_impl>>, supports, 0));
  list.push_back(catalogue_entry<op::batch_norm_backward>(
      &run_kernel<widened<batch_norm_backward_impl>>, supports, 0));
  list.push_back(
      catalogue_entry<op::layer_norm>(&run_kernel<widened<layer_norm_impl>>, supports, 0));
  list.push_back(catalogue_entry<op::layer_norm_backward>(
      &run_kernel<widened<layer_norm_backward_impl>>, supports, 0));
}

}  // namespace kiln::cpu
