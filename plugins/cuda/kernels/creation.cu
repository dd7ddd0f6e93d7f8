// kiln.arange and kiln.linspace, computed in float64 as OPS.md specifies. The
// multiply and add are kept apart (__dmul_rn/__dadd_rn: nvcc would otherwise fuse
// them into one FMA), so every value has the CPU plugin's bits.
#include "kernels/elementwise.cuh"
#include "kernels/registry.h"

namespace kiln::cuda {

namespace {

struct Arange {
  double start, step;
  __device__ double operator()(int64_t i) const {
    return __dadd_rn(start, __dmul_rn(static_cast<double>(i), step));
  }
};

// Two halves, each counted from its own endpoint, so both endpoints are exact.
struct Linspace {
  double start, end, step;
  int64_t n;
  __device__ double operator()(int64_t i) const {
    if (n == 1) return start;
    if (i < n / 2) return __dadd_rn(start, __dmul_rn(static_cast<double>(i), step));
    return __dsub_rn(end, __dmul_rn(static_cast<double>(n - 1 - i), step));
  }
};

template <class T, class Gen>
__global__ void __launch_bounds__(kThreads)
    generate_kernel(T* y, int64_t n, int64_t stride, const Gen gen) {
  for (int64_t i = global_thread(); i < n; i += grid_threads()) y[i * stride] = convert<T>(gen(i));
}

template <class T, class Gen>
void generate_1d(const Launch& launch, const Tensor& y, const Gen& gen) {
  const int64_t n = y.numel();
  if (n == 0) return;
  const int64_t stride = y.ndim == 0 ? 1 : y.strides[0];
  generate_kernel<T>
      <<<grid_for(n, launch), kThreads, 0, launch.stream()>>>(y.ptr<T>(), n, stride, gen);
}

void expect_1d(const Tensor& y) {
  KILN_SDK_CHECK_ARG(y.ndim == 1, "y must be 1-D, got ", y.ndim, "-D");
}

using ArangeTypes = TypeList<float, double, float16, bfloat16, int32_t, int64_t, uint8_t>;

void arange_impl(const OpArgs& args, const Launch& launch) {
  args.expect_counts(0, 1);
  const Arange gen{args.attr_float("start"), args.attr_float("step")};
  const Tensor y = args.output(0);
  expect_1d(y);
  if (!dispatch<ArangeTypes>(
          y.dtype, [&](auto tag) { generate_1d<typename decltype(tag)::type>(launch, y, gen); })) {
    unsupported_dtype(y.dtype);
  }
}

void linspace_impl(const OpArgs& args, const Launch& launch) {
  args.expect_counts(0, 1);
  const double start = args.attr_float("start");
  const double end = args.attr_float("end");
  const Tensor y = args.output(0);
  expect_1d(y);
  const int64_t n = y.shape[0];
  const Linspace gen{start, end, n >= 2 ? (end - start) / static_cast<double>(n - 1) : 0.0, n};
  if (!dispatch<FloatTypes>(
          y.dtype, [&](auto tag) { generate_1d<typename decltype(tag)::type>(launch, y, gen); })) {
    unsupported_dtype(y.dtype);
  }
}

int32_t supports_float_output(void*, const kiln_op_args* args) {
  return is_float_dtype(output_dtype(args, 0));
}

int32_t supports_non_bool_output(void*, const kiln_op_args* args) {
  const kiln_dtype d = output_dtype(args, 0);
  return d != KILN_DTYPE_BOOL && kiln_dtype_size(d) != 0;
}

}  // namespace

void add_creation_kernels(KernelList& list) {
  list.push_back({"kiln.arange", &arange_impl, &supports_non_bool_output, 0});
  list.push_back({"kiln.linspace", &linspace_impl, &supports_float_output, 0});
}

}  // namespace kiln::cuda
