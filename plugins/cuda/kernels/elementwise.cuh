// kernels/elementwise.cuh — the engine behind every elementwise kernel: one kernel
// per op and dtype, broadcasting by index arithmetic (OPS.md passes broadcast inputs
// as stride-0 views of the output's shape; nothing is ever expanded in memory).
//
//   const TensorView* operands[3] = {&y, &a, &b};  // output first
//   run_elementwise<float, float, float>(launch, operands, Add{});
//
// On the host, the operands' common shape is simplified exactly as the CPU plugin's
// loop engine does: size-1 dims dropped, the output's strides made positive (flipping
// a dim for every operand), dims ordered by the output's strides, and neighbouring
// dims merged when they are contiguous with each other in every operand. Then:
//
//  - every operand contiguous (one dim of stride 1, the common case): a grid-stride
//    loop that moves 16 bytes per load and store (float4, 8 halves, 16 bytes...)
//    when every pointer is aligned for it, one element at a time otherwise;
//  - anything else: a grid-stride loop over the output's elements in plan order
//    that turns each flat index into per-operand offsets (32-bit division while the
//    element count allows it; a single multiply when one dim is left, which covers a
//    stride-0 scalar operand).
//
// `Op` is a device functor called with each input's compute_t value; its result is
// converted to Out once (convert, common.cuh). Exact aliasing of the output with an
// input (in-place ops) is safe: each thread reads its elements before writing them.
#ifndef KILN_CUDA_KERNELS_ELEMENTWISE_CUH
#define KILN_CUDA_KERNELS_ELEMENTWISE_CUH

#include <algorithm>
#include <cstdint>
#include <tuple>
#include <utility>

#include "kernels/common.cuh"
#include "kiln/sdk/loop_plan.h"

