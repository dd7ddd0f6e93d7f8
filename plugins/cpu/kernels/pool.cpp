// 2-D pooling and its gradients: max_pool2d, avg_pool2d, adaptive_avg_pool2d.
//
// All operands are contiguous [N, C, H, W]. Every kernel works one (n, c) plane at a
// time and parallelizes over planes, so each gradient element is accumulated by one
// thread in a fixed order: results never depend on timing. Half types are computed
// in float32.
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "kiln/sdk/pooling.h"

#include "elementwise.h"
#include "registry.h"

namespace kiln::cpu {

namespace {

// The operand and attribute checks every plugin shares (kiln/sdk/pooling.h).
using Window = sdk::PoolWindow;
using sdk::pool_shape;
using sdk::PoolShape;

// Runs fn(plane) for every (n, c) plane in parallel.
template <class Fn>
void for_each_plane(const PoolShape& s, int64_t work_per_plane, const Fn& fn) {
  pool().parallel_for(0, s.planes,
                      std::max<int64_t>(1, kParallelGrain / std::max<int64_t>(1, work_per_plane)),
                      [&](int64_t begin, int64_t end) {
                        for (int64_t plane = begin; plane < end; ++plane) fn(plane);
                      });
}

using PoolTypes = TypeList<float, double, float16, bfloat16>;

template <class F>
void visit_pool(kiln_dtype dtype, F&& fn) {
  if (!visit_dtype<PoolTypes>(dtype, fn)) unsupported_dtype(dtype);
}

// ---- max pooling -------------------------------------------------------------------

// Whether v replaces the current best of a window: a larger value or any NaN, as
// PyTorch's kernels (ties keep the earlier element; of several NaNs the last wins).
template <class C>
inline bool max_better(C v, C best) {
  return v > best || is_nan(v);
}

// The 2x2, stride-2 windows of the networks everyone trains: no padding, no
// dilation, every window inside the input. Each window's four elements are compared
// in row-major order, as the general loop does.
bool is_pool_2x2(const Window& wh, const Window& ww, const PoolShape& s) {
  return wh.kernel == 2 && ww.kernel == 2 && wh.stride == 2 && ww.stride == 2 && wh.pad == 0 &&
         ww.pad == 0 && wh.dilation == 1 && ww.dilation == 1 && 2 * s.ho <= s.h &&
         2 * s.wo <= s.w && s.h * s.w <= std::numeric_limits<int32_t>::max();
}

template <class T>
void max_pool_2x2_plane(const T* in, T* out, int64_t* idx, const PoolShape& s) {
  using C = compute_t<T>;
  for (int64_t oh = 0; oh < s.ho; ++oh) {
    const T* r0 = in + 2 * oh * s.w;
    const T* r1 = r0 + s.w;
    T* y = out + oh * s.wo;
    int64_t* ix = idx + oh * s.wo;
    const int64_t base = 2 * oh * s.w;
    int64_t ow = 0;
#if defined(__SSE2__)
    if constexpr (std::is_same_v<T, float>) {
      // Four windows at a time: deinterleave even and odd columns of both rows, keep
      // a running best and the position (0..3) it came from.
      const __m128i lane = _mm_setr_epi32(0, 2, 4, 6);
      const __m128i w_vec = _mm_set1_epi32(static_cast<int32_t>(s.w));
      // A last partial group of windows is redone as the four last windows of the
      // row (recomputing a few gives the same values) instead of a branchy scalar tail.
      for (; ow < s.wo && s.wo >= 4; ow += 4) {
        ow = std::min(ow, s.wo - 4);
        const __m128 a0 = _mm_loadu_ps(r0 + 2 * ow), a1 = _mm_loadu_ps(r0 + 2 * ow + 4);
        const __m128 b0 = _mm_loadu_ps(r1 + 2 * ow), b1 = _mm_loadu_ps(r1 + 2 * ow + 4);
        const __m128 cand[4] = {_mm_shuffle_ps(a0, a1, _MM_SHUFFLE(2, 0, 2, 0)),
                                _mm_shuffle_ps(a0, a1, _MM_SHUFFLE(3, 1, 3, 1)),
                                _mm_shuffle_ps(b0, b1, _MM_SHUFFLE(2, 0, 2, 0)),
                                _mm_shuffle_ps(b0, b1, _MM_SHUFFLE(3, 1, 3, 1))};
        __m128 best = cand[0];
        __m128i where = _mm_setzero_si128();  // offset of the best within the plane row pair
        const __m128i offsets[4] = {_mm_setzero_si128(), _mm_set1_epi32(1), w_vec,
                                    _mm_add_epi32(w_vec, _mm_set1_epi32(1))};
        for (int k = 1; k < 4; ++k) {
          const __m128 v = cand[k];
          const __m128 better = _mm_or_ps(_mm_cmpgt_ps(v, best), _mm_cmpunord_ps(v, v));
          best = _mm_or_ps(_mm_and_ps(better, v), _mm_andnot_ps(better, best));
          const __m128i mask = _mm_castps_si128(better);
          where = _mm_or_si128(_mm_and_si128(mask, offsets[k]), _mm_andnot_si128(mask, where));
        }
        _mm_storeu_ps(y + ow, best);
        const __m128i pos = _mm_add_epi32(_mm_add_epi32(where, lane),
                                          _mm_set1_epi32(static_cast<int32_t>(base + 2 * ow)));
        // Positions are non-negative: widen to int64 by interleaving with zeros.
        const __m128i zero = _mm_setzero_si128();
        _mm_storeu_si128(reinterpret_cast<__m128i*>(ix + ow), _mm_unpacklo_epi32(pos, zero));
        _mm_storeu_si128(reinterpret_cast<__m128i*>(ix + ow + 2), _mm_unpackhi_epi32(pos, zero));
      }
    }
#endif
    for (; ow < s.wo; ++ow) {
      const C cand[4] = {load(r0[2 * ow]), load(r0[2 * ow + 1]), load(r1[2 * ow]),
                         load(r1[2 * ow + 1])};
      const int64_t offsets[4] = {0, 1, s.w, s.w + 1};
      C best = cand[0];
      int64_t where = 0;
      for (int k = 1; k < 4; ++k) {
        if (max_better(cand[k], best)) {
          best = cand[k];
          where = offsets[k];
        }
      }
      y[ow] = store<T>(best);
      ix[ow] = base + 2 * ow + where;
    }
  }
}

// grad_x of one plane for 2x2 stride-2 windows: each input element belongs to at
// most one window, so every element is written once (the gradient or 0) instead of
// zero-filling the plane and scattering into it. Returns false, having written
// nothing it needs to keep, when an index lies outside its own window (indices that
// did not come from max_pool2d); the caller then runs the general scatter.
template <class T>
bool max_pool_2x2_backward_plane(const T* g, const int64_t* idx, T* out, const PoolShape& s) {
  for (int64_t oh = 0; oh < s.ho; ++oh) {
    T* r0 = out + 2 * oh * s.w;
    T* r1 = r0 + s.w;
    const T* gy = g + oh * s.wo;
    const int64_t* ix = idx + oh * s.wo;
    const int64_t base = 2 * oh * s.w;
    int64_t ow = 0;
#if defined(__SSE2__)
    if constexpr (std::is_same_v<T, float>) {
      const __m128i lane = _mm_setr_epi32(0, 2, 4, 6);
      const __m128i w_vec = _mm_set1_epi32(static_cast<int32_t>(s.w));
      const __m128i one = _mm_set1_epi32(1);
      for (; ow < s.wo && s.wo >= 4; ow += 4) {
        ow = std::min(ow, s.wo - 4);  // as in the forward pass: overlap, no scalar tail
        // Offsets of the maxima within their windows, as int32 (low halves of the
        // int64 indices; a window offset is tiny, and the range check below catches
        // anything else).
        const __m128i lo = _mm_loadu_si128(reinterpret_cast<const __m128i*>(ix + ow));
        const __m128i hi = _mm_loadu_si128(reinterpret_cast<const __m128i*>(ix + ow + 2));
        const __m128i idx32 = _mm_castps_si128(
            _mm_shuffle_ps(_mm_castsi128_ps(lo), _mm_castsi128_ps(hi), _MM_SHUFFLE(2, 0, 2, 0)));
        const __m128i high32 = _mm_castps_si128(
            _mm_shuffle_ps(_mm_castsi128_ps(lo), _mm_castsi128_ps(hi), _MM_SHUFFLE(3, 1, 3, 1)));
        const __m128i rel = _mm_sub_epi32(
            idx32, _mm_add_epi32(lane, _mm_set1_epi32(static_cast<int32_t>(base + 2 * ow))));
        const __m128i m00 = _mm_cmpeq_epi32(rel, _mm_setzero_si128());
        const __m128i m01 = _mm_cmpeq_epi32(rel, one);
        const __m128i m10 = _mm_cmpeq_epi32(rel, w_vec);
        const __m128i m11 = _mm_cmpeq_epi32(rel, _mm_add_epi32(w_vec, one));
        const __m128i any = _mm_or_si128(_mm_or_si128(m00, m01), _mm_or_si128(m10, m11));
        const __m128i high_zero = _mm_cmpeq_epi32(high32, _mm_setzero_si128());
        if (_mm_movemask_epi8(_mm_and_si128(any, high_zero)) != 0xFFFF) return false;
        const __m128 v = _mm_loadu_ps(gy + ow);
        const __m128 e0 = _mm_and_ps(_mm_castsi128_ps(m00), v);  // row 0, even columns
        const __m128 o0 = _mm_and_ps(_mm_castsi128_ps(m01), v);
        const __m128 e1 = _mm_and_ps(_mm_castsi128_ps(m10), v);
        const __m128 o1 = _mm_and_ps(_mm_castsi128_ps(m11), v);
        _mm_storeu_ps(r0 + 2 * ow, _mm_unpacklo_ps(e0, o0));
        _mm_storeu_ps(r0 + 2 * ow + 4, _mm_unpackhi_ps(e0, o0));
        _mm_storeu_ps(r1 + 2 * ow, _mm_unpacklo_ps(e1, o1));
        _mm_storeu_ps(r1 + 2 * ow + 4, _mm_unpackhi_ps(e1, o1));
      }
    }
#endif
    for (; ow < s.wo; ++ow) {
      const int64_t rel = ix[ow] - (base + 2 * ow);
      if (rel != 0 && rel != 1 && rel != s.w && rel != s.w + 1) return false;
      const T v = gy[ow];
      r0[2 * ow] = rel == 0 ? v : T(0);
      r0[2 * ow + 1] = rel == 1 ? v : T(0);
      r1[2 * ow] = rel == s.w ? v : T(0);
      r1[2 * ow + 1] = rel == s.w + 1 ? v : T(0);
    }
    // An odd width leaves a last column no window reads.
    for (int64_t iw = 2 * s.wo; iw < s.w; ++iw) r0[iw] = r1[iw] = T(0);
  }
  // Likewise an odd height's last row.
  std::fill(out + 2 * s.ho * s.w, out + s.h * s.w, T(0));
  return true;
}

void max_pool2d_impl(const OpArgs& args) {
  args.expect_counts(1, 2);
  Window wh, ww;
  sdk::pool_windows(sdk::attrs::max_pool2d::read(args), wh, ww);
  const TensorView x = args.input(0), y = args.output(0), indices = args.output(1);
  const PoolShape s = pool_shape(x, y);
  expect_dtype(y, x.dtype, "y");
  expect_dtype(indices, KILN_DTYPE_INT64, "indices");
  KILN_SDK_CHECK_ARG(y.same_shape(indices), "indices must have y's shape");
  const bool fast = is_pool_2x2(wh, ww, s);
  visit_pool(x.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    using C = compute_t<T>;
    for_each_plane(s, s.ho * s.wo * wh.kernel * ww.kernel, [&](int64_t plane) {
      if (fast) {
        max_pool_2x2_plane(x.ptr<const T>() + plane * s.h * s.w, y.ptr<T>() + plane * s.ho * s.wo,
                           indices.ptr<int64_t>() + plane * s.ho * s.wo, s);
        return;
      }
      const T* in = x.ptr<const T>() + plane * s.h * s.w;
      T* out = y.ptr<T>() + plane * s.ho * s.wo;
      int64_t* idx = indices.ptr<int64_t>() + plane * s.ho * s.wo;
      for (int64_t oh = 0; oh < s.ho; ++oh) {
        for (int64_t ow = 0; ow < s.wo; ++ow) {
          // Padding is -inf: only real elements compete. First maximum wins ties; a
          // NaN wins over everything (the last one, as PyTorch).
          C best = -std::numeric_limits<C>::infinity();
          int64_t best_index = -1;
          for (int64_t kh = 0; kh < wh.kernel; ++kh) {
            const int64_t ih = oh * wh.stride - wh.pad + kh * wh.dilation;
            if (ih < 0 || ih >= s.h) continue;
            for (int64_t kw = 0; kw < ww.kernel; ++kw) {
              const int64_t iw = ow * ww.stride - ww.pad + kw * ww.dilation;
              if (iw < 0 || iw >= s.w) continue;
              const C v = load(in[ih * s.w + iw]);
              if (best_index < 0 || max_better(v, best)) {
                best = v;
                best_index = ih * s.w + iw;
              }
            }
          }
          out[oh * s.wo + ow] = store<T>(best);
          idx[oh * s.wo + ow] = best_index;
        }
      }
    });
  });
}

void max_pool2d_backward_impl(const OpArgs& args) {
  args.expect_counts(2, 1);
  const TensorView grad_y = args.input(0), indices = args.input(1), grad_x = args.output(0);
  const PoolShape s = pool_shape(grad_x, grad_y);
  expect_dtype(grad_x, grad_y.dtype, "grad_x");
  expect_dtype(indices, KILN_DTYPE_INT64, "indices");
  KILN_SDK_CHECK_ARG(grad_y.same_shape(indices), "indices must have grad_y's shape");
  Window wh, ww;
  sdk::pool_windows(sdk::attrs::max_pool2d_backward::read(args), wh, ww);
  const bool fast = is_pool_2x2(wh, ww, s);
  const int64_t plane_size = s.h * s.w;
  visit_pool(grad_y.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    using C = compute_t<T>;
    for_each_plane(s, plane_size + s.ho * s.wo, [&](int64_t plane) {
      const T* g = grad_y.ptr<const T>() + plane * s.ho * s.wo;
      const int64_t* idx = indices.ptr<const int64_t>() + plane * s.ho * s.wo;
      T* out = grad_x.ptr<T>() + plane * plane_size;
      if constexpr (!is_half_v<T>) {
        if (fast && max_pool_2x2_backward_plane(g, idx, out, s)) return;
      }
      if constexpr (is_half_v<T>) {
        // Accumulate in float, round once per element.
        std::vector<C> acc(static_cast<size_t>(plane_size), C(0));
        for (int64_t i = 0; i < s.ho * s.wo; ++i) {
          if (idx[i] >= 0 && idx[i] < plane_size) acc[static_cast<size_t>(idx[i])] += load(g[i]);
        }
        for (int64_t i = 0; i < plane_size; ++i) out[i] = store<T>(acc[static_cast<size_t>(i)]);
      } else {
        std::fill(out, out + plane_size, T(0));
        for (int64_t i = 0; i < s.ho * s.wo; ++i) {
          if (idx[i] >= 0 && idx[i] < plane_size) out[idx[i]] += g[i];
        }
      }
    });
  });
}

