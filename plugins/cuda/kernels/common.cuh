// kernels/common.cuh — what every CUDA kernel file shares: Kiln's dtypes as C++
// types, the conversion rules of kiln.copy (on host and device alike), the dtype switch,
// launch geometry and device-side error reporting.
//
// Storage types: float, double, sdk::float16, sdk::bfloat16, int32_t, int64_t,
// uint8_t and bool (one byte, 0 or 1). Half types compute in float32: `compute_t<T>`
// is float for them and T otherwise, `load` widens and `convert` rounds once. The half
// conversions are the SDK's own (kiln/sdk/half.h), so a value rounds to the same bits
// here as on the CPU plugin.
//
// visit_dtype turns a runtime dtype into a template instantiation, restricted to the
// type lists an op supports, so only what the catalogue needs is compiled:
//
//   bool handled = visit_dtype<FloatTypes, SignedIntTypes>(x.dtype, [&](auto tag) {
//     using T = typename decltype(tag)::type;
//     run_elementwise<T, T>(launch, operands, Relu{});
//   });  // false: the dtype is not in the lists
#ifndef KILN_CUDA_KERNELS_COMMON_CUH
#define KILN_CUDA_KERNELS_COMMON_CUH

#include <cuda_runtime.h>

#include <cstdint>
#include <type_traits>

#include "kiln/c_api.h"
#include "kiln/sdk/catalogue.h"
#include "kiln/sdk/dtype_visit.h"
#include "kiln/sdk/half.h"
#include "kiln/sdk/op_args.h"
#include "kiln/sdk/status.h"
#include "launch.h"

namespace kiln::cuda {

using sdk::bfloat16;
using sdk::dtype_name;
using sdk::expect_contiguous;
using sdk::expect_dtype;
using sdk::expect_same_shape;
using sdk::float16;
using sdk::input_dtype;
using sdk::OpArgs;
using sdk::output_dtype;
using sdk::TensorView;
using sdk::unsupported_dtype;

inline constexpr uint32_t kStridedInOut = KILN_KERNEL_STRIDED_INPUTS | KILN_KERNEL_STRIDED_OUTPUTS;

// -- types ---------------------------------------------------------------------------------

// Dtype types and visit_dtype: the SDK's (kiln/sdk/dtype_visit.h).
using namespace sdk::dtypes;

// The catalogue's dtype classes (api/ops.json), shared with every plugin.
using sdk::is_float_dtype;
using sdk::is_int_dtype;

// -- values ----------------------------------------------------------------------------------

/// kiln.copy's conversion of one value: float→int truncates toward zero (out of range
/// is undefined, as OPS.md allows), anything→bool is `x != 0`, bool→number is 0/1,
/// and conversions to half types round once to nearest even (from double directly).
template <class To, class From>
KILN_HOST_DEVICE inline To convert(From v) {
  if constexpr (std::is_same_v<To, From>) {
    return v;
  } else if constexpr (std::is_same_v<To, bool>) {
    if constexpr (is_half_v<From>)
      return static_cast<float>(v) != 0.0f;
    else
      return v != From(0);
  } else if constexpr (is_half_v<From>) {
    return convert<To>(static_cast<float>(v));  // widening is exact
  } else if constexpr (is_half_v<To>) {
    if constexpr (std::is_same_v<From, float> || std::is_same_v<From, double>)
      return To(v);
    else
      return To(static_cast<double>(v));  // exact for every integer a half type can hold
  } else {
    return static_cast<To>(v);
  }
}

// -- launch geometry ------------------------------------------------------------------------------

inline constexpr int kThreads = 256;

/// Blocks for a grid-stride loop over `items`: enough to fill every SM a few times
/// over, no more (extra blocks would only pay their launch and exit).
inline unsigned grid_for(int64_t items, const Launch& launch) {
  const int64_t wanted = (items + kThreads - 1) / kThreads;
  const int64_t cap = static_cast<int64_t>(launch.multiprocessor_count()) * 16;
  return static_cast<unsigned>(wanted < 1 ? 1 : (wanted < cap ? wanted : cap));
}

/// Grid-stride loop bounds for the calling thread.
__device__ __forceinline__ int64_t global_thread() {
  return static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
}
__device__ __forceinline__ int64_t grid_threads() {
  return static_cast<int64_t>(gridDim.x) * blockDim.x;
}

// -- device-side errors ---------------------------------------------------------------------------

/// Reports a data-dependent error found by a kernel (launch.h): the first thread to
/// claim the flag writes the details; the runtime raises the error at the next
/// synchronization point, naming the op.
__device__ __forceinline__ void report_device_error(int32_t* flag, int64_t* detail, int32_t code,
                                                    int64_t a, int64_t b, int64_t c) {
  if (atomicCAS(flag, 0, code) == 0) {
    detail[0] = a;
    detail[1] = b;
    detail[2] = c;
  }
}

}  // namespace kiln::cuda

#endif  // KILN_CUDA_KERNELS_COMMON_CUH
