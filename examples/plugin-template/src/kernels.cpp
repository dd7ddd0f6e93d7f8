// kernels.cpp — five ops, written as plainly as possible, as a starting point.
//
// A kernel is `void f(const kiln::sdk::OpArgs&)`: it reads its operands (shape,
// strides in elements, dtype, data pointer with the byte offset applied) and throws
// kiln::sdk::Error on bad arguments; kiln::sdk::run_kernel<f> wraps it for the ABI.
// The frontend has already validated shapes and dtypes against the op catalogue
// (share/doc/kiln/OPS.md in Kiln's install) and expanded broadcast operands to the
// output's shape (stride 0), so an elementwise kernel is one strided loop. Each entry's
// `supports` function tells the frontend which argument lists to send elsewhere (here:
// anything but float32 and float64).
#include "kernels.h"

#include <cstdint>
#include <vector>

namespace reference {

using kiln::sdk::OpArgs;
using kiln::sdk::TensorView;

namespace {

// The element offset of multi-index `index` in `t` (strides are in elements and may
// be 0 or negative).
int64_t offset_of(const TensorView& t, const std::vector<int64_t>& index) {
  int64_t offset = 0;
  for (int32_t d = 0; d < t.ndim; ++d) offset += index[static_cast<size_t>(d)] * t.strides[d];
  return offset;
}

// Calls fn(index) for every multi-index of `shape` in row-major order.
template <class Fn>
void for_each_index(const TensorView& shape, Fn&& fn) {
  const int64_t n = shape.numel();
  std::vector<int64_t> index(static_cast<size_t>(shape.ndim), 0);
  for (int64_t i = 0; i < n; ++i) {
    fn(index);
    for (int32_t d = shape.ndim - 1; d >= 0; --d) {
      if (++index[static_cast<size_t>(d)] < shape.shape[d]) break;
      index[static_cast<size_t>(d)] = 0;
    }
  }
}

// Runs body<float> or body<double> for the dtype of `t`.
template <template <class> class Body, class... Args>
void for_float_dtype(const TensorView& t, Args&&... args) {
  if (t.dtype == KILN_DTYPE_FLOAT32) return Body<float>::run(args...);
  if (t.dtype == KILN_DTYPE_FLOAT64) return Body<double>::run(args...);
  kiln::sdk::unsupported_dtype(t.dtype);
}

// `supports` for every kernel here: float32 and float64 only. Other dtypes run on the
// CPU plugin. Never throws (it is called on the hot path, outside any guard).
int32_t float32_or_float64(void*, const kiln_op_args* args) {
  const kiln_dtype dtype =
      args->num_outputs > 0 ? kiln::sdk::output_dtype(args, 0) : kiln::sdk::input_dtype(args, 0);
  return dtype == KILN_DTYPE_FLOAT32 || dtype == KILN_DTYPE_FLOAT64;
}

// -- kiln.fill: y = value (strided out) -------------------------------------------------

template <class T>
struct Fill {
  static void run(const TensorView& y, double value) {
    for_each_index(y, [&](const std::vector<int64_t>& i) {
      y.ptr<T>()[offset_of(y, i)] = static_cast<T>(value);
    });
  }
};

void fill(const OpArgs& args) {
  args.expect_counts(0, 1);
  const TensorView y = args.output(0);
  for_float_dtype<Fill>(y, y, args.attr_float("value"));
}

// -- kiln.add, kiln.mul: y = a op b (strided in and out) ------------------------------------

struct Plus {
  template <class T>
  static T apply(T a, T b) {
    return a + b;
  }
};
struct Times {
  template <class T>
  static T apply(T a, T b) {
    return a * b;
  }
};

template <class Op>
struct Binary {
  template <class T>
  struct Body {
    static void run(const TensorView& a, const TensorView& b, const TensorView& y) {
      // `y` may be the same view as `a` (in-place ops): each element is read before
      // it is written, so this loop is safe for that.
      for_each_index(y, [&](const std::vector<int64_t>& i) {
        y.ptr<T>()[offset_of(y, i)] =
            Op::apply(a.ptr<T>()[offset_of(a, i)], b.ptr<T>()[offset_of(b, i)]);
      });
    }
  };
};

template <class Op>
void binary(const OpArgs& args) {
  args.expect_counts(2, 1);
  const TensorView a = args.input(0), b = args.input(1), y = args.output(0);
  kiln::sdk::expect_same_shape(a, y, "a");
  kiln::sdk::expect_same_shape(b, y, "b");
  kiln::sdk::expect_dtype(a, y.dtype, "a");
  kiln::sdk::expect_dtype(b, y.dtype, "b");
  for_float_dtype<Binary<Op>::template Body>(y, a, b, y);
}

// -- kiln.relu: y = max(x, 0), NaN stays NaN (strided in and out) ---------------------------

template <class T>
struct Relu {
  static void run(const TensorView& x, const TensorView& y) {
    for_each_index(y, [&](const std::vector<int64_t>& i) {
      const T v = x.ptr<T>()[offset_of(x, i)];
      y.ptr<T>()[offset_of(y, i)] = v < T(0) ? T(0) : v;  // NaN < 0 is false: stays NaN
    });
  }
};

void relu(const OpArgs& args) {
  args.expect_counts(1, 1);
  const TensorView x = args.input(0), y = args.output(0);
  kiln::sdk::expect_same_shape(x, y, "x");
  kiln::sdk::expect_dtype(x, y.dtype, "x");
  for_float_dtype<Relu>(y, x, y);
}

// -- kiln.sum: the same-rank reduction (strided in, contiguous out) -------------------------
// Dimension d is reduced when y.shape[d] == 1 and x.shape[d] != 1. Accumulated in
// float64, as the catalogue asks for float32 and float64.

template <class T>
struct Sum {
  static void run(const TensorView& x, const TensorView& y) {
    std::vector<double> total(static_cast<size_t>(y.numel()), 0.0);
    for_each_index(x, [&](const std::vector<int64_t>& i) {
      int64_t out = 0;  // row-major position in y: reduced dims contribute 0
      for (int32_t d = 0; d < x.ndim; ++d)
        out = out * y.shape[d] + (y.shape[d] == 1 ? 0 : i[static_cast<size_t>(d)]);
      total[static_cast<size_t>(out)] += static_cast<double>(x.ptr<T>()[offset_of(x, i)]);
    });
    for (size_t j = 0; j < total.size(); ++j) y.ptr<T>()[j] = static_cast<T>(total[j]);
  }
};

void sum(const OpArgs& args) {
  args.expect_counts(1, 1);
  const TensorView x = args.input(0), y = args.output(0);
  KILN_SDK_CHECK_ARG(x.ndim == y.ndim, "y has rank ", y.ndim, ", x has rank ", x.ndim);
  for (int32_t d = 0; d < x.ndim; ++d)
    KILN_SDK_CHECK_ARG(y.shape[d] == x.shape[d] || y.shape[d] == 1, "y's dim ", d, " is ",
                       y.shape[d], ", expected ", x.shape[d], " or 1");
  kiln::sdk::expect_contiguous(y, "y");
  kiln::sdk::expect_dtype(x, y.dtype, "x");
  for_float_dtype<Sum>(y, x, y);
}

}  // namespace

const kiln::sdk::KernelTable& kernel_table() {
  using kiln::sdk::run_kernel;
  constexpr uint32_t strided = kiln::sdk::kStridedInOut;
  static const kiln::sdk::KernelTable table({
      {"kiln.fill", &run_kernel<fill>, &float32_or_float64, KILN_KERNEL_STRIDED_OUTPUTS},
      {"kiln.add", &run_kernel<binary<Plus>>, &float32_or_float64, strided},
      {"kiln.mul", &run_kernel<binary<Times>>, &float32_or_float64, strided},
      {"kiln.relu", &run_kernel<relu>, &float32_or_float64, strided},
      {"kiln.sum", &run_kernel<sum>, &float32_or_float64, KILN_KERNEL_STRIDED_INPUTS},
  });
  return table;
}

}  // namespace reference
