// Reductions: sum, prod, mean, amax, amin, argmax, argmin, var.
//
// Accumulators (OPS.md): float32/float64 sums in float64, half types in float32,
// integers in 64 bits (wrapping, through unsigned arithmetic).
//
// Determinism: every result depends on the shape only, never on timing. No floating-
// point atomics: each output's elements are split into `slices` (a function of the
// shape) that are reduced in a fixed order, within a block by a fixed tree, and the
// slices' partial results are merged in slice order by a second kernel. The same sum
// twice gives the same bits.
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

// Mean; OutT is T for kiln.mean and the accumulator type for var's first pass.
template <class T, class OutT = T>
struct MeanPolicy : SumPolicy<T> {
  using Acc = sum_acc_t<T>;
  using Out = OutT;
  __device__ Out finish(const Acc& acc, int64_t n, int64_t) const {
    if (n == 0) return convert<Out>(quiet_nan<Acc>());
    return convert<Out>(acc / static_cast<Acc>(n));
  }
};

template <class T>
struct VarPolicy {
  using In = T;
  using Real = sum_acc_t<T>;
  struct Acc {
    Real mean;
    Real m2;
  };
  using Out = T;
  const Real* means;
  int64_t correction;
  __device__ Acc init(int64_t out) const { return {means[out], Real(0)}; }
  __device__ void step(Acc& acc, compute_t<T> x, int64_t) const {
    const Real d = static_cast<Real>(x) - acc.mean;
    acc.m2 += d * d;
  }
  __device__ void merge(Acc& a, const Acc& b) const { a.m2 += b.m2; }
  __device__ Out finish(const Acc& acc, int64_t n, int64_t) const {
    if (n - correction <= 0) return convert<Out>(quiet_nan<Real>());
    return convert<Out>(acc.m2 / static_cast<Real>(n - correction));
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

template <class P>
__device__ __forceinline__ void reduce_range(const ReduceArgs& a, const P& policy,
                                             typename P::Acc& acc, const typename P::In* base,
                                             int64_t begin, int64_t end, int64_t step) {
  const ReducePlan& p = a.plan;
  for (int64_t r = begin; r < end; r += step) {
    const int64_t offset = p.nr == 0 ? 0 : offset_in(r, p.nr, p.r_shape, p.r_stride);
    policy.step(acc, load(base[offset]), r);
  }
}

template <class P>
__device__ __forceinline__ const typename P::In* output_base(const ReduceArgs& a, int64_t out) {
  const ReducePlan& p = a.plan;
  const auto* x = reinterpret_cast<const typename P::In*>(a.x);
  return p.nk == 0 ? x : x + offset_in(out, p.nk, p.k_shape, p.k_stride);
}

// One block per (output, slice); item = output * slices + slice.
template <class P>
__global__ void __launch_bounds__(kThreads)
    reduce_block_kernel(const __grid_constant__ ReduceArgs a, const P policy,
                        typename P::Acc* partial, typename P::Out* y) {
  using Acc = typename P::Acc;
  __shared__ alignas(Acc) unsigned char raw[sizeof(Acc) * kThreads];
  Acc* shared = reinterpret_cast<Acc*>(raw);
  const int64_t items = a.plan.outputs * a.slices;
  const int tid = static_cast<int>(threadIdx.x);
  for (int64_t item = blockIdx.x; item < items; item += gridDim.x) {
    const int64_t out = item / a.slices;
    const int64_t slice = item - out * a.slices;
    const int64_t begin = slice * a.slice_len;
    const int64_t end = min(a.plan.n, begin + a.slice_len);
    Acc acc = policy.init(out);
    reduce_range(a, policy, acc, output_base<P>(a, out), begin + tid, end, blockDim.x);
    shared[tid] = acc;
    __syncthreads();
    for (int width = static_cast<int>(blockDim.x) / 2; width > 0; width /= 2) {
      if (tid < width) policy.merge(shared[tid], shared[tid + width]);
      __syncthreads();
    }
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
    reduce_range(a, policy, acc, output_base<P>(a, out), begin, end, 1);
    if (a.slices == 1)
      y[out] = policy.finish(acc, a.plan.n, out);
    else
      partial[out * a.slices + slice] = acc;
  }
}

// Merges each output's slices in slice order.
template <class P>
__global__ void __launch_bounds__(kThreads)
    reduce_merge_kernel(const typename P::Acc* partial, int64_t slices, int64_t outputs, int64_t n,
                        const P policy, typename P::Out* y) {
  for (int64_t out = global_thread(); out < outputs; out += grid_threads()) {
    typename P::Acc acc = partial[out * slices];
    for (int64_t s = 1; s < slices; ++s) policy.merge(acc, partial[out * slices + s]);
    y[out] = policy.finish(acc, n, out);
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
    slices = std::min(ceil_div(n, 8192), std::max<int64_t>(1, 1024 / plan.outputs));
  } else if (n > 0) {
    slices = std::min(ceil_div(n, 256), std::max<int64_t>(1, 16384 / plan.outputs));
  }
  slices = std::max<int64_t>(slices, 1);
  const int64_t slice_len = std::max<int64_t>(1, ceil_div(n, slices));
  slices = std::max<int64_t>(1, ceil_div(n, slice_len));

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
    reduce_block_kernel<P><<<blocks, threads, 0, stream>>>(args, policy, partial, y);
  } else {
    reduce_thread_kernel<P>
        <<<grid_for(items, launch), kThreads, 0, stream>>>(args, policy, partial, y);
  }
  if (slices > 1) {
    reduce_merge_kernel<P><<<grid_for(plan.outputs, launch), kThreads, 0, stream>>>(
        partial, slices, plan.outputs, n, policy, y);
  }
}

using sdk::ReduceOperands;  // x -> y and the plan, checked (kiln/sdk/reduce_plan.h)

template <template <class> class Policy, class... Lists>
void simple_impl(const OpArgs& args, const Launch& launch) {
  const ReduceOperands o(args);
  expect_dtype(o.y, o.x.dtype, "y");
  if (!dispatch<Lists...>(o.x.dtype, [&](auto tag) {
        using T = typename decltype(tag)::type;
        run_reduce(launch, o.plan, o.x.data, o.y.ptr<T>(), Policy<T>{});
      })) {
    unsupported_dtype(o.x.dtype);
  }
}

template <class T>
using Mean = MeanPolicy<T>;
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
  if (!dispatch<FloatTypes, IntTypes>(o.x.dtype, [&](auto tag) {
        using T = typename decltype(tag)::type;
        run_reduce(launch, o.plan, o.x.data, o.y.ptr<int64_t>(), ArgPolicy<T, kMax>{});
      })) {
    unsupported_dtype(o.x.dtype);
  }
}

