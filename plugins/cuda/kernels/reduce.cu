// Reductions: sum, prod, mean, amax, amin, argmax, argmin, var.
//
// Accumulators (OPS.md): float32/float64 sums in float64, half types in float32,
// integers in 64 bits (wrapping, through unsigned arithmetic).
//
// Determinism: every result depends on the shape, the strides and where x starts
// within 16 bytes (which decides the packed loads), never on timing. No floating-
// point atomics: each output's elements are split into `slices` (a function of the
// shape) that are reduced in a fixed order, within a block by a fixed tree, and the
// slices' partial results are merged in a fixed order by a second kernel. The same
// sum twice gives the same bits; a view one element off may differ in the last bits.
//
// Layouts, after the CPU plugin's reduce engine (x's dims are split into kept dims,
// in y's order, and reduced dims; each group is coalesced):
//  - rows: the innermost stride of x belongs to a reduced dim (a sum over the last
//    dim or over everything): a block (64 or 256 threads) reduces one slice of one
//    output, its threads striding through the slice so that a warp reads contiguous
//    memory, then a shared-memory tree combines the threads;
//  - columns: the innermost stride belongs to a kept dim (a sum over dim 0 of a
//    row-major matrix): one thread per (output, slice), neighbouring threads on
//    neighbouring outputs, so each step of the reduction is one coalesced read.
// Few outputs with long reductions get more slices, so the GPU fills up either way.
#include <math_constants.h>

#include <algorithm>
#include <cstdlib>

#include "kernels/elementwise.cuh"
#include "kernels/registry.h"
#include "kiln/sdk/reduce_plan.h"

