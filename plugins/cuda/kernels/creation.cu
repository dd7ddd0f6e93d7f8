// kiln.arange and kiln.linspace: the values are kiln/sdk/creation.h's (float64, never
// fused into an FMA), so every value has the CPU plugin's bits.
#include "kernels/elementwise.cuh"
#include "kernels/registry.h"
#include "kiln/sdk/creation.h"

namespace kiln::cuda {

namespace {

template <class T, class Gen>
__global__ void __launch_bounds__(kThreads)
    generate_kernel(T* y, int64_t n, int64_t stride, const Gen gen) {
  for (int64_t i = global_thread(); i < n; i += grid_threads()) y[i * stride] = convert<T>(gen(i));
}

template <class T, class Gen>
void generate_1d(const Launch& launch, const TensorView& y, const Gen& gen) {
  const int64_t n = y.numel();
  if (n == 0) return;
  const int64_t stride = y.ndim == 0 ? 1 : y.strides[0];
  generate_kernel<T>
      <<<grid_for(n, launch), kThreads, 0, launch.stream()>>>(y.ptr<T>(), n, stride, gen);
}

using ArangeTypes = TypeList<float, double, float16, bfloat16, int32_t, int64_t, uint8_t>;

// The values: kiln/sdk/creation.h.
void arange_impl(const OpArgs& args, const Launch& launch) {
  const TensorView y = sdk::creation_output(args);
  const sdk::Arange gen = sdk::arange(args);
  if (!visit_dtype<ArangeTypes>(
          y.dtype, [&](auto tag) { generate_1d<typename decltype(tag)::type>(launch, y, gen); })) {
    unsupported_dtype(y.dtype);
  }
}

void linspace_impl(const OpArgs& args, const Launch& launch) {
  const TensorView y = sdk::creation_output(args);
  const sdk::Linspace gen = sdk::linspace(args, y.shape[0]);
  if (!visit_dtype<FloatTypes>(
          y.dtype, [&](auto tag) { generate_1d<typename decltype(tag)::type>(launch, y, gen); })) {
    unsupported_dtype(y.dtype);
  }
}

}  // namespace

void add_creation_kernels(KernelList& list) {
  list.push_back(catalogue_kernel<op::arange>(&arange_impl, 0));
  list.push_back(catalogue_kernel<op::linspace>(&linspace_impl, 0));
}

}  // namespace kiln::cuda
