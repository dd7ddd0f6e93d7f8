// kiln.softmax, kiln.log_softmax and their backward kernels, along one dim of a
// contiguous tensor.
//
// The tensor is a set of "lines": [outer, D, inner] has outer·inner lines of D
// elements at stride `inner`. The arithmetic is the CPU plugin's: the maximum in the
// compute type (float32 for float32 and half types), the sum of exp(x − max) in
// float64, the outputs in the compute type. Sums are fixed trees (deterministic).
//
// Lines along the last dim (inner == 1) are contiguous: a warp per line up to 1024
// elements, a block per line beyond, with coalesced reads. Lines across an inner dim
// are done by one thread each, walking D at stride `inner`: neighbouring threads read
// neighbouring elements, so those accesses coalesce too.
#include <cmath>

#include "dnn_util.cuh"
#include "kernels/registry.h"
#include "kiln/sdk/lines.h"
#include "staged.h"

namespace kiln::cuda {

namespace {

using namespace dnn;

using sdk::Lines;

Lines lines_of(const OpArgs& args, const TensorView& x) {
  return sdk::lines_of(x, sdk::attrs::softmax::read(args).dim);  // all four ops: one list
}

__device__ __forceinline__ float exp_c(float v) { return expf(v); }
__device__ __forceinline__ double exp_c(double v) { return exp(v); }

// Sums and maxima over the threads that share a line: a warp (kWarp) or the block.
// The result reaches every thread of the group.
template <bool kWarp, class V>
__device__ __forceinline__ V group_sum(V v, V* scratch) {
  if constexpr (kWarp) {
    return __shfl_sync(0xffffffffu, warp_sum(v), 0);
  } else {
    return block_sum(v, scratch);
  }
}

template <bool kWarp, class V>
__device__ __forceinline__ V group_max_nan(V v, V* scratch) {
  if constexpr (kWarp) {
    return __shfl_sync(0xffffffffu, warp_max_nan(v), 0);
  } else {
    return block_max_nan(v, scratch);
  }
}

constexpr int kWarpLineLimit = 1024;  // longest line a warp handles alone
constexpr int kLineBlockThreads = 512;

// The shift of a line whose maximum is `max`. The verified kernel shifts a line whose
// maximum is ±inf by 0 (exp(-inf) = 0 stays 0); the staged rule (staged.h,
// softmax.shift_by_max) uses PyTorch's arithmetic, exp(x - max) even then, so a line
// holding +inf (inf - inf) or only -inf comes out NaN everywhere, as there.
template <class C>
__device__ C line_shift(C max, bool pytorch_shift) {
  return pytorch_shift || !isinf(max) ? max : C(0);
}

template <class T, bool kLog, bool kWarp>
__global__ void softmax_rows_kernel(const T* __restrict__ x, T* __restrict__ y, int64_t lines,
                                    int64_t d, bool pytorch_shift) {
  using C = compute_t<T>;
  __shared__ C max_scratch[32];
  __shared__ double sum_scratch[32];
  const int lane = kWarp ? threadIdx.x & 31 : threadIdx.x;
  const int width = kWarp ? 32 : blockDim.x;
  const int64_t per_block = kWarp ? blockDim.x / 32 : 1;
  const int64_t first = blockIdx.x * per_block + (kWarp ? threadIdx.x / 32 : 0);
  for (int64_t line = first; line < lines; line += gridDim.x * per_block) {
    const T* in = x + line * d;
    T* out = y + line * d;
    C max = -static_cast<C>(INFINITY);
    for (int64_t i = lane; i < d; i += width) max = max_nan(max, load(in[i]));
    max = group_max_nan<kWarp>(max, max_scratch);
    const C shift = line_shift(max, pytorch_shift);
    double sum = 0;
    for (int64_t i = lane; i < d; i += width)
      sum += static_cast<double>(exp_c(load(in[i]) - shift));
    sum = group_sum<kWarp>(sum, sum_scratch);
    if constexpr (kLog) {
      const C log_sum = static_cast<C>(log(sum));
      for (int64_t i = lane; i < d; i += width) out[i] = store<T>(load(in[i]) - shift - log_sum);
    } else {
      const C inv = static_cast<C>(1.0 / sum);
      for (int64_t i = lane; i < d; i += width) out[i] = store<T>(exp_c(load(in[i]) - shift) * inv);
    }
  }
}

template <class T, bool kLog>
__global__ void softmax_strided_kernel(const T* __restrict__ x, T* __restrict__ y, Lines l,
                                       bool pytorch_shift) {
  using C = compute_t<T>;
  const int64_t count = l.count();
  for (int64_t line = first_index(); line < count; line += grid_stride()) {
    const int64_t base = line / l.inner * l.d * l.inner + line % l.inner;
    const T* in = x + base;
    T* out = y + base;
    C max = -static_cast<C>(INFINITY);
    for (int64_t i = 0; i < l.d; ++i) {
      const C v = load(in[i * l.inner]);
      max = (v > max || v != v) ? v : max;
    }
    const C shift = line_shift(max, pytorch_shift);
    double sum = 0;
    for (int64_t i = 0; i < l.d; ++i)
      sum += static_cast<double>(exp_c(load(in[i * l.inner]) - shift));
    if constexpr (kLog) {
      const C log_sum = static_cast<C>(log(sum));
      for (int64_t i = 0; i < l.d; ++i)
        out[i * l.inner] = store<T>(load(in[i * l.inner]) - shift - log_sum);
    } else {
      const C inv = static_cast<C>(1.0 / sum);
      for (int64_t i = 0; i < l.d; ++i)
        out[i * l.inner] = store<T>(exp_c(load(in[i * l.inner]) - shift) * inv);
    }
  }
}

// softmax:     grad_x = y · (grad_y − Σ grad_y·y)
// log_softmax: grad_x = grad_y − exp(y) · Σ grad_y
template <class T, bool kLog, bool kWarp>
__global__ void softmax_backward_rows_kernel(const T* __restrict__ grad_y, const T* __restrict__ y,
                                             T* __restrict__ grad_x, int64_t lines, int64_t d) {
  using C = compute_t<T>;
  __shared__ double sum_scratch[32];
  const int lane = kWarp ? threadIdx.x & 31 : threadIdx.x;
  const int width = kWarp ? 32 : blockDim.x;
  const int64_t per_block = kWarp ? blockDim.x / 32 : 1;
  const int64_t first = blockIdx.x * per_block + (kWarp ? threadIdx.x / 32 : 0);
  for (int64_t line = first; line < lines; line += gridDim.x * per_block) {
    const T* g = grad_y + line * d;
    const T* out = y + line * d;
    T* dx = grad_x + line * d;
    double sum = 0;
    for (int64_t i = lane; i < d; i += width) {
      const double gi = static_cast<double>(load(g[i]));
      sum += kLog ? gi : gi * static_cast<double>(load(out[i]));
    }
    const C s = static_cast<C>(group_sum<kWarp>(sum, sum_scratch));
    for (int64_t i = lane; i < d; i += width) {
      const C gi = load(g[i]), yi = load(out[i]);
      dx[i] = store<T>(kLog ? gi - exp_c(yi) * s : yi * (gi - s));
    }
  }
}

template <class T, bool kLog>
__global__ void softmax_backward_strided_kernel(const T* __restrict__ grad_y,
                                                const T* __restrict__ y, T* __restrict__ grad_x,
                                                Lines l) {
  using C = compute_t<T>;
  const int64_t count = l.count();
  for (int64_t line = first_index(); line < count; line += grid_stride()) {
    const int64_t base = line / l.inner * l.d * l.inner + line % l.inner;
    double sum = 0;
    for (int64_t i = 0; i < l.d; ++i) {
      const double gi = static_cast<double>(load(grad_y[base + i * l.inner]));
      sum += kLog ? gi : gi * static_cast<double>(load(y[base + i * l.inner]));
    }
    const C s = static_cast<C>(sum);
    for (int64_t i = 0; i < l.d; ++i) {
      const int64_t at = base + i * l.inner;
      const C gi = load(grad_y[at]), yi = load(y[at]);
      grad_x[at] = store<T>(kLog ? gi - exp_c(yi) * s : yi * (gi - s));
    }
  }
}

// Blocks for the row kernels: every line covered (grid-stride beyond a cap).
unsigned row_blocks(int64_t lines, int64_t lines_per_block, const Launch& l) {
  const int64_t wanted = (lines + lines_per_block - 1) / lines_per_block;
  const int64_t cap = static_cast<int64_t>(std::max(1, l.multiprocessor_count())) * 32;
  return static_cast<unsigned>(std::max<int64_t>(1, std::min(wanted, cap)));
}

template <bool kLog>
void softmax_impl(const OpArgs& args, const Launch& l) {
  args.expect_counts(1, 1);
  const TensorView x = args.input(0), y = args.output(0);
  const Lines lines = lines_of(args, x);
  sdk::expect_same_shape(y, x, "y");
  sdk::expect_contiguous(y, "y");
  sdk::expect_dtype(y, x.dtype, "y");
  if (lines.d == 0 || lines.count() == 0) return;
  const bool pytorch_shift = staged_on(kStagedSoftmaxShift);  // a lookup in a short list
  if (!visit_float(x.dtype, [&](auto tag) {
        using T = typename decltype(tag)::type;
        const T* in = x.ptr<const T>();
        T* out = y.ptr<T>();
        if (lines.inner != 1) {
          softmax_strided_kernel<T, kLog><<<grid_for(lines.count(), l), kThreads, 0, l.stream()>>>(
              in, out, lines, pytorch_shift);
        } else if (lines.d <= kWarpLineLimit) {
          softmax_rows_kernel<T, kLog, true>
              <<<row_blocks(lines.count(), kThreads / 32, l), kThreads, 0, l.stream()>>>(
                  in, out, lines.count(), lines.d, pytorch_shift);
        } else {
          softmax_rows_kernel<T, kLog, false>
              <<<row_blocks(lines.count(), 1, l), kLineBlockThreads, 0, l.stream()>>>(
                  in, out, lines.count(), lines.d, pytorch_shift);
        }
      })) {
    sdk::unsupported_dtype(x.dtype);
  }
  check_launch(kLog ? "log_softmax" : "softmax");
}

template <bool kLog>
void softmax_backward_impl(const OpArgs& args, const Launch& l) {
  args.expect_counts(2, 1);
  const TensorView grad_y = args.input(0), y = args.input(1), grad_x = args.output(0);
  const Lines lines = lines_of(args, y);
  for (const TensorView* t : {&grad_y, &grad_x}) {
    sdk::expect_same_shape(*t, y, "gradient");
    sdk::expect_contiguous(*t, "gradient");
    sdk::expect_dtype(*t, y.dtype, "gradient");
  }
  if (lines.d == 0 || lines.count() == 0) return;
  if (!visit_float(y.dtype, [&](auto tag) {
        using T = typename decltype(tag)::type;
        const T* g = grad_y.ptr<const T>();
        const T* out = y.ptr<const T>();
        T* dx = grad_x.ptr<T>();
        if (lines.inner != 1) {
          softmax_backward_strided_kernel<T, kLog>
              <<<grid_for(lines.count(), l), kThreads, 0, l.stream()>>>(g, out, dx, lines);
        } else if (lines.d <= kWarpLineLimit) {
          softmax_backward_rows_kernel<T, kLog, true>
              <<<row_blocks(lines.count(), kThreads / 32, l), kThreads, 0, l.stream()>>>(
                  g, out, dx, lines.count(), lines.d);
        } else {
          softmax_backward_rows_kernel<T, kLog, false>
              <<<row_blocks(lines.count(), 1, l), kLineBlockThreads, 0, l.stream()>>>(
                  g, out, dx, lines.count(), lines.d);
        }
      })) {
    sdk::unsupported_dtype(y.dtype);
  }
  check_launch(kLog ? "log_softmax_backward" : "softmax_backward");
}

}  // namespace

void add_softmax_kernels(KernelList& list) {
  list.push_back(catalogue_entry<op::softmax>(&softmax_impl<false>, &supports_float_input0, 0));
  list.push_back(catalogue_entry<op::log_softmax>(&softmax_impl<true>, &supports_float_input0, 0));
  list.push_back(catalogue_entry<op::softmax_backward>(&softmax_backward_impl<false>,
                                                       &supports_float_input0, 0));
  list.push_back(catalogue_entry<op::log_softmax_backward>(&softmax_backward_impl<true>,
                                                           &supports_float_input0, 0));
}

}  // namespace kiln::cuda