namespace kiln::cuda {

namespace {

// -- the plan ---------------------------------------------------------------------------------

// The plan every plugin shares (kiln/sdk/reduce_plan.h).
using sdk::make_reduce_plan;
using sdk::ReducePlan;

/// What the kernels receive: the plan, x, and how each reduction is sliced.
struct ReduceArgs {
  ReducePlan plan;
  const char* x;
  int64_t slices;     // per output
  int64_t slice_len;  // elements per slice (the last may be shorter)
};

/// How a block walks its slice: one kernel per walk, so that each carries only the
/// registers of its own loop.
enum class Walk {
  kContiguous,  // an output's reduced elements are contiguous (reduce_contiguous)
  kPackedRuns,  // runs of whole 16-byte packs at aligned addresses (reduce_packed_runs)
  kStrided,     // anything else (reduce_strided)
};

__device__ __forceinline__ int64_t offset_in(int64_t flat, int nd, const int64_t* shape,
                                             const int64_t* stride) {
  if (nd == 1) return flat * stride[0];
  int64_t offset = 0;
  for (int d = nd - 1; d >= 0; --d) {
    const int64_t q = flat / shape[d];
    offset += (flat - q * shape[d]) * stride[d];
    flat = q;
  }
  return offset;
}

// -- policies ---------------------------------------------------------------------------------
// A policy P says what a reduction computes:
//   In, Acc, Out; Acc init(out); step(Acc&, compute_t<In> x, r) with r the index in
//   the reduction; merge(Acc& a, const Acc& b); Out finish(const Acc&, n, out).

template <class T>
using sum_acc_t = std::conditional_t<std::is_integral_v<T>, uint64_t,
                                     std::conditional_t<is_half_v<T>, float, double>>;

template <class Acc>
__device__ __forceinline__ Acc quiet_nan() {
  if constexpr (std::is_same_v<Acc, float>)
    return CUDART_NAN_F;
  else
    return CUDART_NAN;
}

template <class Acc, class C>
__device__ __forceinline__ Acc widen(C x) {
  if constexpr (std::is_same_v<Acc, uint64_t>)
    return static_cast<uint64_t>(static_cast<int64_t>(x));
  else
    return static_cast<Acc>(x);
}

// An accumulator stored as the output type; integer accumulators wrap.
template <class Out, class Acc>
__device__ __forceinline__ Out narrow(Acc acc) {
  if constexpr (std::is_integral_v<Out>)
    return static_cast<Out>(acc);
  else
    return convert<Out>(acc);
}

template <class T>
struct SumPolicy {
  using In = T;
  using Acc = sum_acc_t<T>;
  using Out = T;
  __device__ Acc init(int64_t) const { return Acc(0); }
  __device__ void step(Acc& acc, compute_t<T> x, int64_t) const { acc += widen<Acc>(x); }
  __device__ void merge(Acc& a, const Acc& b) const { a += b; }
  __device__ Out finish(const Acc& acc, int64_t, int64_t) const { return narrow<Out>(acc); }
};

template <class T>
struct ProdPolicy {
  using In = T;
  using Acc = sum_acc_t<T>;
  using Out = T;
  __device__ Acc init(int64_t) const { return Acc(1); }
  __device__ void step(Acc& acc, compute_t<T> x, int64_t) const { acc *= widen<Acc>(x); }
  __device__ void merge(Acc& a, const Acc& b) const { a *= b; }
  __device__ Out finish(const Acc& acc, int64_t, int64_t) const { return narrow<Out>(acc); }
};

template <class T>
struct MeanPolicy : SumPolicy<T> {
  using Acc = sum_acc_t<T>;
  using Out = T;
  __device__ Out finish(const Acc& acc, int64_t n, int64_t) const {
    if (n == 0) return convert<Out>(quiet_nan<Acc>());
    return convert<Out>(acc / static_cast<Acc>(n));
  }
};

// Variance in one pass. Each thread sums d = x − k and d² from a shift k, the first
// element it sees, so the sums stay small next to the data's offset; partial results
// combine as (count, mean, M2) by Chan, Golub and LeVeque's pairwise update, stored
// back with k = mean and Σd = 0. Never Σx² − (Σx)²/n. (Two passes, the means first,
// read x twice: 57 µs for 2^24 floats on an H200, where one pass takes half that.)
template <class T>
struct VarPolicy {
  using In = T;
  using Real = sum_acc_t<T>;
  struct Acc {
    int64_t count;
    Real shift;  // k
    Real s1;     // Σ (x − k)
    Real s2;     // Σ (x − k)²
  };
  using Out = T;
  int64_t correction;
  __device__ static Real m2_of(const Acc& a) {
    const Real m2 = a.s2 - a.s1 * a.s1 / static_cast<Real>(a.count);
    return m2 < Real(0) ? Real(0) : m2;  // rounding can leave -0.000…1; NaN stays NaN
  }
  __device__ Acc init(int64_t) const { return {0, Real(0), Real(0), Real(0)}; }
  __device__ void step(Acc& acc, compute_t<T> x, int64_t) const {
    const Real v = static_cast<Real>(x);
    if (acc.count == 0) acc.shift = v;
    const Real d = v - acc.shift;
    ++acc.count;
    acc.s1 += d;
    acc.s2 += d * d;
  }
  __device__ void merge(Acc& a, const Acc& b) const {
    if (b.count == 0) return;
    if (a.count == 0) {
      a = b;
      return;
    }
    const Real na = static_cast<Real>(a.count), nb = static_cast<Real>(b.count);
    const Real mean_a = a.shift + a.s1 / na, mean_b = b.shift + b.s1 / nb;
    const Real n = na + nb;
    const Real delta = mean_b - mean_a;
    const Real m2 = m2_of(a) + m2_of(b) + delta * delta * (na * nb / n);
    a = {a.count + b.count, mean_a + delta * (nb / n), Real(0), m2};
  }
  __device__ Out finish(const Acc& acc, int64_t n, int64_t) const {
    if (n - correction <= 0) return convert<Out>(quiet_nan<Real>());
    const Real m2 = acc.count == 0 ? Real(0) : m2_of(acc);
    return convert<Out>(m2 / static_cast<Real>(n - correction));
  }
};

template <class C, bool kMax>
__device__ __forceinline__ C extremum_identity() {
  if constexpr (std::is_same_v<C, float>)
    return kMax ? -CUDART_INF_F : CUDART_INF_F;
  else if constexpr (std::is_same_v<C, double>)
    return kMax ? -CUDART_INF : CUDART_INF;
  else if constexpr (std::is_same_v<C, int32_t>)
    return kMax ? INT32_MIN : INT32_MAX;
  else if constexpr (std::is_same_v<C, int64_t>)
    return kMax ? INT64_MIN : INT64_MAX;
  else
    return kMax ? C(0) : C(UINT8_MAX);
}

// max/min that propagate NaN: once the accumulator is NaN it stays NaN.
template <class T, bool kMax>
struct ExtremumPolicy {
  using In = T;
  using Acc = compute_t<T>;
  using Out = T;
  __device__ Acc init(int64_t) const { return extremum_identity<Acc, kMax>(); }
  __device__ void step(Acc& acc, Acc x, int64_t) const {
    const bool better = kMax ? x > acc : x < acc;
    acc = (better || is_nan(x)) ? x : acc;
  }
  __device__ void merge(Acc& a, const Acc& b) const { step(a, b, 0); }
  __device__ Out finish(const Acc& acc, int64_t, int64_t) const { return convert<Out>(acc); }
};

// Index of the first max/min; NaN counts as both the maximum and the minimum. Partial
// results merge by value and, on a tie, by the smaller index, so the answer does not
// depend on how the elements were split.
template <class T, bool kMax>
struct ArgPolicy {
  using In = T;
  struct Acc {
    compute_t<T> value;
    int64_t index;  // -1: nothing seen yet
  };
  using Out = int64_t;
  __device__ static bool better(compute_t<T> x, compute_t<T> current) {
    if (is_nan(x)) return !is_nan(current);
    return kMax ? x > current : x < current;
  }
  __device__ Acc init(int64_t) const { return {compute_t<T>(0), -1}; }
  __device__ void step(Acc& acc, compute_t<T> x, int64_t r) const {
    if (acc.index < 0 || better(x, acc.value)) acc = {x, r};
  }
  __device__ void merge(Acc& a, const Acc& b) const {
    if (b.index < 0) return;
    if (a.index < 0 || better(b.value, a.value) ||
        (!better(a.value, b.value) && b.index < a.index)) {
      a = b;
    }
  }
  __device__ Out finish(const Acc& acc, int64_t, int64_t) const {
    return acc.index < 0 ? 0 : acc.index;
  }
};

// -- kernels ------------------------------------------------------------------------------------

// Where the time goes (H200, 2026-11-26): a sum of 2^24 floats read 0.66 TB/s when each
// thread had one 4-byte load in flight and divided its index down the reduced dims
// for every element. The walks below keep several loads in flight per thread (16-byte
// packs where the slice is contiguous) and divide only when a run of the innermost
// reduced dim ends. Each thread still steps through its elements in increasing index
// order, so the result does not depend on timing, as before.

/// Loads in flight per thread in the walks below.
inline constexpr int kUnroll = 4;

/// x[begin, end) is contiguous: `lanes` threads read 16-byte packs, kUnroll at a time.
template <class P>
__device__ __forceinline__ void reduce_contiguous(const P& policy, typename P::Acc& acc,
                                                  const typename P::In* x, int64_t begin,
                                                  int64_t end, int lane, int lanes) {
  using In = typename P::In;
  constexpr int W = kVectorWidth<In>;
  const In* first = x + begin;
  const int64_t len = end - begin;
  // Elements before the first 16-byte boundary, so that every pack is aligned.
  const auto misaligned = static_cast<int64_t>(reinterpret_cast<uintptr_t>(first) % 16);
  const int64_t head =
      misaligned % static_cast<int64_t>(sizeof(In)) != 0
          ? len  // not even element-aligned (never made by Kiln): one element at a time
          : min(len, ((16 - misaligned) % 16) / static_cast<int64_t>(sizeof(In)));
  for (int64_t i = lane; i < head; i += lanes) policy.step(acc, load(first[i]), begin + i);
  const int64_t packs = (len - head) / W;
  const auto* pack = reinterpret_cast<const Pack<In, W>*>(first + head);
  const int64_t r0 = begin + head;
  int64_t v = lane;
  for (; v + (kUnroll - 1) * int64_t{lanes} < packs; v += kUnroll * int64_t{lanes}) {
    Pack<In, W> buffer[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) buffer[u] = pack[v + u * int64_t{lanes}];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
#pragma unroll
      for (int j = 0; j < W; ++j) {
        policy.step(acc, load(buffer[u].v[j]), r0 + (v + u * int64_t{lanes}) * W + j);
      }
    }
  }
  for (; v < packs; v += lanes) {
    const Pack<In, W> one = pack[v];
#pragma unroll
    for (int j = 0; j < W; ++j) policy.step(acc, load(one.v[j]), r0 + v * W + j);
  }
  for (int64_t i = head + packs * W + lane; i < len; i += lanes) {
    policy.step(acc, load(first[i]), begin + i);
  }
}

/// The innermost reduced dim is contiguous and a multiple of 16 bytes long, as in a
/// convolution's bias gradient (sum over N, H, W of [N, C, H, W]): packs of it, walked
/// run by run as in reduce_strided, kUnroll loads in flight.
template <class P>
__device__ __forceinline__ void reduce_packed_runs(const ReduceArgs& a, const P& policy,
                                                   typename P::Acc& acc, const typename P::In* base,
                                                   int64_t begin, int64_t end, int lane,
                                                   int lanes) {
  using In = typename P::In;
  constexpr int W = kVectorWidth<In>;
  const ReducePlan& p = a.plan;
  const int outer_dims = p.nr - 1;
  const int64_t inner_packs = p.r_shape[outer_dims] / W;
  const int64_t q_end = end / W;
  int64_t q = begin / W + lane;
  if (q >= q_end) return;
  int64_t run = q / inner_packs;
  int64_t pos = q - run * inner_packs;
  int64_t run_offset = offset_in(run, outer_dims, p.r_shape, p.r_stride);
  while (q < q_end) {
    Pack<In, W> buffer[kUnroll];
    int64_t index[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      index[u] = q;
      if (q < q_end) {
        buffer[u] = *reinterpret_cast<const Pack<In, W>*>(base + run_offset + pos * W);
        q += lanes;
        pos += lanes;
        if (pos >= inner_packs) {
          run += pos / inner_packs;
          pos %= inner_packs;
          run_offset = offset_in(run, outer_dims, p.r_shape, p.r_stride);
        }
      }
    }
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      if (index[u] >= q_end) continue;
#pragma unroll
      for (int j = 0; j < W; ++j) policy.step(acc, load(buffer[u].v[j]), index[u] * W + j);
    }
  }
}