// ---- average pooling ---------------------------------------------------------------

// One output's window, clipped to the input, and PyTorch's divisor for it.
struct AvgWindow {
  int64_t h0, h1, w0, w1;
  int64_t divisor;
};

AvgWindow avg_window(int64_t oh, int64_t ow, const Window& wh, const Window& ww, const PoolShape& s,
                     bool count_include_pad) {
  int64_t h0 = oh * wh.stride - wh.pad, w0 = ow * ww.stride - ww.pad;
  int64_t h1 = std::min(h0 + wh.kernel, s.h + wh.pad), w1 = std::min(w0 + ww.kernel, s.w + ww.pad);
  const int64_t padded_size = (h1 - h0) * (w1 - w0);
  h0 = std::max<int64_t>(h0, 0);
  w0 = std::max<int64_t>(w0, 0);
  h1 = std::min(h1, s.h);
  w1 = std::min(w1, s.w);
  const int64_t divisor = count_include_pad ? padded_size : (h1 - h0) * (w1 - w0);
  return {h0, h1, w0, w1, divisor};
}

void avg_pool2d_impl(const OpArgs& args) {
  args.expect_counts(1, 1);
  Window wh, ww;
  const auto a = sdk::attrs::avg_pool2d::read(args);  // ceil_mode: y's shape reflects it
  sdk::pool_windows(a, wh, ww);
  const bool count_include_pad = a.count_include_pad != 0;
  const TensorView x = args.input(0), y = args.output(0);
  const PoolShape s = pool_shape(x, y);
  expect_dtype(y, x.dtype, "y");
  visit_pool(x.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    using Acc = std::conditional_t<std::is_same_v<T, double>, double, float>;
    for_each_plane(s, s.ho * s.wo * wh.kernel * ww.kernel, [&](int64_t plane) {
      const T* in = x.ptr<const T>() + plane * s.h * s.w;
      T* out = y.ptr<T>() + plane * s.ho * s.wo;
      for (int64_t oh = 0; oh < s.ho; ++oh) {
        for (int64_t ow = 0; ow < s.wo; ++ow) {
          const AvgWindow win = avg_window(oh, ow, wh, ww, s, count_include_pad);
          Acc sum = 0;
          for (int64_t ih = win.h0; ih < win.h1; ++ih) {
            for (int64_t iw = win.w0; iw < win.w1; ++iw)
              sum += static_cast<Acc>(load(in[ih * s.w + iw]));
          }
          out[oh * s.wo + ow] =
              store<T>(win.divisor > 0 ? sum / static_cast<Acc>(win.divisor) : Acc(0));
        }
      }
    });
  });
}

