// kiln.batch_norm, kiln.layer_norm and their backward kernels.
//
// Contiguous operands; float32 and float64, and (staged, staged.h: norm.half) float16
// and bfloat16, whose values widen exactly and whose results round through float32, as
// the CPU plugin's widened kernels do (so a half result has the CPU's bits). Every statistic —
// means, variances, the sums of the backward passes — accumulates in float64 (as the CPU plugin
// does), also for float32 inputs, and the per-element formulas are evaluated in float64 too, so
// float32 results differ from the CPU's only by the order of the float64 sums.
//
// Determinism: each sum is a fixed tree over a fixed assignment of elements to
// threads and blocks — chosen from the shape alone, never from the device or timing —
// and partial results are combined in a fixed order by one block; no atomics. The
// same inputs give the same bits on every run and on every GPU.
//
// Variance: one pass over shifted data. With K the channel's (or row's) first element,
// Σ(x−K) and Σ(x−K)² are accumulated in float64 and var = (Σd² − (Σd)²/n)/n. The shift
// removes the cancellation of the textbook one-pass formula (K is a sample of the
// data, so |mean − K| is of the order of the spread), and it lets partial sums of
// different blocks simply add, so x is read once for the statistics and once to
// normalize.
//
// Batch norm: x [N, C, S...] is, per channel, N rows of S contiguous elements. Pass 1:
// a (chunks × C) grid of blocks, each reducing a contiguous range of one channel's
// N·S elements to partial sums; pass 2: one block per channel adds the partials in
// order, writes mean/invstd (or the weight/bias gradients), updates the running
// statistics and leaves per-channel coefficients in scratch; pass 3: an elementwise
// kernel applies them. Layer norm: one block per row for the row statistics and
// grad_x; the weight/bias gradients are column sums done in row chunks and then added
// over the chunks, in order.
#include <cmath>

#include "dnn_util.cuh"
#include "kernels/registry.h"
#include "kiln/sdk/norm.h"
#include "staged.h"