/// Any strides: the reduced index r = run * inner + pos, with `inner` the innermost
/// reduced dim; the run's offset is recomputed only when a run ends.
template <class P>
__device__ __forceinline__ void reduce_strided(const ReduceArgs& a, const P& policy,
                                               typename P::Acc& acc, const typename P::In* base,
                                               int64_t begin, int64_t end, int64_t step) {
  using In = typename P::In;
  const ReducePlan& p = a.plan;
  if (p.nr == 0) {  // one element
    if (begin < end) policy.step(acc, load(base[0]), 0);
    return;
  }
  const int outer_dims = p.nr - 1;
  const int64_t inner = p.r_shape[outer_dims];
  const int64_t inner_stride = p.r_stride[outer_dims];
  int64_t r = begin;
  if (r >= end) return;
  int64_t run = r / inner;
  int64_t pos = r - run * inner;
  int64_t run_offset = outer_dims == 0 ? 0 : offset_in(run, outer_dims, p.r_shape, p.r_stride);
  while (r < end) {
    compute_t<In> value[kUnroll] = {};
    int64_t index[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      index[u] = r;
      if (r < end) {
        value[u] = load(base[run_offset + pos * inner_stride]);
        r += step;
        pos += step;
        if (pos >= inner) {
          run += pos / inner;
          pos %= inner;
          run_offset = outer_dims == 0 ? 0 : offset_in(run, outer_dims, p.r_shape, p.r_stride);
        }
      }
    }
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      if (index[u] < end) policy.step(acc, value[u], index[u]);
    }
  }
}

