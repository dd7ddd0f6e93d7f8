// kiln.cumsum, kiln.cumprod and kiln.sort: ops along the lines of one dim of a contiguous
// tensor.
//
// Each line along `dim` (lines.h) is done by one thread. cumsum adds and cumprod multiplies
// in order (float32/float64 in float64, half types in float32, integers and bool exactly in
// int64 with wrapping); sort is a stable sort of the line's positions with NaN above every
// number.
#include <algorithm>
#include <numeric>
#include <vector>

#include "lines.h"
#include "registry.h"

namespace kiln::cpu {

namespace {

// -- cumsum, cumprod ------------------------------------------------------------------------

template <class T>
using scan_acc_t =
    std::conditional_t<is_floating_v<T>, std::conditional_t<is_half_v<T>, float, double>, uint64_t>;

struct Add {
  static constexpr int kIdentity = 0;
  template <class A>
  A operator()(A a, A b) const {
    return a + b;
  }
};
struct Mul {
  static constexpr int kIdentity = 1;
  template <class A>
  A operator()(A a, A b) const {
    return a * b;
  }
};

// Integers run in uint64, where overflow wraps (defined) to the bits an int64 would hold.
template <class Op, class Attrs>
void scan_impl(const OpArgs& args) {
  args.expect_counts(1, 1);
  const TensorView x = args.input(0), y = args.output(0);
  const Lines l = lines_of(x, Attrs::read(args).dim);
  expect_same_shape(y, x, "y");
  expect_contiguous(y, "y");
  if (!visit_dtype<AllTypes>(x.dtype, [&](auto tag) {
        using T = typename decltype(tag)::type;
        using Acc = scan_acc_t<T>;
        using Out = std::conditional_t<is_floating_v<T>, T, int64_t>;
        expect_dtype(y, dtype_of<Out>(), "y");
        for_each_line(l, [&](int64_t base, int64_t stride) {
          const T* in = x.ptr<const T>() + base;
          Out* out = y.ptr<Out>() + base;
          Acc acc = Op::kIdentity;
          for (int64_t i = 0; i < l.d; ++i) {
            if constexpr (std::is_same_v<Acc, uint64_t>) {
              acc = Op{}(acc, static_cast<uint64_t>(static_cast<int64_t>(in[i * stride])));
              out[i * stride] = static_cast<int64_t>(acc);
            } else {
              acc = Op{}(acc, static_cast<Acc>(load(in[i * stride])));
              out[i * stride] = store<T>(static_cast<compute_t<T>>(acc));
            }
          }
        });
      })) {
    unsupported_dtype(x.dtype);
  }
}

// Beyond the catalogue's rule: the output is int64 for integer and bool inputs.
int32_t supports_scan(void*, const kiln_op_args* args) {
  const kiln_dtype in = input_dtype(args, 0), out = output_dtype(args, 0);
  return is_float_dtype(in) ? out == in : out == KILN_DTYPE_INT64;
}

// -- sort -----------------------------------------------------------------------------------

void sort_impl(const OpArgs& args) {
  args.expect_counts(1, 2);
  const auto attrs = sdk::attrs::sort::read(args);
  const TensorView x = args.input(0), values = args.output(0), indices = args.output(1);
  const Lines l = lines_of(x, attrs.dim);
  KILN_SDK_CHECK_ARG(attrs.descending == 0 || attrs.descending == 1,
                     "descending must be 0 or 1, got ", attrs.descending);
  for (const TensorView* t : {&values, &indices}) {
    expect_same_shape(*t, x, "output");
    expect_contiguous(*t, "output");
  }
  expect_dtype(values, x.dtype, "values");
  expect_dtype(indices, KILN_DTYPE_INT64, "indices");
  const bool descending = attrs.descending != 0;
  if (!visit_dtype<AllTypes>(x.dtype, [&](auto tag) {
        using T = typename decltype(tag)::type;
        using C = compute_t<T>;
        for_each_line(l, [&](int64_t base, int64_t stride) {
          const T* in = x.ptr<const T>() + base;
          std::vector<int64_t> order(static_cast<size_t>(l.d));
          std::iota(order.begin(), order.end(), int64_t{0});
          // NaN is above every number; NaNs compare equal to each other (stable order).
          auto above = [&](int64_t a, int64_t b) {
            const C va = load(in[a * stride]), vb = load(in[b * stride]);
            if (is_nan(vb)) return false;
            return is_nan(va) || va > vb;
          };
          if (descending)
            std::stable_sort(order.begin(), order.end(), above);
          else
            std::stable_sort(order.begin(), order.end(),
                             [&](int64_t a, int64_t b) { return above(b, a); });
          T* v = values.ptr<T>() + base;
          int64_t* ix = indices.ptr<int64_t>() + base;
          for (int64_t i = 0; i < l.d; ++i) {
            v[i * stride] = in[order[static_cast<size_t>(i)] * stride];
            ix[i * stride] = order[static_cast<size_t>(i)];
          }
        });
      })) {
    unsupported_dtype(x.dtype);
  }
}

int32_t supports_sort(void*, const kiln_op_args* args) {
  return output_dtype(args, 0) == input_dtype(args, 0) && output_dtype(args, 1) == KILN_DTYPE_INT64;
}

}  // namespace

void add_scan_sort_kernels(KernelList& list) {
  list.push_back(catalogue_entry<op::cumsum>(&run_kernel<scan_impl<Add, sdk::attrs::cumsum>>,
                                             &supports_scan, 0));
  list.push_back(catalogue_entry<op::cumprod>(&run_kernel<scan_impl<Mul, sdk::attrs::cumprod>>,
                                              &supports_scan, 0));
  list.push_back(catalogue_entry<op::sort>(&run_kernel<sort_impl>, &supports_sort, 0));
}

}  // namespace kiln::cpu
