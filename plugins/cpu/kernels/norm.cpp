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

#include "elementwise.h"
#include "registry.h"

namespace kiln::cpu {

namespace {

using NormTypes = TypeList<float, double>;
using Named = std::pair<const Tensor*, const char*>;

template <class F>
void dispatch_norm(kiln_dtype dtype, F&& fn) {
  if (!dispatch<NormTypes>(dtype, fn)) unsupported_dtype(dtype);
}

// x [N, C, *] viewed as N blocks of C channels of S contiguous elements.
struct ChannelLayout {
  int64_t n, c, s;
  int64_t count() const { return n * s; }
  int64_t at(int64_t batch, int64_t channel) const { return (batch * c + channel) * s; }
};

ChannelLayout channel_layout(const Tensor& x) {
  KILN_SDK_CHECK_ARG(x.ndim >= 2, "x must be [N, C, *], got ", shape_string(x));
  expect_contiguous(x, "x");
  int64_t s = 1;
  for (int32_t d = 2; d < x.ndim; ++d) s *= x.shape[d];
  return {x.shape[0], x.shape[1], s};
}

void expect_channel_vector(const Tensor& t, const ChannelLayout& l, kiln_dtype dtype,
                           const char* name) {
  expect_shape(t, {l.c}, name);
  expect_dtype(t, dtype, name);
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
  args.expect_counts(3, 5);
  const double momentum = args.attr_float("momentum");
  const double eps = args.attr_float("eps");
  const Tensor x = args.input(0), weight = args.input(1), bias = args.input(2);
  const Tensor y = args.output(0), mean = args.output(1), invstd = args.output(2);
  const Tensor running_mean = args.output(3), running_var = args.output(4);
  const ChannelLayout l = channel_layout(x);
  expect_same_shape(y, x, "y");
  expect_contiguous(y, "y");
  expect_dtype(y, x.dtype, "y");
  for (const Named& v : {Named{&weight, "weight"}, Named{&bias, "bias"}, Named{&mean, "mean"},
                         Named{&invstd, "invstd"}, Named{&running_mean, "running_mean"},
                         Named{&running_var, "running_var"}}) {
    expect_channel_vector(*v.first, l, x.dtype, v.second);
  }
  dispatch_norm(x.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* in = x.ptr<const T>();
    T* out = y.ptr<T>();
    for_each_channel(l, [&](int64_t ch) {
      const int64_t count = l.count();
      double sum = 0;
      for (int64_t b = 0; b < l.n; ++b) {
        const T* p = in + l.at(b, ch);
        for (int64_t i = 0; i < l.s; ++i) sum += static_cast<double>(p[i]);
      }
      const double mu = count > 0 ? sum / static_cast<double>(count) : 0.0;
      double squares = 0;
      for (int64_t b = 0; b < l.n; ++b) {
        const T* p = in + l.at(b, ch);
        for (int64_t i = 0; i < l.s; ++i) {
          const double d = static_cast<double>(p[i]) - mu;
          squares += d * d;
        }
      }
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
  args.expect_counts(5, 3);
  const Tensor grad_y = args.input(0), x = args.input(1), weight = args.input(2);
  const Tensor mean = args.input(3), invstd = args.input(4);
  const Tensor grad_x = args.output(0), grad_weight = args.output(1), grad_bias = args.output(2);
  const ChannelLayout l = channel_layout(x);
  for (const Tensor* t : {&grad_y, &grad_x}) {
    expect_same_shape(*t, x, "gradient");
    expect_contiguous(*t, "gradient");
    expect_dtype(*t, x.dtype, "gradient");
  }
  for (const Named& v : {Named{&weight, "weight"}, Named{&mean, "mean"}, Named{&invstd, "invstd"},
                         Named{&grad_weight, "grad_weight"}, Named{&grad_bias, "grad_bias"}}) {
    expect_channel_vector(*v.first, l, x.dtype, v.second);
  }
  dispatch_norm(x.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    for_each_channel(l, [&](int64_t ch) {
      const double mu = static_cast<double>(mean.ptr<const T>()[ch]);
      const double inv = static_cast<double>(invstd.ptr<const T>()[ch]);
      double sum_g = 0, sum_g_xhat = 0;
      for (int64_t b = 0; b < l.n; ++b) {
        const T* g = grad_y.ptr<const T>() + l.at(b, ch);
        const T* p = x.ptr<const T>() + l.at(b, ch);
        for (int64_t i = 0; i < l.s; ++i) {
          sum_g += static_cast<double>(g[i]);
          sum_g_xhat += static_cast<double>(g[i]) * (static_cast<double>(p[i]) - mu) * inv;
        }
      }
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

// x viewed as [M rows, D] with D the product of the last `normalized_ndim` dims.
struct RowLayout {
  int64_t m, d;
};

RowLayout row_layout(const OpArgs& args, const Tensor& x) {
  const int64_t k = args.attr_int("normalized_ndim");
  KILN_SDK_CHECK_ARG(k >= 1 && k <= x.ndim, "normalized_ndim ", k, " does not fit x ",
                     shape_string(x));
  expect_contiguous(x, "x");
  int64_t d = 1;
  for (int32_t i = x.ndim - static_cast<int32_t>(k); i < x.ndim; ++i) d *= x.shape[i];
  return {d == 0 ? 0 : x.numel() / d, d};
}

void expect_numel(const Tensor& t, int64_t n, kiln_dtype dtype, const char* name) {
  KILN_SDK_CHECK_ARG(t.numel() == n, name, " has ", t.numel(), " elements, expected ", n);
  expect_contiguous(t, name);
  expect_dtype(t, dtype, name);
}

template <class Fn>
void for_each_row(const RowLayout& l, const Fn& fn) {
  pool().parallel_for(0, l.m, std::max<int64_t>(1, kParallelGrain / std::max<int64_t>(1, l.d)),
                      [&](int64_t begin, int64_t end) {
                        for (int64_t r = begin; r < end; ++r) fn(r);
                      });
}

void layer_norm_impl(const OpArgs& args) {
  args.expect_counts(3, 3);
  const double eps = args.attr_float("eps");
  const Tensor x = args.input(0), weight = args.input(1), bias = args.input(2);
  const Tensor y = args.output(0), mean = args.output(1), invstd = args.output(2);
  const RowLayout l = row_layout(args, x);
  expect_numel(y, l.m * l.d, x.dtype, "y");
  expect_numel(weight, l.d, x.dtype, "weight");
  expect_numel(bias, l.d, x.dtype, "bias");
  expect_numel(mean, l.m, x.dtype, "mean");
  expect_numel(invstd, l.m, x.dtype, "invstd");
  dispatch_norm(x.dtype, [&](auto tag) {
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
  args.expect_counts(5, 3);
  const Tensor grad_y = args.input(0), x = args.input(1), weight = args.input(2);
  const Tensor mean = args.input(3), invstd = args.input(4);
  const Tensor grad_x = args.output(0), grad_weight = args.output(1), grad_bias = args.output(2);
  const RowLayout l = row_layout(args, x);
  expect_numel(grad_y, l.m * l.d, x.dtype, "grad_y");
  expect_numel(grad_x, l.m * l.d, x.dtype, "grad_x");
  expect_numel(weight, l.d, x.dtype, "weight");
  expect_numel(mean, l.m, x.dtype, "mean");
  expect_numel(invstd, l.m, x.dtype, "invstd");
  expect_numel(grad_weight, l.d, x.dtype, "grad_weight");
  expect_numel(grad_bias, l.d, x.dtype, "grad_bias");
  dispatch_norm(x.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* w = weight.ptr<const T>();
    // grad_x, one row per task.
    for_each_row(l, [&](int64_t r) {
      const T* g = grad_y.ptr<const T>() + r * l.d;
      const T* p = x.ptr<const T>() + r * l.d;
      T* dx = grad_x.ptr<T>() + r * l.d;
      const double mu = static_cast<double>(mean.ptr<const T>()[r]);
      const double inv = static_cast<double>(invstd.ptr<const T>()[r]);
      double sum_dxhat = 0, sum_dxhat_xhat = 0;
      for (int64_t i = 0; i < l.d; ++i) {
        const double dxhat = static_cast<double>(g[i]) * static_cast<double>(w[i]);
        sum_dxhat += dxhat;
        sum_dxhat_xhat += dxhat * (static_cast<double>(p[i]) - mu) * inv;
      }
      const double a = sum_dxhat / static_cast<double>(l.d);
      const double b = sum_dxhat_xhat / static_cast<double>(l.d);
      for (int64_t i = 0; i < l.d; ++i) {
        const double xhat = (static_cast<double>(p[i]) - mu) * inv;
        const double dxhat = static_cast<double>(g[i]) * static_cast<double>(w[i]);
        dx[i] = static_cast<T>(inv * (dxhat - a - xhat * b));
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

int32_t supports_norm(void*, const kiln_op_args* args) {
  const kiln_dtype d = input_dtype(args, 0);
  return d == KILN_DTYPE_FLOAT32 || d == KILN_DTYPE_FLOAT64;
}

}  // namespace

void add_norm_kernels(KernelList& list) {
  list.push_back({"kiln.batch_norm", &run_kernel<batch_norm_impl>, &supports_norm, 0});
  list.push_back(
      {"kiln.batch_norm_backward", &run_kernel<batch_norm_backward_impl>, &supports_norm, 0});
  list.push_back({"kiln.layer_norm", &run_kernel<layer_norm_impl>, &supports_norm, 0});
  list.push_back(
      {"kiln.layer_norm_backward", &run_kernel<layer_norm_backward_impl>, &supports_norm, 0});
}

}  // namespace kiln::cpu
