// kiln.arange and kiln.linspace.
#include <cmath>

#include "elementwise.h"
#include "kiln/sdk/creation.h"
#include "registry.h"

namespace kiln::cpu {

namespace {

// Generation is cheap per element but not free (a multiply-add and a conversion):
// go parallel a little sooner than memory-bound elementwise work.
constexpr int64_t kGenerateGrain = 16384;

// Writes y[i] = value_at(i) for the 1-D output `y` (any stride), in parallel.
template <class T, class ValueAt>
void generate_1d(const TensorView& y, const ValueAt& value_at) {
  const int64_t n = y.numel();
  const int64_t stride = y.ndim == 0 ? 1 : y.strides[0];
  T* out = y.ptr<T>();
  pool().parallel_for(0, n, kGenerateGrain, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) out[i * stride] = value_at(i);
  });
}

using ArangeTypes = TypeList<float, double, float16, bfloat16, int32_t, int64_t, uint8_t>;

// The values: kiln/sdk/creation.h.
template <class Types, class Gen>
void generate_impl(const TensorView& y, const Gen& gen) {
  if (!visit_dtype<Types>(y.dtype, [&](auto tag) {
        using T = typename decltype(tag)::type;
        generate_1d<T>(y, [=](int64_t i) { return convert<T>(gen(i)); });
      })) {
    unsupported_dtype(y.dtype);
  }
}

void arange_impl(const OpArgs& args) {
  const TensorView y = sdk::creation_output(args);
  generate_impl<ArangeTypes>(y, sdk::arange(args));
}

void linspace_impl(const OpArgs& args) {
  const TensorView y = sdk::creation_output(args);
  generate_impl<FloatTypes>(y, sdk::linspace(args, y.shape[0]));
}

}  // namespace

void add_creation_kernels(KernelList& list) {
  list.push_back(catalogue_kernel<op::arange>(&run_kernel<arange_impl>, 0));
  list.push_back(catalogue_kernel<op::linspace>(&run_kernel<linspace_impl>, 0));
}

}  // namespace kiln::cpu
