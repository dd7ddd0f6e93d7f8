// kiln.arange and kiln.linspace.
#include <cmath>

#include "elementwise.h"
#include "registry.h"

namespace kiln::cpu {

namespace {

// Generation is cheap per element but not free (a multiply-add and a conversion):
// go parallel a little sooner than memory-bound elementwise work.
constexpr int64_t kGenerateGrain = 16384;

// Writes y[i] = value_at(i) for the 1-D output `y` (any stride), in parallel.
template <class T, class ValueAt>
void generate_1d(const Tensor& y, const ValueAt& value_at) {
  const int64_t n = y.numel();
  const int64_t stride = y.ndim == 0 ? 1 : y.strides[0];
  T* out = y.ptr<T>();
  pool().parallel_for(0, n, kGenerateGrain, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) out[i * stride] = value_at(i);
  });
}

void expect_1d(const Tensor& y) {
  KILN_SDK_CHECK_ARG(y.ndim == 1, "y must be 1-D, got ", y.ndim, "-D");
}

using ArangeTypes = TypeList<float, double, float16, bfloat16, int32_t, int64_t, uint8_t>;

void arange_impl(const OpArgs& args) {
  args.expect_counts(0, 1);
  const double start = args.attr_float("start");
  const double step = args.attr_float("step");
  const Tensor y = args.output(0);
  expect_1d(y);
  if (!dispatch<ArangeTypes>(y.dtype, [&](auto tag) {
        using T = typename decltype(tag)::type;
        generate_1d<T>(
            y, [=](int64_t i) { return convert<T>(start + static_cast<double>(i) * step); });
      })) {
    unsupported_dtype(y.dtype);
  }
}

void linspace_impl(const OpArgs& args) {
  args.expect_counts(0, 1);
  const double start = args.attr_float("start");
  const double end = args.attr_float("end");
  const Tensor y = args.output(0);
  expect_1d(y);
  const int64_t n = y.shape[0];
  // Two halves, each counted from its own endpoint, so both endpoints are exact.
  const double step = n >= 2 ? (end - start) / static_cast<double>(n - 1) : 0.0;
  const int64_t half = n / 2;
  if (!dispatch<FloatTypes>(y.dtype, [&](auto tag) {
        using T = typename decltype(tag)::type;
        generate_1d<T>(y, [=](int64_t i) {
          if (n == 1) return convert<T>(start);
          const double v = i < half ? start + static_cast<double>(i) * step
                                    : end - static_cast<double>(n - 1 - i) * step;
          return convert<T>(v);
        });
      })) {
    unsupported_dtype(y.dtype);
  }
}

int32_t supports_float_output(void*, const kiln_op_args* args) {
  const kiln_dtype d = output_dtype(args, 0);
  return d == KILN_DTYPE_FLOAT32 || d == KILN_DTYPE_FLOAT64 || d == KILN_DTYPE_FLOAT16 ||
         d == KILN_DTYPE_BFLOAT16;
}

int32_t supports_non_bool_output(void*, const kiln_op_args* args) {
  const kiln_dtype d = output_dtype(args, 0);
  return d != KILN_DTYPE_BOOL && kiln_dtype_size(d) != 0;
}

}  // namespace

void add_creation_kernels(KernelList& list) {
  list.push_back({"kiln.arange", &run_kernel<arange_impl>, &supports_non_bool_output, 0});
  list.push_back({"kiln.linspace", &run_kernel<linspace_impl>, &supports_float_output, 0});
}

}  // namespace kiln::cpu