namespace kiln::cuda {

namespace {

using namespace dnn;

// float16 and bfloat16 only while staged code is on (supports_half_norm declines them
// otherwise, so this is a second lock).
template <class F>
void visit_norm(kiln_dtype dtype, F&& fn) {
  static const bool half_on = staged_on(kStagedHalfNorm);
  const bool ok = half_on ? visit_float(dtype, fn) : visit_f32_f64(dtype, fn);
  if (!ok) sdk::unsupported_dtype(dtype);
}

int32_t supports_half_norm(void* context, const kiln_op_args* args) noexcept {
  if (sdk::supports_norm(context, args)) return 1;
  const kiln_dtype d = sdk::input_dtype(args, 0);
  if (d != KILN_DTYPE_FLOAT16 && d != KILN_DTYPE_BFLOAT16) return 0;
  static const bool half_on = staged_on(kStagedHalfNorm);
  return half_on ? 1 : 0;
}

// A float64 result rounded to the stored type: through float32 for the half types, as
// the CPU's widened kernel (float32 kernel, then float32 → half) rounds it.
template <class T>
__device__ __forceinline__ T narrow(double v) {
  if constexpr (is_half_v<T>)
    return T(static_cast<float>(v));
  else
    return static_cast<T>(v);
}

using sdk::ChannelLayout;
using sdk::RowLayout;

// Chunks per channel for pass 1: about 4096 elements per block, at most ~2048 blocks
// in all; a function of the shape only, so the summation tree is too.
int64_t chunks_for(const ChannelLayout& l) {
  const int64_t by_size = (l.count() + 4095) / 4096;
  const int64_t by_blocks = std::max<int64_t>(1, 2048 / std::max<int64_t>(1, l.c));
  return std::max<int64_t>(1, std::min(by_size, by_blocks));
}

unsigned channel_grid_y(int64_t channels) {
  return static_cast<unsigned>(std::min<int64_t>(channels, 65535));
}

// Elementwise index → (channel, offset) arithmetic in 32 bits when it fits (a 64-bit
// division costs several times a 32-bit one, and these kernels do one per element).
bool fits_32(int64_t n) { return n >= 0 && n <= INT32_MAX; }

// ---- batch norm --------------------------------------------------------------------------

// Pass 1 of the forward: per (chunk, channel) block, Σd and Σd² with d = x − K.
template <class T, class I>
__global__ void bn_stats_kernel(const T* __restrict__ x, double* __restrict__ partials,
                                int64_t channels, int64_t s, int64_t count, int64_t chunks) {
  __shared__ double scratch[32];
  const int64_t chunk_len = (count + chunks - 1) / chunks;
  for (int64_t c = blockIdx.y; c < channels; c += gridDim.y) {
    const int64_t begin = blockIdx.x * chunk_len;
    const int64_t end = min(count, begin + chunk_len);
    const double shift = count > 0 ? static_cast<double>(x[c * s]) : 0.0;
    double sum = 0, squares = 0;
    for (int64_t j = begin + threadIdx.x; j < end; j += blockDim.x) {
      const I n = static_cast<I>(j) / static_cast<I>(s);
      const I within = static_cast<I>(j) - n * static_cast<I>(s);
      const double d =
          static_cast<double>(x[(static_cast<int64_t>(n) * channels + c) * s + within]) - shift;
      sum += d;
      squares += d * d;
    }
    sum = block_sum(sum, scratch);
    squares = block_sum(squares, scratch);
    if (threadIdx.x == 0) {
      partials[(c * chunks + blockIdx.x) * 2] = sum;
      partials[(c * chunks + blockIdx.x) * 2 + 1] = squares;
    }
  }
}

// Per-channel coefficients pass 3 uses: y = (x − mean)·scale + shift, in float64.
struct BnForwardCoef {
  double mean, scale, shift;
};

// Pass 2 of the forward: one block per channel.
template <class T>
__global__ void bn_finalize_kernel(const T* __restrict__ x, const double* __restrict__ partials,
                                   const T* __restrict__ weight, const T* __restrict__ bias,
                                   T* __restrict__ mean_out, T* __restrict__ invstd_out,
                                   T* __restrict__ running_mean, T* __restrict__ running_var,
                                   BnForwardCoef* __restrict__ coef, int64_t channels, int64_t s,
                                   int64_t count, int64_t chunks, double momentum, double eps) {
  __shared__ double scratch[32];
  for (int64_t c = blockIdx.x; c < channels; c += gridDim.x) {
    double sum = 0, squares = 0;
    for (int64_t k = threadIdx.x; k < chunks; k += blockDim.x) {
      sum += partials[(c * chunks + k) * 2];
      squares += partials[(c * chunks + k) * 2 + 1];
    }
    sum = block_sum(sum, scratch);
    squares = block_sum(squares, scratch);
    if (threadIdx.x == 0) {
      const double n = static_cast<double>(count);
      const double shift = count > 0 ? static_cast<double>(x[c * s]) : 0.0;
      const double shifted_mean = count > 0 ? sum / n : 0.0;
      const double mu = shift + shifted_mean;
      // Σ(x − mean)², never negative (rounding could make the difference so).
      const double m2 = count > 0 ? fmax(0.0, squares - sum * shifted_mean) : 0.0;
      const double var = count > 0 ? m2 / n : 0.0;
      const double inv = 1.0 / sqrt(var + eps);
      coef[c] = {mu, inv * static_cast<double>(weight[c]), static_cast<double>(bias[c])};
      mean_out[c] = narrow<T>(mu);
      invstd_out[c] = narrow<T>(inv);
      // Running statistics use the unbiased variance.
      const double unbiased = count > 1 ? m2 / static_cast<double>(count - 1) : var;
      running_mean[c] =
          narrow<T>((1.0 - momentum) * static_cast<double>(running_mean[c]) + momentum * mu);
      running_var[c] =
          narrow<T>((1.0 - momentum) * static_cast<double>(running_var[c]) + momentum * unbiased);
    }
  }
}

// Pass 3 of the forward.
template <class T, class I>
__global__ void bn_apply_kernel(const T* __restrict__ x, T* __restrict__ y,
                                const BnForwardCoef* __restrict__ coef, int64_t total,
                                int64_t channels, int64_t s) {
  for (int64_t i = first_index(); i < total; i += grid_stride()) {
    const I c = static_cast<I>(i) / static_cast<I>(s) % static_cast<I>(channels);
    const BnForwardCoef k = coef[c];
    y[i] = narrow<T>((static_cast<double>(x[i]) - k.mean) * k.scale + k.shift);
  }
}

void batch_norm_impl(const OpArgs& args, const Launch& l) {
  const sdk::BatchNorm o = sdk::batch_norm_operands(args);
  const TensorView &x = o.x, &weight = o.weight, &bias = o.bias, &y = o.y, &mean = o.mean,
                   &invstd = o.invstd, &running_mean = o.running_mean, &running_var = o.running_var;
  const double momentum = o.momentum, eps = o.eps;
  const ChannelLayout& cl = o.layout;
  if (cl.c == 0) return;
  const int64_t chunks = chunks_for(cl);
  auto* partials =
      static_cast<double*>(l.scratch(static_cast<size_t>(cl.c * chunks * 2) * sizeof(double)));
  auto* coef =
      static_cast<BnForwardCoef*>(l.scratch(static_cast<size_t>(cl.c) * sizeof(BnForwardCoef)));
  const bool small = fits_32(x.numel());
  visit_norm(x.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const dim3 stats_grid(static_cast<unsigned>(chunks), channel_grid_y(cl.c));
    if (small) {
      bn_stats_kernel<T, uint32_t><<<stats_grid, kThreads, 0, l.stream()>>>(
          x.ptr<const T>(), partials, cl.c, cl.s, cl.count(), chunks);
    } else {
      bn_stats_kernel<T, uint64_t><<<stats_grid, kThreads, 0, l.stream()>>>(
          x.ptr<const T>(), partials, cl.c, cl.s, cl.count(), chunks);
    }
    check_launch("batch_norm: statistics");
    bn_finalize_kernel<T><<<channel_grid_y(cl.c), kThreads, 0, l.stream()>>>(
        x.ptr<const T>(), partials, weight.ptr<const T>(), bias.ptr<const T>(), mean.ptr<T>(),
        invstd.ptr<T>(), running_mean.ptr<T>(), running_var.ptr<T>(), coef, cl.c, cl.s, cl.count(),
        chunks, momentum, eps);
    check_launch("batch_norm: finalize");
    const int64_t total = x.numel();
    if (total == 0) return;
    if (small) {
      bn_apply_kernel<T, uint32_t><<<grid_for(total, l), kThreads, 0, l.stream()>>>(
          x.ptr<const T>(), y.ptr<T>(), coef, total, cl.c, cl.s);
    } else {
      bn_apply_kernel<T, uint64_t><<<grid_for(total, l), kThreads, 0, l.stream()>>>(
          x.ptr<const T>(), y.ptr<T>(), coef, total, cl.c, cl.s);
    }
    check_launch("batch_norm: normalize");
  });
}

// Pass 1 of the backward: per (chunk, channel) block, Σg and Σg·(x − mean).
template <class T, class I>
__global__ void bn_backward_stats_kernel(const T* __restrict__ grad_y, const T* __restrict__ x,
                                         const T* __restrict__ mean, double* __restrict__ partials,
                                         int64_t channels, int64_t s, int64_t count,
                                         int64_t chunks) {
  __shared__ double scratch[32];
  const int64_t chunk_len = (count + chunks - 1) / chunks;
  for (int64_t c = blockIdx.y; c < channels; c += gridDim.y) {
    const int64_t begin = blockIdx.x * chunk_len;
    const int64_t end = min(count, begin + chunk_len);
    const double mu = static_cast<double>(mean[c]);
    double sum_g = 0, sum_g_centered = 0;
    for (int64_t j = begin + threadIdx.x; j < end; j += blockDim.x) {
      const I n = static_cast<I>(j) / static_cast<I>(s);
      const I within = static_cast<I>(j) - n * static_cast<I>(s);
      const int64_t at = (static_cast<int64_t>(n) * channels + c) * s + within;
      const double g = static_cast<double>(grad_y[at]);
      sum_g += g;
      sum_g_centered += g * (static_cast<double>(x[at]) - mu);
    }
    sum_g = block_sum(sum_g, scratch);
    sum_g_centered = block_sum(sum_g_centered, scratch);
    if (threadIdx.x == 0) {
      partials[(c * chunks + blockIdx.x) * 2] = sum_g;
      partials[(c * chunks + blockIdx.x) * 2 + 1] = sum_g_centered;
    }
  }
}

// grad_x = scale·(g − mean_g − (x − mean)·invstd·mean_g_xhat), in float64.
struct BnBackwardCoef {
  double mean, invstd, scale, mean_g, mean_g_xhat;
};

template <class T>
__global__ void bn_backward_finalize_kernel(
    const double* __restrict__ partials, const T* __restrict__ weight, const T* __restrict__ mean,
    const T* __restrict__ invstd, T* __restrict__ grad_weight, T* __restrict__ grad_bias,
    BnBackwardCoef* __restrict__ coef, int64_t channels, int64_t count, int64_t chunks) {
  __shared__ double scratch[32];
  for (int64_t c = blockIdx.x; c < channels; c += gridDim.x) {
    double sum_g = 0, sum_g_centered = 0;
    for (int64_t k = threadIdx.x; k < chunks; k += blockDim.x) {
      sum_g += partials[(c * chunks + k) * 2];
      sum_g_centered += partials[(c * chunks + k) * 2 + 1];
    }
    sum_g = block_sum(sum_g, scratch);
    sum_g_centered = block_sum(sum_g_centered, scratch);
    if (threadIdx.x == 0) {
      const double inv = static_cast<double>(invstd[c]);
      const double sum_g_xhat = sum_g_centered * inv;
      grad_bias[c] = narrow<T>(sum_g);
      grad_weight[c] = narrow<T>(sum_g_xhat);
      const double n = static_cast<double>(count > 1 ? count : 1);
      coef[c] = {static_cast<double>(mean[c]), inv, static_cast<double>(weight[c]) * inv, sum_g / n,
                 sum_g_xhat / n};
    }
  }
}

template <class T, class I>
__global__ void bn_backward_apply_kernel(const T* __restrict__ grad_y, const T* __restrict__ x,
                                         T* __restrict__ grad_x,
                                         const BnBackwardCoef* __restrict__ coef, int64_t total,
                                         int64_t channels, int64_t s) {
  for (int64_t i = first_index(); i < total; i += grid_stride()) {
    const I c = static_cast<I>(i) / static_cast<I>(s) % static_cast<I>(channels);
    const BnBackwardCoef k = coef[c];
    const double xhat = (static_cast<double>(x[i]) - k.mean) * k.invstd;
    grad_x[i] =
        narrow<T>(k.scale * (static_cast<double>(grad_y[i]) - k.mean_g - xhat * k.mean_g_xhat));
  }
}

void batch_norm_backward_impl(const OpArgs& args, const Launch& l) {
  const sdk::BatchNormBackward o = sdk::batch_norm_backward_operands(args);
  const TensorView &grad_y = o.grad_y, &x = o.x, &weight = o.weight, &mean = o.mean,
                   &invstd = o.invstd, &grad_x = o.grad_x, &grad_weight = o.grad_weight,
                   &grad_bias = o.grad_bias;
  const ChannelLayout& cl = o.layout;
  if (cl.c == 0) return;
  const int64_t chunks = chunks_for(cl);
  auto* partials =
      static_cast<double*>(l.scratch(static_cast<size_t>(cl.c * chunks * 2) * sizeof(double)));
  auto* coef =
      static_cast<BnBackwardCoef*>(l.scratch(static_cast<size_t>(cl.c) * sizeof(BnBackwardCoef)));
  const bool small = fits_32(x.numel());
  visit_norm(x.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const dim3 stats_grid(static_cast<unsigned>(chunks), channel_grid_y(cl.c));
    if (small) {
      bn_backward_stats_kernel<T, uint32_t><<<stats_grid, kThreads, 0, l.stream()>>>(
          grad_y.ptr<const T>(), x.ptr<const T>(), mean.ptr<const T>(), partials, cl.c, cl.s,
          cl.count(), chunks);
    } else {
      bn_backward_stats_kernel<T, uint64_t><<<stats_grid, kThreads, 0, l.stream()>>>(
          grad_y.ptr<const T>(), x.ptr<const T>(), mean.ptr<const T>(), partials, cl.c, cl.s,
          cl.count(), chunks);
    }
    check_launch("batch_norm_backward: sums");
    bn_backward_finalize_kernel<T><<<channel_grid_y(cl.c), kThreads, 0, l.stream()>>>(
        partials, weight.ptr<const T>(), mean.ptr<const T>(), invstd.ptr<const T>(),
        grad_weight.ptr<T>(), grad_bias.ptr<T>(), coef, cl.c, cl.count(), chunks);
    check_launch("batch_norm_backward: finalize");
    const int64_t total = x.numel();
    if (total == 0) return;
    if (small) {
      bn_backward_apply_kernel<T, uint32_t><<<grid_for(total, l), kThreads, 0, l.stream()>>>(
          grad_y.ptr<const T>(), x.ptr<const T>(), grad_x.ptr<T>(), coef, total, cl.c, cl.s);
    } else {
      bn_backward_apply_kernel<T, uint64_t><<<grid_for(total, l), kThreads, 0, l.stream()>>>(
          grad_y.ptr<const T>(), x.ptr<const T>(), grad_x.ptr<T>(), coef, total, cl.c, cl.s);
    }
    check_launch("batch_norm_backward: grad_x");
  });
}