void avg_pool2d_backward_impl(const OpArgs& args) {
  args.expect_counts(1, 1);
  Window wh, ww;
  const auto a = sdk::attrs::avg_pool2d_backward::read(args);  // ceil_mode: y's shape reflects it
  sdk::pool_windows(a, wh, ww);
  const bool count_include_pad = a.count_include_pad != 0;
  const TensorView grad_y = args.input(0), grad_x = args.output(0);
  const PoolShape s = pool_shape(grad_x, grad_y);
  expect_dtype(grad_x, grad_y.dtype, "grad_x");
  visit_pool(grad_y.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    using Acc = std::conditional_t<std::is_same_v<T, double>, double, float>;
    for_each_plane(s, s.ho * s.wo * wh.kernel * ww.kernel, [&](int64_t plane) {
      const T* g = grad_y.ptr<const T>() + plane * s.ho * s.wo;
      T* out = grad_x.ptr<T>() + plane * s.h * s.w;
      std::vector<Acc> acc(static_cast<size_t>(s.h * s.w), Acc(0));
      for (int64_t oh = 0; oh < s.ho; ++oh) {
        for (int64_t ow = 0; ow < s.wo; ++ow) {
          const AvgWindow win = avg_window(oh, ow, wh, ww, s, count_include_pad);
          if (win.divisor <= 0) continue;
          const Acc share =
              static_cast<Acc>(load(g[oh * s.wo + ow])) / static_cast<Acc>(win.divisor);
          for (int64_t ih = win.h0; ih < win.h1; ++ih) {
            for (int64_t iw = win.w0; iw < win.w1; ++iw)
              acc[static_cast<size_t>(ih * s.w + iw)] += share;
          }
        }
      }
      for (int64_t i = 0; i < s.h * s.w; ++i) out[i] = store<T>(acc[static_cast<size_t>(i)]);
    });
  });
}