namespace kiln::cuda {

using sdk::kMaxLoopDims;
inline constexpr int kMaxDims = kMaxLoopDims;

/// The SDK's plan (kiln/sdk/loop_plan.h), and whether 32-bit indices suffice.
template <int N>
struct ElementwisePlan : sdk::LoopPlan<N> {
  bool index32 = true;
};

/// Builds the plan for `ops` (ops[0] is the output; every operand has its shape, which
/// the caller has checked).
template <int N>
ElementwisePlan<N> make_plan(const TensorView* const (&ops)[N]) {
  ElementwisePlan<N> p;
  sdk::plan_loop(ops, p);
  p.index32 = p.numel <= INT32_MAX;
  return p;
}

// -- device side --------------------------------------------------------------------------------

/// Element offsets of flat index `i` (row-major over the plan's dims) in every operand.
template <int N>
__device__ __forceinline__ void offsets_of(const ElementwisePlan<N>& p, int64_t i,
                                           int64_t (&off)[N]) {
  if (p.ndim == 1) {
#pragma unroll
    for (int k = 0; k < N; ++k) off[k] = i * p.strides[k][0];
    return;
  }
#pragma unroll
  for (int k = 0; k < N; ++k) off[k] = 0;
  if (p.index32) {
    // 32-bit division is several times cheaper than 64-bit on the GPU.
    uint32_t rest = static_cast<uint32_t>(i);
    for (int d = p.ndim - 1; d > 0; --d) {
      const uint32_t size = static_cast<uint32_t>(p.shape[d]);
      const uint32_t q = rest / size;
      const int64_t r = static_cast<int64_t>(rest - q * size);
#pragma unroll
      for (int k = 0; k < N; ++k) off[k] += r * p.strides[k][d];
      rest = q;
    }
#pragma unroll
    for (int k = 0; k < N; ++k) off[k] += static_cast<int64_t>(rest) * p.strides[k][0];
  } else {
    int64_t rest = i;
    for (int d = p.ndim - 1; d > 0; --d) {
      const int64_t q = rest / p.shape[d];
      const int64_t r = rest - q * p.shape[d];
#pragma unroll
      for (int k = 0; k < N; ++k) off[k] += r * p.strides[k][d];
      rest = q;
    }
#pragma unroll
    for (int k = 0; k < N; ++k) off[k] += rest * p.strides[k][0];
  }
}

template <class Op, class Out, class... In, size_t... K>
__device__ __forceinline__ void apply_at(char* const* base, const int64_t* off, const Op& op,
                                         std::index_sequence<K...>) {
  reinterpret_cast<Out*>(base[0])[off[0]] =
      convert<Out>(op(load(reinterpret_cast<const In*>(base[K + 1])[off[K + 1]])...));
}

template <class Op, class Out, class... In>
__global__ void __launch_bounds__(kThreads)
    strided_kernel(const __grid_constant__ ElementwisePlan<1 + sizeof...(In)> p, const Op op) {
  constexpr int N = 1 + sizeof...(In);
  for (int64_t i = global_thread(); i < p.numel; i += grid_threads()) {
    int64_t off[N];
    offsets_of(p, i, off);
    apply_at<Op, Out, In...>(p.base, off, op, std::index_sequence_for<In...>{});
  }
}

/// Elements per thread in the vectorized loop: 16 bytes of the widest operand.
template <class... T>
inline constexpr int kVectorWidth = static_cast<int>(16 / std::max({sizeof(T)...}));

template <class T, int W>
struct alignas(sizeof(T) * W) Pack {
  T v[W];
};

/// True when `p` may be read or written as Pack<T, W>.
template <class T, int W>
bool pack_aligned(const void* p) {
  return reinterpret_cast<uintptr_t>(p) % (sizeof(T) * W) == 0;
}

/// Packs each thread of the one- and two-input kernels loads before it computes: the
/// loads of a grid-stride loop with one pack per step left add/relu of 2^26 float32 at
/// 96 % of the copy bandwidth on an H200, where PyTorch reached it. In place is still
/// safe: a thread reads each of its packs before it writes it, and only its own.
inline constexpr int kPacksInFlight = 4;

// Contiguous operands, by number of inputs. One kernel each (rather than one variadic
// one) so that every input's pack is a named register variable the compiler keeps in
// registers and loads with a single 16-byte instruction.

template <class Op, class Out>
__global__ void __launch_bounds__(kThreads)
    contiguous_kernel0(int64_t n, const Op op, bool vectorized, Out* __restrict__ y) {
  constexpr int W = kVectorWidth<Out>;
  int64_t tail = 0;
  if (vectorized) {
    const int64_t packs = n / W;
    for (int64_t v = global_thread(); v < packs; v += grid_threads()) {
      Pack<Out, W> out;
#pragma unroll
      for (int j = 0; j < W; ++j) out.v[j] = convert<Out>(op());
      reinterpret_cast<Pack<Out, W>*>(y)[v] = out;
    }
    tail = packs * W;
  }
  for (int64_t i = tail + global_thread(); i < n; i += grid_threads()) y[i] = convert<Out>(op());
}

template <class Op, class Out, class A>
__global__ void __launch_bounds__(kThreads)
    contiguous_kernel1(int64_t n, const Op op, bool vectorized, Out* y, const A* a) {
  constexpr int W = kVectorWidth<Out, A>;
  int64_t tail = 0;
  if (vectorized) {
    const int64_t packs = n / W;
    const int64_t stride = grid_threads();
    int64_t v = global_thread();
    for (; v + (kPacksInFlight - 1) * stride < packs; v += kPacksInFlight * stride) {
      Pack<A, W> pa[kPacksInFlight];
#pragma unroll
      for (int u = 0; u < kPacksInFlight; ++u) {
        pa[u] = reinterpret_cast<const Pack<A, W>*>(a)[v + u * stride];
      }
#pragma unroll
      for (int u = 0; u < kPacksInFlight; ++u) {
        Pack<Out, W> out;
#pragma unroll
        for (int j = 0; j < W; ++j) out.v[j] = convert<Out>(op(load(pa[u].v[j])));
        reinterpret_cast<Pack<Out, W>*>(y)[v + u * stride] = out;
      }
    }
    for (; v < packs; v += stride) {
      const Pack<A, W> pa = reinterpret_cast<const Pack<A, W>*>(a)[v];
      Pack<Out, W> out;
#pragma unroll
      for (int j = 0; j < W; ++j) out.v[j] = convert<Out>(op(load(pa.v[j])));
      reinterpret_cast<Pack<Out, W>*>(y)[v] = out;
    }
    tail = packs * W;
  }
  for (int64_t i = tail + global_thread(); i < n; i += grid_threads()) {
    y[i] = convert<Out>(op(load(a[i])));
  }
}

template <class Op, class Out, class A, class B>
__global__ void __launch_bounds__(kThreads)
    contiguous_kernel2(int64_t n, const Op op, bool vectorized, Out* y, const A* a, const B* b) {
  constexpr int W = kVectorWidth<Out, A, B>;
  int64_t tail = 0;
  if (vectorized) {
    const int64_t packs = n / W;
    const int64_t stride = grid_threads();
    int64_t v = global_thread();
    for (; v + (kPacksInFlight - 1) * stride < packs; v += kPacksInFlight * stride) {
      Pack<A, W> pa[kPacksInFlight];
      Pack<B, W> pb[kPacksInFlight];
#pragma unroll
      for (int u = 0; u < kPacksInFlight; ++u) {
        pa[u] = reinterpret_cast<const Pack<A, W>*>(a)[v + u * stride];
        pb[u] = reinterpret_cast<const Pack<B, W>*>(b)[v + u * stride];
      }
#pragma unroll
      for (int u = 0; u < kPacksInFlight; ++u) {
        Pack<Out, W> out;
#pragma unroll
        for (int j = 0; j < W; ++j) {
          out.v[j] = convert<Out>(op(load(pa[u].v[j]), load(pb[u].v[j])));
        }
        reinterpret_cast<Pack<Out, W>*>(y)[v + u * stride] = out;
      }
    }
    for (; v < packs; v += stride) {
      const Pack<A, W> pa = reinterpret_cast<const Pack<A, W>*>(a)[v];
      const Pack<B, W> pb = reinterpret_cast<const Pack<B, W>*>(b)[v];
      Pack<Out, W> out;
#pragma unroll
      for (int j = 0; j < W; ++j) out.v[j] = convert<Out>(op(load(pa.v[j]), load(pb.v[j])));
      reinterpret_cast<Pack<Out, W>*>(y)[v] = out;
    }
    tail = packs * W;
  }
  for (int64_t i = tail + global_thread(); i < n; i += grid_threads()) {
    y[i] = convert<Out>(op(load(a[i]), load(b[i])));
  }
}

template <class Op, class Out, class A, class B, class C>
__global__ void __launch_bounds__(kThreads)
    contiguous_kernel3(int64_t n, const Op op, bool vectorized, Out* y, const A* a, const B* b,
                       const C* c) {
  constexpr int W = kVectorWidth<Out, A, B, C>;
  int64_t tail = 0;
  if (vectorized) {
    const int64_t packs = n / W;
    for (int64_t v = global_thread(); v < packs; v += grid_threads()) {
      const Pack<A, W> pa = reinterpret_cast<const Pack<A, W>*>(a)[v];
      const Pack<B, W> pb = reinterpret_cast<const Pack<B, W>*>(b)[v];
      const Pack<C, W> pc = reinterpret_cast<const Pack<C, W>*>(c)[v];
      Pack<Out, W> out;
#pragma unroll
      for (int j = 0; j < W; ++j) {
        out.v[j] = convert<Out>(op(load(pa.v[j]), load(pb.v[j]), load(pc.v[j])));
      }
      reinterpret_cast<Pack<Out, W>*>(y)[v] = out;
    }
    tail = packs * W;
  }
  for (int64_t i = tail + global_thread(); i < n; i += grid_threads()) {
    y[i] = convert<Out>(op(load(a[i]), load(b[i]), load(c[i])));
  }
}

// -- host side ------------------------------------------------------------------------------------

template <class Out, class... In, size_t... K>
bool all_pack_aligned(char* const* base, std::index_sequence<K...>) {
  constexpr int W = kVectorWidth<Out, In...>;
  return pack_aligned<Out, W>(base[0]) && (pack_aligned<In, W>(base[K + 1]) && ...);
}

/// Runs y = op(inputs...) over operands ops = {y, inputs...} of one shape. Enqueues on
/// launch.stream() and returns.
template <class Out, class... In, class Op>
void run_elementwise(const Launch& launch, const TensorView* const (&ops)[1 + sizeof...(In)],
                     const Op& op) {
  static_assert(sizeof...(In) <= 3, "contiguous kernels exist for up to three inputs");
  const ElementwisePlan<1 + sizeof...(In)> p = make_plan(ops);
  if (p.numel == 0) return;
  const cudaStream_t stream = launch.stream();
  if (!p.contiguous()) {
    strided_kernel<Op, Out, In...><<<grid_for(p.numel, launch), kThreads, 0, stream>>>(p, op);
    return;
  }
  constexpr int W = kVectorWidth<Out, In...>;
  const bool vectorized =
      p.numel >= W && all_pack_aligned<Out, In...>(p.base, std::index_sequence_for<In...>{});
  const unsigned grid = grid_for(vectorized ? p.numel / W : p.numel, launch);
  Out* y = reinterpret_cast<Out*>(p.base[0]);
  if constexpr (sizeof...(In) == 0) {
    contiguous_kernel0<Op, Out><<<grid, kThreads, 0, stream>>>(p.numel, op, vectorized, y);
  } else if constexpr (sizeof...(In) == 1) {
    using A = std::tuple_element_t<0, std::tuple<In...>>;
    contiguous_kernel1<Op, Out, A><<<grid, kThreads, 0, stream>>>(
        p.numel, op, vectorized, y, reinterpret_cast<const A*>(p.base[1]));
  } else if constexpr (sizeof...(In) == 2) {
    using A = std::tuple_element_t<0, std::tuple<In...>>;
    using B = std::tuple_element_t<1, std::tuple<In...>>;
    contiguous_kernel2<Op, Out, A, B><<<grid, kThreads, 0, stream>>>(
        p.numel, op, vectorized, y, reinterpret_cast<const A*>(p.base[1]),
        reinterpret_cast<const B*>(p.base[2]));
  } else {
    using A = std::tuple_element_t<0, std::tuple<In...>>;
    using B = std::tuple_element_t<1, std::tuple<In...>>;
    using C = std::tuple_element_t<2, std::tuple<In...>>;
    contiguous_kernel3<Op, Out, A, B, C><<<grid, kThreads, 0, stream>>>(
        p.numel, op, vectorized, y, reinterpret_cast<const A*>(p.base[1]),
        reinterpret_cast<const B*>(p.base[2]), reinterpret_cast<const C*>(p.base[3]));
  }
}

}  // namespace kiln::cuda

#endif  // KILN_CUDA_KERNELS_ELEMENTWISE_CUH