// ---- layer norm --------------------------------------------------------------------------

// x viewed as [M rows, D] with D the product of the last `normalized_ndim` dims.
// Threads per row block: about four elements per thread, 32 to 512 (a function of D
// only, like the summation tree it sets).
int row_threads(int64_t d) {
  int threads = 32;
  while (threads < 512 && threads * 4 < d) threads *= 2;
  return threads;
}

unsigned row_grid(int64_t rows) {
  return static_cast<unsigned>(std::min<int64_t>(rows, 65535 * 8));
}

template <class T>
__global__ void layer_norm_kernel(const T* __restrict__ x, const T* __restrict__ weight,
                                  const T* __restrict__ bias, T* __restrict__ y,
                                  T* __restrict__ mean_out, T* __restrict__ invstd_out, int64_t m,
                                  int64_t d, double eps) {
  __shared__ double scratch[32];
  for (int64_t r = blockIdx.x; r < m; r += gridDim.x) {
    const T* p = x + r * d;
    const double shift = static_cast<double>(p[0]);
    double sum = 0, squares = 0;
    for (int64_t i = threadIdx.x; i < d; i += blockDim.x) {
      const double v = static_cast<double>(p[i]) - shift;
      sum += v;
      squares += v * v;
    }
    sum = block_sum(sum, scratch);
    squares = block_sum(squares, scratch);
    const double n = static_cast<double>(d);
    const double shifted_mean = sum / n;
    const double mu = shift + shifted_mean;
    const double var = fmax(0.0, squares - sum * shifted_mean) / n;
    const double inv = 1.0 / sqrt(var + eps);
    T* q = y + r * d;
    for (int64_t i = threadIdx.x; i < d; i += blockDim.x) {
      q[i] = narrow<T>((static_cast<double>(p[i]) - mu) * inv * static_cast<double>(weight[i]) +
                       static_cast<double>(bias[i]));
    }
    if (threadIdx.x == 0) {
      mean_out[r] = narrow<T>(mu);
      invstd_out[r] = narrow<T>(inv);
    }
  }
}

