// kernels/dnn_util.cuh — helpers shared by the library and training kernels of the
// CUDA plugin (matmul, conv, pool, norm, softmax, loss, scatter, optim).
//
// What lives here: the dtype switches and the float/half conversions those kernels
// use (half types compute in float32 and round once, with the SDK's bit-exact
// conversions, as the CPU plugin does), launch geometry for grid-stride loops,
// deterministic warp and block reductions (a fixed tree: the same inputs give the
// same bits on every run), a strided indexer for the kernels that accept any
// strides, and the codes these kernels write to Launch::error_flag().
#ifndef KILN_CUDA_KERNELS_DNN_UTIL_CUH
#define KILN_CUDA_KERNELS_DNN_UTIL_CUH

#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <type_traits>

#include "kiln/c_api.h"
#include "kiln/sdk/catalogue.h"
#include "kiln/sdk/half.h"
#include "kiln/sdk/kernel_table.h"  // sdk::SupportsFn, which launch.h names
#include "kiln/sdk/op_args.h"
#include "kiln/sdk/status.h"
#include "launch.h"

namespace kiln::cuda::dnn {

using sdk::bfloat16;
using sdk::float16;
using sdk::OpArgs;
using sdk::TensorView;

// ---- dtypes ---------------------------------------------------------------------------

/// The type a kernel computes in: float64 for float64, float32 for everything else.
template <class T>
struct ComputeType {
  using type = float;
};
template <>
struct ComputeType<double> {
  using type = double;
};
template <class T>
using compute_t = typename ComputeType<T>::type;

template <class T>
inline constexpr bool is_half_v = std::is_same_v<T, float16> || std::is_same_v<T, bfloat16>;

/// Widens a stored value to its compute type (exact).
template <class T>
__host__ __device__ __forceinline__ compute_t<T> load(T v) {
  return static_cast<compute_t<T>>(v);
}

/// Rounds a computed value (float or double) once to the stored type.
template <class T, class C>
__host__ __device__ __forceinline__ T store(C v) {
  return static_cast<T>(v);
}

template <class T>
struct Tag {
  using type = T;
};

/// Calls fn(Tag<T>{}) for float32, float64, float16, bfloat16; false for other dtypes.
template <class Fn>
bool visit_float(kiln_dtype dtype, Fn&& fn) {
  switch (dtype) {
    case KILN_DTYPE_FLOAT32:
      fn(Tag<float>{});
      return true;
    case KILN_DTYPE_FLOAT64:
      fn(Tag<double>{});
      return true;
    case KILN_DTYPE_FLOAT16:
      fn(Tag<float16>{});
      return true;
    case KILN_DTYPE_BFLOAT16:
      fn(Tag<bfloat16>{});
      return true;
    default:
      return false;
  }
}

/// Calls fn(Tag<T>{}) for float32 and float64 only.
template <class Fn>
bool visit_f32_f64(kiln_dtype dtype, Fn&& fn) {
  switch (dtype) {
    case KILN_DTYPE_FLOAT32:
      fn(Tag<float>{});
      return true;
    case KILN_DTYPE_FLOAT64:
      fn(Tag<double>{});
      return true;
    default:
      return false;
  }
}

using sdk::is_float_dtype;  // the catalogue's float class (kiln/sdk/catalogue.h)

/// Elements of view `index` without throwing (for `supports`); -1 if it is missing.
inline int64_t view_numel(const kiln_tensor_view* views, size_t count, size_t index) {
  if (views == nullptr || index >= count) return -1;
  const auto* view = reinterpret_cast<const kiln_tensor_view*>(
      reinterpret_cast<const char*>(views) + index * views[0].struct_size);
  if (view->ndim > 0 && view->shape == nullptr) return -1;
  int64_t n = 1;
  for (int32_t d = 0; d < view->ndim; ++d) n *= view->shape[d];
  return n;
}

/// Rank of view `index` without throwing (for `supports`); -1 if it is missing.
inline int32_t view_ndim(const kiln_tensor_view* views, size_t count, size_t index) {
  if (views == nullptr || index >= count) return -1;
  const auto* view = reinterpret_cast<const kiln_tensor_view*>(
      reinterpret_cast<const char*>(views) + index * views[0].struct_size);
  return view->ndim;
}

/// `supports` for ops whose first input carries the dtype: every float dtype.
inline int32_t supports_float_input0(void*, const kiln_op_args* args) {
  return is_float_dtype(sdk::input_dtype(args, 0)) ? 1 : 0;
}

// ---- launch geometry --------------------------------------------------------------------

inline constexpr int kThreads = 256;

/// Blocks for a grid-stride loop over `n` items: enough to fill the device a few
/// times over, never more than the items need, at least one.
inline unsigned grid_for(int64_t n, const Launch& l, int threads = kThreads) {
  const int64_t wanted = (n + threads - 1) / threads;
  const int64_t sms = std::max(1, l.multiprocessor_count());
  const int64_t cap = sms * std::max(1, 2048 / threads) * 4;
  return static_cast<unsigned>(std::max<int64_t>(1, std::min(wanted, cap)));
}

/// Reports a failed launch (bad configuration, no kernel image for this device).
/// cudaGetLastError does not wait for the kernel.
inline void check_launch(const char* what) { check(cudaGetLastError(), what); }

__device__ __forceinline__ int64_t first_index() {
  return static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
}
__device__ __forceinline__ int64_t grid_stride() {
  return static_cast<int64_t>(blockDim.x) * gridDim.x;
}

// ---- deterministic reductions -----------------------------------------------------------
//
// A fixed tree over a fixed assignment of elements to threads: the same shape and
// inputs always give the same bits, whatever the scheduling.

template <class T>
__device__ __forceinline__ T warp_sum(T v) {
  for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_down_sync(0xffffffffu, v, offset);
  return v;  // complete in lane 0
}

/// Sum over the block (blockDim.x a multiple of 32, at most 1024); the result is
/// returned to every thread. `scratch` is __shared__ T[32]; the call synchronizes.
template <class T>
__device__ T block_sum(T v, T* scratch) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int warps = static_cast<int>(blockDim.x + 31) >> 5;
  v = warp_sum(v);
  __syncthreads();  // scratch may still be read by a previous call
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  if (warp == 0) {
    T w = lane < warps ? scratch[lane] : T(0);
    w = warp_sum(w);
    if (lane == 0) scratch[0] = w;
  }
  __syncthreads();
  return scratch[0];
}