void var_impl(const OpArgs& args, const Launch& launch) {
  const int64_t correction = args.attr_int("correction");
  const ReduceOperands o(args);
  expect_dtype(o.y, o.x.dtype, "y");
  if (!dispatch<FloatTypes>(o.x.dtype, [&](auto tag) {
        using T = typename decltype(tag)::type;
        using Real = sum_acc_t<T>;
        if (o.plan.outputs == 0) return;
        // Two passes, as OPS.md specifies: the means first, then squared deviations.
        auto* means =
            static_cast<Real*>(launch.scratch(static_cast<size_t>(o.plan.outputs) * sizeof(Real)));
        run_reduce(launch, o.plan, o.x.data, means, MeanPolicy<T, Real>{});
        run_reduce(launch, o.plan, o.x.data, o.y.ptr<T>(), VarPolicy<T>{means, correction});
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
  list.push_back(
      {"kiln.sum", &simple_impl<SumPolicy, FloatTypes, SignedIntTypes>, &supports_sum, kStridedIn});
  list.push_back({"kiln.prod", &simple_impl<ProdPolicy, FloatTypes, SignedIntTypes>, &supports_sum,
                  kStridedIn});
  list.push_back({"kiln.mean", &simple_impl<Mean, FloatTypes>, &supports_float, kStridedIn});
  list.push_back(
      {"kiln.amax", &simple_impl<Amax, FloatTypes, IntTypes>, &supports_extremum, kStridedIn});
  list.push_back(
      {"kiln.amin", &simple_impl<Amin, FloatTypes, IntTypes>, &supports_extremum, kStridedIn});
  list.push_back({"kiln.argmax", &arg_impl<true>, &supports_arg, kStridedIn});
  list.push_back({"kiln.argmin", &arg_impl<false>, &supports_arg, kStridedIn});
  list.push_back({"kiln.var", &var_impl, &supports_float, kStridedIn});
}

}  // namespace kiln::cuda
