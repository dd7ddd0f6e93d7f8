// kiln.softmax, kiln.log_softmax and their backward kernels, along one dim of a
// contiguous tensor.
//
// The tensor is a set of "lines": [outer, D, inner] has outer·inner lines of D
// elements at stride `inner`. Each line is done by one thread: max, then the sum of
// exp(x - max) in float64, then the outputs. Half types compute in float32.
#include <algorithm>
#include <cmath>
#include <limits>

#include "elementwise.h"
#include "registry.h"

namespace kiln::cpu {

namespace {

struct Lines {
  int64_t outer, d, inner;
  int64_t count() const { return outer * inner; }
  int64_t base(int64_t line) const { return line / inner * d * inner + line % inner; }
};

Lines lines_of(const OpArgs& args, const Tensor& x) {
  const int64_t dim = sdk::attrs::softmax::read(args).dim;  // all four ops: the same list
  KILN_SDK_CHECK_ARG(dim >= 0 && dim < x.ndim, "dim ", dim, " is out of range for ",
                     shape_string(x));
  expect_contiguous(x, "x");
  Lines l{1, x.shape[dim], 1};
  for (int64_t k = 0; k < dim; ++k) l.outer *= x.shape[k];
  for (int64_t k = dim + 1; k < x.ndim; ++k) l.inner *= x.shape[k];
  return l;
}

template <class Fn>
void for_each_line(const Lines& l, const Fn& fn) {
  if (l.d == 0) return;
  pool().parallel_for(0, l.count(), std::max<int64_t>(1, kParallelGrain / (4 * l.d)),
                      [&](int64_t begin, int64_t end) {
                        for (int64_t line = begin; line < end; ++line) fn(l.base(line), l.inner);
                      });
}

using SoftmaxTypes = TypeList<float, double, float16, bfloat16>;

template <bool kLog>
void softmax_impl(const OpArgs& args) {
  args.expect_counts(1, 1);
  const Tensor x = args.input(0), y = args.output(0);
  const Lines l = lines_of(args, x);
  expect_same_shape(y, x, "y");
  expect_contiguous(y, "y");
  expect_dtype(y, x.dtype, "y");
  if (!dispatch<SoftmaxTypes>(x.dtype, [&](auto tag) {
        using T = typename decltype(tag)::type;
        using C = compute_t<T>;
        for_each_line(l, [&](int64_t base, int64_t stride) {
          const T* in = x.ptr<const T>() + base;
          T* out = y.ptr<T>() + base;
          C max = -std::numeric_limits<C>::infinity();
          for (int64_t i = 0; i < l.d; ++i) {
            const C v = load(in[i * stride]);
            max = (v > max || is_nan(v)) ? v : max;
          }
          // An all -inf line has max -inf; shifting by 0 instead keeps exp(-inf) = 0
          // rather than exp(nan).
          const C shift = std::isinf(max) ? C(0) : max;
          double sum = 0;
          for (int64_t i = 0; i < l.d; ++i)
            sum += static_cast<double>(std::exp(load(in[i * stride]) - shift));
          if constexpr (kLog) {
            const C log_sum = static_cast<C>(std::log(sum));
            for (int64_t i = 0; i < l.d; ++i)
              out[i * stride] = store<T>(load(in[i * stride]) - shift - log_sum);
          } else {
            const C inv = static_cast<C>(1.0 / sum);
            for (int64_t i = 0; i < l.d; ++i)
              out[i * stride] = store<T>(std::exp(load(in[i * stride]) - shift) * inv);
          }
        });
      })) {
    unsupported_dtype(x.dtype);
  }
}

// softmax:     grad_x = y · (grad_y − Σ grad_y·y)
// log_softmax: grad_x = grad_y − exp(y) · Σ grad_y
template <bool kLog>
void softmax_backward_impl(const OpArgs& args) {
  args.expect_counts(2, 1);
  const Tensor grad_y = args.input(0), y = args.input(1), grad_x = args.output(0);
  const Lines l = lines_of(args, y);
  for (const Tensor* t : {&grad_y, &grad_x}) {
    expect_same_shape(*t, y, "gradient");
    expect_contiguous(*t, "gradient");
    expect_dtype(*t, y.dtype, "gradient");
  }
  if (!dispatch<SoftmaxTypes>(y.dtype, [&](auto tag) {
        using T = typename decltype(tag)::type;
        using C = compute_t<T>;
        for_each_line(l, [&](int64_t base, int64_t stride) {
          const T* g = grad_y.ptr<const T>() + base;
          const T* out = y.ptr<const T>() + base;
          T* dx = grad_x.ptr<T>() + base;
          double sum = 0;
          for (int64_t i = 0; i < l.d; ++i) {
            const double gi = static_cast<double>(load(g[i * stride]));
            sum += kLog ? gi : gi * static_cast<double>(load(out[i * stride]));
          }
          const C s = static_cast<C>(sum);
          for (int64_t i = 0; i < l.d; ++i) {
            const C gi = load(g[i * stride]), yi = load(out[i * stride]);
            dx[i * stride] = store<T>(kLog ? gi - std::exp(yi) * s : yi * (gi - s));
          }
        });
      })) {
    unsupported_dtype(y.dtype);
  }
}

int32_t supports_softmax(void*, const kiln_op_args* args) {
  const kiln_dtype d = input_dtype(args, 0);
  return d == KILN_DTYPE_FLOAT32 || d == KILN_DTYPE_FLOAT64 || d == KILN_DTYPE_FLOAT16 ||
         d == KILN_DTYPE_BFLOAT16;
}

}  // namespace

void add_softmax_kernels(KernelList& list) {
  list.push_back(
      catalogue_entry<op::softmax>(&run_kernel<softmax_impl<false>>, &supports_softmax, 0));
  list.push_back(
      catalogue_entry<op::log_softmax>(&run_kernel<softmax_impl<true>>, &supports_softmax, 0));
  list.push_back(catalogue_entry<op::softmax_backward>(&run_kernel<softmax_backward_impl<false>>,
                                                       &supports_softmax, 0));
  list.push_back(catalogue_entry<op::log_softmax_backward>(&run_kernel<softmax_backward_impl<true>>,
                                                           &supports_softmax, 0));
}

}  // namespace kiln::cpu
