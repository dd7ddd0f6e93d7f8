// Philox-based ops: kiln.random_uniform, kiln.random_normal and kiln.dropout.
//
// Element i takes its words from Philox block offset + i / (elements per block), and
// the words become values through the SDK's own functions (kiln/sdk/philox.h), which
// keep every multiply and add unfused under nvcc. So uniform numbers and dropout
// masks are bit-identical to the CPU plugin's; normal numbers go through the device's
// float64 log/cos, which may differ from the host's libm in the last bit of a double
// (OPS.md allows it) and so, very rarely, in the last bit of a float32.
#include "kernels/elementwise.cuh"
#include "kernels/registry.h"
#include "kiln/sdk/philox.h"
#include "kiln/sdk/random.h"

namespace kiln::cuda {

namespace {

// One thread per Philox block: four float32-mapped elements.
template <class T>
__global__ void __launch_bounds__(kThreads)
    uniform32_kernel(T* y, int64_t n, uint64_t seed, uint64_t offset, float low, float high) {
  const int64_t blocks = (n + 3) / 4;
  for (int64_t q = global_thread(); q < blocks; q += grid_threads()) {
    const sdk::PhiloxBlock w = sdk::philox_block(seed, offset + static_cast<uint64_t>(q));
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const int64_t i = q * 4 + j;
      if (i < n) y[i] = convert<T>(sdk::uniform_f32_from_word(w.w[j], low, high));
    }
  }
}

// One thread per Philox block: two float64 elements.
__global__ void __launch_bounds__(kThreads)
    uniform64_kernel(double* y, int64_t n, uint64_t seed, uint64_t offset, double low,
                     double high) {
  const int64_t blocks = (n + 1) / 2;
  for (int64_t q = global_thread(); q < blocks; q += grid_threads()) {
    const sdk::PhiloxBlock w = sdk::philox_block(seed, offset + static_cast<uint64_t>(q));
#pragma unroll
    for (int j = 0; j < 2; ++j) {
      const int64_t i = q * 2 + j;
      if (i < n) y[i] = sdk::uniform_f64_from_words(w.w[2 * j], w.w[2 * j + 1], low, high);
    }
  }
}

// Two elements per Philox block, computed in float64 and rounded once.
template <class T>
__global__ void __launch_bounds__(kThreads)
    normal_kernel(T* y, int64_t n, uint64_t seed, uint64_t offset, double mean, double std_dev) {
  const int64_t blocks = (n + 1) / 2;
  for (int64_t q = global_thread(); q < blocks; q += grid_threads()) {
    const sdk::PhiloxBlock w = sdk::philox_block(seed, offset + static_cast<uint64_t>(q));
#pragma unroll
    for (int j = 0; j < 2; ++j) {
      const int64_t i = q * 2 + j;
      if (i < n) {
        y[i] = convert<T>(sdk::normal_from_words(w.w[2 * j], w.w[2 * j + 1], mean, std_dev));
      }
    }
  }
}

// Element i is kept iff its float32 uniform (low 0, high 1) is >= p; a kept element
// is x / (1 - p) computed in float64 and rounded once, as on the CPU plugin.
template <class T>
__global__ void __launch_bounds__(kThreads)
    dropout_kernel(const T* x, T* y, uint8_t* mask, int64_t n, uint64_t seed, uint64_t offset,
                   double p, double keep_scale) {
  const int64_t blocks = (n + 3) / 4;
  for (int64_t q = global_thread(); q < blocks; q += grid_threads()) {
    const sdk::PhiloxBlock w = sdk::philox_block(seed, offset + static_cast<uint64_t>(q));
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const int64_t i = q * 4 + j;
      if (i < n) {
        const bool kept = static_cast<double>(sdk::unit_float_from_word(w.w[j])) >= p;
        mask[i] = kept ? 1 : 0;
        y[i] = kept ? convert<T>(static_cast<double>(load(x[i])) / keep_scale) : convert<T>(0.0);
      }
    }
  }
}

void random_uniform_impl(const OpArgs& args, const Launch& launch) {
  const sdk::RandomFill r = sdk::random_fill(args, sdk::attrs::random_uniform::read(args));
  const TensorView& y = r.y;
  const int64_t n = y.numel();
  const cudaStream_t stream = launch.stream();
  if (y.dtype == KILN_DTYPE_FLOAT64) {
    if (n > 0) {
      uniform64_kernel<<<grid_for((n + 1) / 2, launch), kThreads, 0, stream>>>(
          y.ptr<double>(), n, r.seed, r.offset, r.a, r.b);
    }
    return;
  }
  // low and high are rounded to float32 first: the float32 mapping works in float32.
  const float low = static_cast<float>(r.a);
  const float high = static_cast<float>(r.b);
  if (!visit_dtype<TypeList<float, float16, bfloat16>>(y.dtype, [&](auto tag) {
        using T = typename decltype(tag)::type;
        if (n == 0) return;
        uniform32_kernel<T><<<grid_for((n + 3) / 4, launch), kThreads, 0, stream>>>(
            y.ptr<T>(), n, r.seed, r.offset, low, high);
      })) {
    unsupported_dtype(y.dtype);
  }
}

void random_normal_impl(const OpArgs& args, const Launch& launch) {
  const sdk::RandomFill r = sdk::random_fill(args, sdk::attrs::random_normal::read(args));
  const TensorView& y = r.y;
  const int64_t n = y.numel();
  if (!visit_dtype<FloatTypes>(y.dtype, [&](auto tag) {
        using T = typename decltype(tag)::type;
        if (n == 0) return;
        normal_kernel<T><<<grid_for((n + 1) / 2, launch), kThreads, 0, launch.stream()>>>(
            y.ptr<T>(), n, r.seed, r.offset, r.a, r.b);
      })) {
    unsupported_dtype(y.dtype);
  }
}

void dropout_impl(const OpArgs& args, const Launch& launch) {
  const sdk::Dropout d = sdk::dropout_operands(args);
  const TensorView &x = d.x, &y = d.y, &mask = d.mask;
  const double p = d.p;
  const uint64_t seed = d.seed, offset = d.offset;
  const int64_t n = x.numel();
  if (!visit_dtype<FloatTypes>(x.dtype, [&](auto tag) {
        using T = typename decltype(tag)::type;
        if (n == 0) return;
        dropout_kernel<T><<<grid_for((n + 3) / 4, launch), kThreads, 0, launch.stream()>>>(
            x.ptr<const T>(), y.ptr<T>(), mask.ptr<uint8_t>(), n, seed, offset, p, 1.0 - p);
      })) {
    unsupported_dtype(x.dtype);
  }
}

}  // namespace

void add_random_kernels(KernelList& list) {
  list.push_back(catalogue_kernel<op::random_uniform>(&random_uniform_impl, 0));
  list.push_back(catalogue_kernel<op::random_normal>(&random_normal_impl, 0));
  list.push_back(catalogue_kernel<op::dropout>(&dropout_impl, 0));
}

}  // namespace kiln::cuda