void layer_norm_impl(const OpArgs& args, const Launch& l) {
  const sdk::LayerNorm o = sdk::layer_norm_operands(args);
  const TensorView &x = o.x, &weight = o.weight, &bias = o.bias, &y = o.y, &mean = o.mean,
                   &invstd = o.invstd;
  const double eps = o.eps;
  const RowLayout& rl = o.layout;
  if (rl.m == 0) return;
  visit_norm(x.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    layer_norm_kernel<T><<<row_grid(rl.m), row_threads(rl.d), 0, l.stream()>>>(
        x.ptr<const T>(), weight.ptr<const T>(), bias.ptr<const T>(), y.ptr<T>(), mean.ptr<T>(),
        invstd.ptr<T>(), rl.m, rl.d, eps);
  });
  check_launch("layer_norm");
}

// grad_x, one block per row.
template <class T>
__global__ void layer_norm_backward_rows_kernel(const T* __restrict__ grad_y,
                                                const T* __restrict__ x,
                                                const T* __restrict__ weight,
                                                const T* __restrict__ mean,
                                                const T* __restrict__ invstd,
                                                T* __restrict__ grad_x, int64_t m, int64_t d) {
  __shared__ double scratch[32];
  for (int64_t r = blockIdx.x; r < m; r += gridDim.x) {
    const T* g = grad_y + r * d;
    const T* p = x + r * d;
    const double mu = static_cast<double>(mean[r]);
    const double inv = static_cast<double>(invstd[r]);
    double sum_dxhat = 0, sum_dxhat_xhat = 0;
    for (int64_t i = threadIdx.x; i < d; i += blockDim.x) {
      const double dxhat = static_cast<double>(g[i]) * static_cast<double>(weight[i]);
      sum_dxhat += dxhat;
      sum_dxhat_xhat += dxhat * (static_cast<double>(p[i]) - mu) * inv;
    }
    sum_dxhat = block_sum(sum_dxhat, scratch);
    sum_dxhat_xhat = block_sum(sum_dxhat_xhat, scratch);
    const double a = sum_dxhat / static_cast<double>(d);
    const double b = sum_dxhat_xhat / static_cast<double>(d);
    T* dx = grad_x + r * d;
    for (int64_t i = threadIdx.x; i < d; i += blockDim.x) {
      const double xhat = (static_cast<double>(p[i]) - mu) * inv;
      const double dxhat = static_cast<double>(g[i]) * static_cast<double>(weight[i]);
      dx[i] = narrow<T>(inv * (dxhat - a - xhat * b));
    }
  }
}