template <class P>
__device__ __forceinline__ const typename P::In* output_base(const ReduceArgs& a, int64_t out) {
  const ReducePlan& p = a.plan;
  const auto* x = reinterpret_cast<const typename P::In*>(a.x);
  return p.nk == 0 ? x : x + offset_in(out, p.nk, p.k_shape, p.k_stride);
}

/// Merges the block's per-thread accumulators into shared[0] (a fixed tree).
template <class P>
__device__ __forceinline__ void merge_block(const P& policy, typename P::Acc* shared, int tid) {
  __syncthreads();
  for (int width = static_cast<int>(blockDim.x) / 2; width > 0; width /= 2) {
    if (tid < width) policy.merge(shared[tid], shared[tid + width]);
    __syncthreads();
  }
}

// One block per (output, slice); item = output * slices + slice.
template <class P, Walk kWalk>
__global__ void __launch_bounds__(kThreads)
    reduce_block_kernel(const __grid_constant__ ReduceArgs a, const P policy,
                        typename P::Acc* partial, typename P::Out* y) {
  using Acc = typename P::Acc;
  __shared__ alignas(Acc) unsigned char raw[sizeof(Acc) * kThreads];
  Acc* shared = reinterpret_cast<Acc*>(raw);
  const int64_t items = a.plan.outputs * a.slices;
  const int tid = static_cast<int>(threadIdx.x);
  const int lanes = static_cast<int>(blockDim.x);
  for (int64_t item = blockIdx.x; item < items; item += gridDim.x) {
    const int64_t out = item / a.slices;
    const int64_t slice = item - out * a.slices;
    const int64_t begin = slice * a.slice_len;
    const int64_t end = min(a.plan.n, begin + a.slice_len);
    Acc acc = policy.init(out);
    const typename P::In* base = output_base<P>(a, out);
    if constexpr (kWalk == Walk::kContiguous) {
      reduce_contiguous(policy, acc, base, begin, end, tid, lanes);
    } else if constexpr (kWalk == Walk::kPackedRuns) {
      reduce_packed_runs(a, policy, acc, base, begin, end, tid, lanes);
    } else {
      reduce_strided(a, policy, acc, base, begin + tid, end, lanes);
    }
    shared[tid] = acc;
    merge_block(policy, shared, tid);
    if (tid == 0) {
      if (a.slices == 1)
        y[out] = policy.finish(shared[0], a.plan.n, out);
      else
        partial[item] = shared[0];
    }
    __syncthreads();  // shared[] is rewritten by the next item
  }
}