// ---- adaptive average pooling -----------------------------------------------------

// Window i of `out` over `in`: [floor(i·in/out), ceil((i+1)·in/out)).
int64_t adaptive_begin(int64_t i, int64_t in, int64_t out) { return i * in / out; }
int64_t adaptive_end(int64_t i, int64_t in, int64_t out) { return ((i + 1) * in + out - 1) / out; }

void adaptive_avg_pool2d_impl(const OpArgs& args) {
  args.expect_counts(1, 1);
  const TensorView x = args.input(0), y = args.output(0);
  const PoolShape s = pool_shape(x, y);
  expect_dtype(y, x.dtype, "y");
  visit_pool(x.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    using Acc = std::conditional_t<std::is_same_v<T, double>, double, float>;
    for_each_plane(s, s.h * s.w + s.ho * s.wo, [&](int64_t plane) {
      const T* in = x.ptr<const T>() + plane * s.h * s.w;
      T* out = y.ptr<T>() + plane * s.ho * s.wo;
      for (int64_t oh = 0; oh < s.ho; ++oh) {
        const int64_t h0 = adaptive_begin(oh, s.h, s.ho), h1 = adaptive_end(oh, s.h, s.ho);
        for (int64_t ow = 0; ow < s.wo; ++ow) {
          const int64_t w0 = adaptive_begin(ow, s.w, s.wo), w1 = adaptive_end(ow, s.w, s.wo);
          Acc sum = 0;
          for (int64_t ih = h0; ih < h1; ++ih) {
            for (int64_t iw = w0; iw < w1; ++iw) sum += static_cast<Acc>(load(in[ih * s.w + iw]));
          }
          const int64_t count = (h1 - h0) * (w1 - w0);
          out[oh * s.wo + ow] = store<T>(count > 0 ? sum / static_cast<Acc>(count) : Acc(0));
        }
      }
    });
  });
}