/// max that lets NaN win (NaN if either is NaN), for stable softmax.
template <class C>
__device__ __forceinline__ C max_nan(C a, C b) {
  if (a != a) return a;
  if (b != b) return b;
  return a > b ? a : b;
}

template <class C>
__device__ __forceinline__ C warp_max_nan(C v) {
  for (int offset = 16; offset > 0; offset >>= 1)
    v = max_nan(v, __shfl_down_sync(0xffffffffu, v, offset));
  return v;
}

/// NaN-propagating max over the block, returned to every thread (see block_sum).
template <class C>
__device__ C block_max_nan(C v, C* scratch) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int warps = static_cast<int>(blockDim.x + 31) >> 5;
  v = warp_max_nan(v);
  __syncthreads();
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  if (warp == 0) {
    C w = lane < warps ? scratch[lane] : -static_cast<C>(INFINITY);  // max's identity
    w = warp_max_nan(w);
    if (lane == 0) scratch[0] = w;
  }
  __syncthreads();
  return scratch[0];
}

// ---- errors only the GPU sees ---------------------------------------------------------------

/// A code of these kernels beyond launch.h's DeviceErrorCode: max_pool2d_backward got
/// an index outside its own window (details: the index, the output position in its
/// plane, the plane size H·W).
inline constexpr int32_t kDeviceErrorPoolIndexOutsideWindow = 101;