// grad_weight / grad_bias, pass 1: block (column block, row chunk); each thread sums
// one column over the chunk's rows, in order.
template <class T>
__global__ void layer_norm_backward_columns_kernel(const T* __restrict__ grad_y,
                                                   const T* __restrict__ x,
                                                   const T* __restrict__ mean,
                                                   const T* __restrict__ invstd,
                                                   double* __restrict__ partials, int64_t m,
                                                   int64_t d, int64_t chunks) {
  const int64_t j = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (j >= d) return;
  const int64_t rows_per_chunk = (m + chunks - 1) / chunks;
  const int64_t r0 = blockIdx.y * rows_per_chunk, r1 = min(m, r0 + rows_per_chunk);
  double gw = 0, gb = 0;
  for (int64_t r = r0; r < r1; ++r) {
    const double g = static_cast<double>(grad_y[r * d + j]);
    gb += g;
    gw += g * (static_cast<double>(x[r * d + j]) - static_cast<double>(mean[r])) *
          static_cast<double>(invstd[r]);
  }
  partials[(blockIdx.y * d + j) * 2] = gw;
  partials[(blockIdx.y * d + j) * 2 + 1] = gb;
}

// Pass 2: each column adds its chunks' partial sums, in order.
template <class T>
__global__ void layer_norm_backward_reduce_kernel(const double* __restrict__ partials,
                                                  T* __restrict__ grad_weight,
                                                  T* __restrict__ grad_bias, int64_t d,
                                                  int64_t chunks) {
  for (int64_t j = first_index(); j < d; j += grid_stride()) {
    double gw = 0, gb = 0;
    for (int64_t k = 0; k < chunks; ++k) {
      gw += partials[(k * d + j) * 2];
      gb += partials[(k * d + j) * 2 + 1];
    }
    grad_weight[j] = narrow<T>(gw);
    grad_bias[j] = narrow<T>(gb);
  }
}