// One thread per (output, slice); item = slice * outputs + output, so neighbouring
// threads take neighbouring outputs. Partials are stored output-major.
template <class P>
__global__ void __launch_bounds__(kThreads)
    reduce_thread_kernel(const __grid_constant__ ReduceArgs a, const P policy,
                         typename P::Acc* partial, typename P::Out* y) {
  using Acc = typename P::Acc;
  const int64_t outputs = a.plan.outputs;
  const int64_t items = outputs * a.slices;
  for (int64_t item = global_thread(); item < items; item += grid_threads()) {
    const int64_t slice = item / outputs;
    const int64_t out = item - slice * outputs;
    const int64_t begin = slice * a.slice_len;
    const int64_t end = min(a.plan.n, begin + a.slice_len);
    Acc acc = policy.init(out);
    reduce_strided(a, policy, acc, output_base<P>(a, out), begin, end, 1);
    if (a.slices == 1)
      y[out] = policy.finish(acc, a.plan.n, out);
    else
      partial[out * a.slices + slice] = acc;
  }
}

// Merges each output's slices with a group of G threads (a warp, or the whole block
// when there are more than 32 slices): lane l takes slices l, l + G, ... in order,
// then a fixed tree over the lanes that had any. The loads of the partials are in
// flight together (one thread merging 25 slices in a row took 4.4 µs on an H200), and
// the result still does not depend on timing.
template <class P, int G>
__global__ void __launch_bounds__(kThreads)
    reduce_merge_kernel(const typename P::Acc* partial, int64_t slices, int64_t outputs, int64_t n,
                        const P policy, typename P::Out* y) {
  using Acc = typename P::Acc;
  constexpr int kGroups = kThreads / G;
  __shared__ alignas(Acc) unsigned char raw[sizeof(Acc) * kThreads];
  const int lane = static_cast<int>(threadIdx.x) % G;
  const int group = static_cast<int>(threadIdx.x) / G;
  Acc* shared = reinterpret_cast<Acc*>(raw) + group * G;
  auto sync = [] {
    if constexpr (G == 32)
      __syncwarp();
    else
      __syncthreads();
  };
  const int used = static_cast<int>(slices < G ? slices : G);  // lanes with partials
  // Block-uniform trip count, so that the whole block may synchronize.
  for (int64_t first = static_cast<int64_t>(blockIdx.x) * kGroups; first < outputs;
       first += static_cast<int64_t>(gridDim.x) * kGroups) {
    const int64_t out = first + group;
    const bool active = out < outputs;
    if (active && lane < used) {
      const Acc* mine = partial + out * slices;
      Acc acc = mine[lane];
      for (int64_t s = lane + G; s < slices; s += G) policy.merge(acc, mine[s]);
      shared[lane] = acc;
    }
    sync();
    for (int width = G / 2; width > 0; width /= 2) {
      if (active && lane < width && lane + width < used) {
        policy.merge(shared[lane], shared[lane + width]);
      }
      sync();
    }
    if (active && lane == 0) y[out] = policy.finish(shared[0], n, out);
    sync();  // shared[] is rewritten for the next outputs
  }
}