void adaptive_avg_pool2d_backward_impl(const OpArgs& args) {
  args.expect_counts(1, 1);
  const TensorView grad_y = args.input(0), grad_x = args.output(0);
  const PoolShape s = pool_shape(grad_x, grad_y);
  expect_dtype(grad_x, grad_y.dtype, "grad_x");
  visit_pool(grad_y.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    using Acc = std::conditional_t<std::is_same_v<T, double>, double, float>;
    for_each_plane(s, s.h * s.w + s.ho * s.wo, [&](int64_t plane) {
      const T* g = grad_y.ptr<const T>() + plane * s.ho * s.wo;
      T* out = grad_x.ptr<T>() + plane * s.h * s.w;
      std::vector<Acc> acc(static_cast<size_t>(s.h * s.w), Acc(0));
      for (int64_t oh = 0; oh < s.ho; ++oh) {
        const int64_t h0 = adaptive_begin(oh, s.h, s.ho), h1 = adaptive_end(oh, s.h, s.ho);
        for (int64_t ow = 0; ow < s.wo; ++ow) {
          const int64_t w0 = adaptive_begin(ow, s.w, s.wo), w1 = adaptive_end(ow, s.w, s.wo);
          const int64_t count = (h1 - h0) * (w1 - w0);
          if (count <= 0) continue;
          const Acc share = static_cast<Acc>(load(g[oh * s.wo + ow])) / static_cast<Acc>(count);
          for (int64_t ih = h0; ih < h1; ++ih) {
            for (int64_t iw = w0; iw < w1; ++iw) acc[static_cast<size_t>(ih * s.w + iw)] += share;
          }
        }
      }
      for (int64_t i = 0; i < s.h * s.w; ++i) out[i] = store<T>(acc[static_cast<size_t>(i)]);
    });
  });
}

