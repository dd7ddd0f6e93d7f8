// kiln.softmax, kiln.log_softmax and their backward kernels, along one dim of a
// contiguous tensor.
//
// Each line along `dim` (lines.h) is done by one thread: max, then the sum of
// exp(x - max) in float64, then the outputs. Half types compute in float32.
#include <algorithm>
#include <cmath>
#include <limits>

#include "lines.h"
#include "registry.h"

namespace kiln::cpu {

namespace {

// The softmax ops' lines along their `dim` (all four ops: the same attribute list).
Lines softmax_lines(const OpArgs& args, const TensorView& x) {
  return lines_of(x, sdk::attrs::softmax::read(args).dim);
}

using SoftmaxTypes = TypeList<float, double, float16, bfloat16>;

template <bool kLog>
void softmax_impl(const OpArgs& args) {
  args.expect_counts(1, 1);
  const TensorView x = args.input(0), y = args.output(0);
  const Lines l = softmax_lines(args, x);
  expect_same_shape(y, x, "y");
  expect_contiguous(y, "y");
  expect_dtype(y, x.dtype, "y");
  if (!visit_dtype<SoftmaxTypes>(x.dtype, [&](auto tag) {
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
          // PyTorch's arithmetic: exp(x - max) even when max is infinite, so a line
          // holding +inf (inf - inf) or only -inf comes out NaN everywhere, as there.
          const C shift = max;
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
  const TensorView grad_y = args.input(0), y = args.input(1), grad_x = args.output(0);
  const Lines l = softmax_lines(args, y);
  for (const TensorView* t : {&grad_y, &grad_x}) {
    expect_same_shape(*t, y, "gradient");
    expect_contiguous(*t, "gradient");
    expect_dtype(*t, y.dtype, "gradient");
  }
  if (!visit_dtype<SoftmaxTypes>(y.dtype, [&](auto tag) {
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