// -- host side ------------------------------------------------------------------------------------

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

/// Runs the reduction described by `plan` from x into the contiguous y.
template <class P>
void run_reduce(const Launch& launch, const ReducePlan& plan, const void* x, typename P::Out* y,
                const P& policy) {
  using Acc = typename P::Acc;
  if (plan.outputs == 0) return;
  const int64_t n = plan.n;
  const bool rows = !plan.columns && n >= 64;
  // Slices: chosen from the shape alone (see the file comment).
  int64_t slices = 1;
  if (rows) {
    slices = std::min(ceil_div(n, 16384), std::max<int64_t>(1, 512 / plan.outputs));
  } else if (n > 0) {
    slices = std::min(ceil_div(n, 256), std::max<int64_t>(1, 16384 / plan.outputs));
  }
  slices = std::max<int64_t>(slices, 1);
  int64_t slice_len = std::max<int64_t>(1, ceil_div(n, slices));
  // Rows: slices start on 16-byte packs where the data allows packed loads.
  constexpr int W = kVectorWidth<typename P::In>;
  if (rows) slice_len = ceil_div(slice_len, W) * W;
  slices = std::max<int64_t>(1, ceil_div(n, slice_len));
  const bool contiguous = plan.nr == 1 && plan.r_stride[0] == 1;
  // Packed runs: every output's runs start on 16-byte boundaries.
  bool packed_runs = !contiguous && plan.nr >= 2 && plan.r_stride[plan.nr - 1] == 1 &&
                     plan.r_shape[plan.nr - 1] % W == 0 && reinterpret_cast<uintptr_t>(x) % 16 == 0;
  for (int d = 0; packed_runs && d + 1 < plan.nr; ++d) packed_runs = plan.r_stride[d] % W == 0;
  for (int d = 0; packed_runs && d < plan.nk; ++d) packed_runs = plan.k_stride[d] % W == 0;

  ReduceArgs args{plan, static_cast<const char*>(x), slices, slice_len};
  Acc* partial = nullptr;
  if (slices > 1) {
    partial =
        static_cast<Acc*>(launch.scratch(static_cast<size_t>(plan.outputs * slices) * sizeof(Acc)));
  }
  const cudaStream_t stream = launch.stream();
  const int64_t items = plan.outputs * slices;
  if (rows) {
    const int threads = n >= 2048 ? kThreads : 64;
    const int64_t cap = static_cast<int64_t>(launch.multiprocessor_count()) * 32;
    const auto blocks = static_cast<unsigned>(std::min(items, cap));
    if (contiguous) {
      reduce_block_kernel<P, Walk::kContiguous>
          <<<blocks, threads, 0, stream>>>(args, policy, partial, y);
    } else if (packed_runs) {
      reduce_block_kernel<P, Walk::kPackedRuns>
          <<<blocks, threads, 0, stream>>>(args, policy, partial, y);
    } else {
      reduce_block_kernel<P, Walk::kStrided>
          <<<blocks, threads, 0, stream>>>(args, policy, partial, y);
    }
  } else {
    reduce_thread_kernel<P>
        <<<grid_for(items, launch), kThreads, 0, stream>>>(args, policy, partial, y);
  }
  const int64_t merge_cap = static_cast<int64_t>(launch.multiprocessor_count()) * 16;
  if (slices > 32) {
    const auto blocks = static_cast<unsigned>(std::min(plan.outputs, merge_cap));
    reduce_merge_kernel<P, kThreads>
        <<<blocks, kThreads, 0, stream>>>(partial, slices, plan.outputs, n, policy, y);
  } else if (slices > 1) {
    const auto blocks =
        static_cast<unsigned>(std::min(ceil_div(plan.outputs, kThreads / 32), merge_cap));
    reduce_merge_kernel<P, 32>
        <<<blocks, kThreads, 0, stream>>>(partial, slices, plan.outputs, n, policy, y);
  }
}

using sdk::ReduceOperands;  // x -> y and the plan, checked (kiln/sdk/reduce_plan.h)