int32_t supports_float_pool(void*, const kiln_op_args* args) {
  const kiln_dtype d = input_dtype(args, 0);
  return d == KILN_DTYPE_FLOAT32 || d == KILN_DTYPE_FLOAT64 || d == KILN_DTYPE_FLOAT16 ||
         d == KILN_DTYPE_BFLOAT16;
}

}  // namespace

void add_pool_kernels(KernelList& list) {
  list.push_back(
      catalogue_entry<op::max_pool2d>(&run_kernel<max_pool2d_impl>, &supports_float_pool, 0));
  list.push_back(catalogue_entry<op::max_pool2d_backward>(&run_kernel<max_pool2d_backward_impl>,
                                                          &supports_float_pool, 0));
  list.push_back(
      catalogue_entry<op::avg_pool2d>(&run_kernel<avg_pool2d_impl>, &supports_float_pool, 0));
  list.push_back(catalogue_entry<op::avg_pool2d_backward>(&run_kernel<avg_pool2d_backward_impl>,
                                                          &supports_float_pool, 0));
  list.push_back(catalogue_entry<op::adaptive_avg_pool2d>(&run_kernel<adaptive_avg_pool2d_impl>,
                                                          &supports_float_pool, 0));
  list.push_back(catalogue_entry<op::adaptive_avg_pool2d_backward>(
      &run_kernel<adaptive_avg_pool2d_backward_impl>, &supports_float_pool, 0));
}

}  // namespace kiln::cpu