void layer_norm_backward_impl(const OpArgs& args, const Launch& l) {
  const sdk::LayerNormBackward o = sdk::layer_norm_backward_operands(args);
  const TensorView &grad_y = o.grad_y, &x = o.x, &weight = o.weight, &mean = o.mean,
                   &invstd = o.invstd, &grad_x = o.grad_x, &grad_weight = o.grad_weight,
                   &grad_bias = o.grad_bias;
  const RowLayout& rl = o.layout;
  if (rl.d == 0) return;
  // Row chunks of at least 32 rows, at most 512 chunks: a function of M only.
  const int64_t chunks = std::max<int64_t>(1, std::min<int64_t>((rl.m + 31) / 32, 512));
  auto* partials =
      static_cast<double*>(l.scratch(static_cast<size_t>(chunks * rl.d * 2) * sizeof(double)));
  visit_norm(x.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if (rl.m > 0) {
      layer_norm_backward_rows_kernel<T><<<row_grid(rl.m), row_threads(rl.d), 0, l.stream()>>>(
          grad_y.ptr<const T>(), x.ptr<const T>(), weight.ptr<const T>(), mean.ptr<const T>(),
          invstd.ptr<const T>(), grad_x.ptr<T>(), rl.m, rl.d);
      check_launch("layer_norm_backward: grad_x");
    }
    const dim3 grid(static_cast<unsigned>((rl.d + kThreads - 1) / kThreads),
                    static_cast<unsigned>(chunks));
    layer_norm_backward_columns_kernel<T><<<grid, kThreads, 0, l.stream()>>>(
        grad_y.ptr<const T>(), x.ptr<const T>(), mean.ptr<const T>(), invstd.ptr<const T>(),
        partials, rl.m, rl.d, chunks);
    check_launch("layer_norm_backward: column sums");
    layer_norm_backward_reduce_kernel<T><<<grid_for(rl.d, l), kThreads, 0, l.stream()>>>(
        partials, grad_weight.ptr<T>(), grad_bias.ptr<T>(), rl.d, chunks);
    check_launch("layer_norm_backward: grad_weight, grad_bias");
  });
}

}  // namespace

void add_norm_kernels(KernelList& list) {
  list.push_back(catalogue_entry<op::batch_norm>(&batch_norm_impl, &supports_half_norm, 0));
  list.push_back(
      catalogue_entry<op::batch_norm_backward>(&batch_norm_backward_impl, &supports_half_norm, 0));
  list.push_back(catalogue_entry<op::layer_norm>(&layer_norm_impl, &supports_half_norm, 0));
  list.push_back(
      catalogue_entry<op::layer_norm_backward>(&layer_norm_backward_impl, &supports_half_norm, 0));
}

}  // namespace kiln::cuda