template <template <class> class Policy, class... Lists>
void simple_impl(const OpArgs& args, const Launch& launch) {
  const ReduceOperands o(args);
  expect_dtype(o.y, o.x.dtype, "y");
  if (!visit_dtype<Lists...>(o.x.dtype, [&](auto tag) {
        using T = typename decltype(tag)::type;
        run_reduce(launch, o.plan, o.x.data, o.y.ptr<T>(), Policy<T>{});
      })) {
    unsupported_dtype(o.x.dtype);
  }
}

template <class T>
using Amax = ExtremumPolicy<T, true>;
template <class T>
using Amin = ExtremumPolicy<T, false>;

template <bool kMax>
void arg_impl(const OpArgs& args, const Launch& launch) {
  const ReduceOperands o(args);
  expect_dtype(o.y, KILN_DTYPE_INT64, "y");
  KILN_SDK_CHECK_ARG(o.plan.reduced_dims <= 1, "exactly one dimension may be reduced, got ",
                     o.plan.reduced_dims);
  if (!visit_dtype<FloatTypes, IntTypes>(o.x.dtype, [&](auto tag) {
        using T = typename decltype(tag)::type;
        run_reduce(launch, o.plan, o.x.data, o.y.ptr<int64_t>(), ArgPolicy<T, kMax>{});
      })) {
    unsupported_dtype(o.x.dtype);
  }
}

void var_impl(const OpArgs& args, const Launch& launch) {
  const int64_t correction = sdk::attrs::var::read(args).correction;
  const ReduceOperands o(args);
  expect_dtype(o.y, o.x.dtype, "y");
  if (!visit_dtype<FloatTypes>(o.x.dtype, [&](auto tag) {
        using T = typename decltype(tag)::type;
        run_reduce(launch, o.plan, o.x.data, o.y.ptr<T>(), VarPolicy<T>{correction});
      })) {
    unsupported_dtype(o.x.dtype);
  }
}

bool same_in_out(const kiln_op_args* args) { return input_dtype(args, 0) == output_dtype(args, 0); }

int32_t supports_sum(void*, const kiln_op_args* args) {
  const kiln_dtype d = input_dtype(args, 0);
  return (is_float_dtype(d) || d == KILN_DTYPE_INT32 || d == KILN_DTYPE_INT64) && same_in_out(args);
}
int32_t supports_float(void*, const kiln_op_args* args) {
  return is_float_dtype(input_dtype(args, 0)) && same_in_out(args);
}
int32_t supports_extremum(void*, const kiln_op_args* args) {
  const kiln_dtype d = input_dtype(args, 0);
  return (is_float_dtype(d) || is_int_dtype(d)) && same_in_out(args);
}
int32_t supports_arg(void*, const kiln_op_args* args) {
  const kiln_dtype d = input_dtype(args, 0);
  return (is_float_dtype(d) || is_int_dtype(d)) && output_dtype(args, 0) == KILN_DTYPE_INT64;
}

constexpr uint32_t kStridedIn = KILN_KERNEL_STRIDED_INPUTS;

}  // namespace

void add_reduce_kernels(KernelList& list) {
  list.push_back(catalogue_entry<op::sum>(&simple_impl<SumPolicy, FloatTypes, SignedIntTypes>,
                                          &supports_sum, kStridedIn));
  list.push_back(catalogue_entry<op::prod>(&simple_impl<ProdPolicy, FloatTypes, SignedIntTypes>,
                                           &supports_sum, kStridedIn));
  list.push_back(
      catalogue_entry<op::mean>(&simple_impl<MeanPolicy, FloatTypes>, &supports_float, kStridedIn));
  list.push_back(catalogue_entry<op::amax>(&simple_impl<Amax, FloatTypes, IntTypes>,
                                           &supports_extremum, kStridedIn));
  list.push_back(catalogue_entry<op::amin>(&simple_impl<Amin, FloatTypes, IntTypes>,
                                           &supports_extremum, kStridedIn));
  list.push_back(catalogue_entry<op::argmax>(&arg_impl<true>, &supports_arg, kStridedIn));
  list.push_back(catalogue_entry<op::argmin>(&arg_impl<false>, &supports_arg, kStridedIn));
  list.push_back(catalogue_entry<op::var>(&var_impl, &supports_float, kStridedIn));
}

}  // namespace kiln::cuda