/// Claims the launch's error flag (the first error of a launch wins) and fills the
/// three details that launch.h's codes define.
__device__ __forceinline__ void flag_device_error(int32_t* flag, int64_t* detail, int32_t code,
                                                  int64_t d0, int64_t d1, int64_t d2) {
  if (atomicCAS(flag, 0, code) == 0) {
    detail[0] = d0;
    detail[1] = d1;
    detail[2] = d2;
  }
}

/// The launch's error flag and details, passed to kernels by value.
struct ErrorSink {
  int32_t* flag;
  int64_t* detail;
  __device__ __forceinline__ void raise(int32_t code, int64_t d0, int64_t d1, int64_t d2) const {
    flag_device_error(flag, detail, code, d0, d1, d2);
  }
};

inline ErrorSink error_sink(const Launch& l) { return {l.error_flag(), l.error_detail()}; }

// ---- strided operands -----------------------------------------------------------------------

inline constexpr int kMaxDims = 16;

/// Maps a row-major linear index over a shared shape to element offsets in N operands
/// of their own strides. Dims are collapsed first where every operand allows (and
/// size-1 dims dropped), so a contiguous set of operands costs no division at all.
template <int N>
struct StridedIndexer {
  int32_t ndim = 0;
  int64_t sizes[kMaxDims];
  int64_t strides[N][kMaxDims];

  __device__ __forceinline__ void offsets(int64_t linear, int64_t (&out)[N]) const {
#pragma unroll
    for (int k = 0; k < N; ++k) out[k] = 0;
    for (int d = ndim - 1; d >= 0; --d) {
      const int64_t size = sizes[d];
      const int64_t coordinate = linear % size;
      linear /= size;
#pragma unroll
      for (int k = 0; k < N; ++k) out[k] += coordinate * strides[k][d];
    }
  }
};

/// Builds the indexer for operands of one shape (checked by the caller). Throws
/// UNSUPPORTED when more than kMaxDims dims remain after collapsing.
template <int N>
StridedIndexer<N> make_indexer(const TensorView* const (&ops)[N]) {
  StridedIndexer<N> ix;
  const TensorView& ref = *ops[0];
  int32_t nd = 0;
  int64_t sizes[64];
  int64_t strides[N][64];
  KILN_SDK_CHECK(ref.ndim <= 64, KILN_STATUS_UNSUPPORTED, "rank ", ref.ndim, " above 64");
  for (int32_t d = 0; d < ref.ndim; ++d) {
    if (ref.shape[d] == 1) continue;
    if (nd > 0) {
      bool mergeable = true;
      for (int k = 0; k < N; ++k)
        mergeable = mergeable && strides[k][nd - 1] == ops[k]->strides[d] * ref.shape[d];
      if (mergeable) {
        sizes[nd - 1] *= ref.shape[d];
        for (int k = 0; k < N; ++k) strides[k][nd - 1] = ops[k]->strides[d];
        continue;
      }
    }
    sizes[nd] = ref.shape[d];
    for (int k = 0; k < N; ++k) strides[k][nd] = ops[k]->strides[d];
    ++nd;
  }
  KILN_SDK_CHECK(nd <= kMaxDims, KILN_STATUS_UNSUPPORTED, "operands of rank ", ref.ndim,
                 " whose strides leave ", nd, " dims after collapsing (at most ", kMaxDims,
                 " supported)");
  ix.ndim = nd;
  for (int32_t d = 0; d < nd; ++d) {
    ix.sizes[d] = sizes[d];
    for (int k = 0; k < N; ++k) ix.strides[k][d] = strides[k][d];
  }
  return ix;
}

/// True when the indexer is a single unit-stride dim for every operand (or none):
/// the linear index is then the offset.
template <int N>
bool is_linear(const StridedIndexer<N>& ix) {
  if (ix.ndim == 0) return true;
  if (ix.ndim != 1) return false;
  for (int k = 0; k < N; ++k)
    if (ix.strides[k][0] != 1) return false;
  return true;
}

}  // namespace kiln::cuda::dnn

#endif  // KILN_CUDA_KERNELS_DNN_UTIL_CUH
