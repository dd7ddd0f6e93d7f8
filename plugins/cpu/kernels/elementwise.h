// kernels/elementwise.h — the loop engine behind every elementwise kernel.
//
// A kernel describes its operands (output first, then inputs, all of one shape, as
// OPS.md's same-rank broadcasting guarantees) and an "inner loop" functor; the engine
// does the rest:
//
//   1. drops size-1 dims, makes the output's strides positive (flipping a dim flips
//      it for every operand, which is harmless for elementwise work) and orders dims
//      by the output's strides, outermost first;
//   2. coalesces adjacent dims that are contiguous with each other in *every*
//      operand, so a contiguous tensor of any rank becomes one flat dim;
//   3. walks the outer dims with an index counter and calls
//      `inner(char *const ptrs[N], const int64_t strides[N], int64_t n)` once per run
//      of the innermost dim (strides in elements), where the functor picks a
//      contiguous, broadcast (stride 0) or general strided loop;
//   4. splits the flat range across the thread pool above kParallelGrain elements;
//      below it runs inline with no allocation, lock or pool traffic.
//
// Exact aliasing of the output with an input (the in-place ops OPS.md allows) is
// safe: every element is read before it is written, at the same index.
#ifndef KILN_CPU_KERNELS_ELEMENTWISE_H
#define KILN_CPU_KERNELS_ELEMENTWISE_H

#include <algorithm>
#include <cstdint>

#include "dtype.h"
#include "kiln/sdk/loop_plan.h"
#include "op_args.h"
#include "thread_pool.h"

namespace kiln::cpu {

using sdk::kMaxLoopDims;

/// Elements below which an elementwise op runs on the calling thread alone.
inline constexpr int64_t kParallelGrain = 32768;

/// The SDK's plan (kiln/sdk/loop_plan.h: steps 1 and 2 above) with byte strides.
template <int N>
struct LoopPlan : sdk::LoopPlan<N> {
  int64_t byte_strides[N][kMaxLoopDims];  // bytes
};

/// Builds the plan for operands `ops[0..N)` (ops[0] is the output; all share its
/// shape — callers check that first).
template <int N>
LoopPlan<N> make_loop_plan(const TensorView* const (&ops)[N]) {
  LoopPlan<N> p;
  sdk::plan_loop(ops, p);
  if (p.numel == 0) return p;
  for (int k = 0; k < N; ++k)
    for (int d = 0; d < p.ndim; ++d)
      p.byte_strides[k][d] = p.strides[k][d] * static_cast<int64_t>(ops[k]->itemsize);
  return p;
}

/// Runs `inner` over the flat (row-major, in plan order) element range [begin, end).
template <int N, class Inner>
void run_loop_range(const LoopPlan<N>& p, int64_t begin, int64_t end, const Inner& inner) {
  const int last = p.ndim - 1;
  int64_t index[kMaxLoopDims];
  char* ptrs[N];
  for (int k = 0; k < N; ++k) ptrs[k] = p.base[k];
  int64_t rest = begin;
  for (int d = last; d >= 0; --d) {
    index[d] = rest % p.shape[d];
    rest /= p.shape[d];
    for (int k = 0; k < N; ++k) ptrs[k] += index[d] * p.byte_strides[k][d];
  }
  int64_t inner_strides[N];
  for (int k = 0; k < N; ++k) inner_strides[k] = p.strides[k][last];

  while (begin < end) {
    const int64_t n = std::min(p.shape[last] - index[last], end - begin);
    inner(ptrs, inner_strides, n);
    begin += n;
    if (begin >= end) break;
    // The row is finished (n reached its end): rewind it and carry into outer dims.
    for (int k = 0; k < N; ++k) ptrs[k] -= index[last] * p.byte_strides[k][last];
    index[last] = 0;
    for (int d = last - 1; d >= 0; --d) {
      for (int k = 0; k < N; ++k) ptrs[k] += p.byte_strides[k][d];
      if (++index[d] < p.shape[d]) break;
      for (int k = 0; k < N; ++k) ptrs[k] -= p.shape[d] * p.byte_strides[k][d];
      index[d] = 0;
    }
  }
}

/// Runs the whole plan, in parallel when it has more than `grain` elements.
template <int N, class Inner>
void run_loop(const LoopPlan<N>& p, const Inner& inner, int64_t grain = kParallelGrain) {
  if (p.numel == 0) return;
  if (p.numel <= grain) {
    run_loop_range(p, 0, p.numel, inner);
    return;
  }
  pool().parallel_for(0, p.numel, grain,
                      [&](int64_t b, int64_t e) { run_loop_range(p, b, e, inner); });
}

/// The value stored for a computed `v` (rounds to half types, passes others through).
template <class Out, class V>
inline Out store(V v) {
  return convert<Out>(v);
}

/// y = op(x): `op` maps compute_t<In> to a value stored as Out.
template <class Out, class In, class Op>
struct UnaryLoop {
  Op op;

  void operator()(char* const* p, const int64_t* s, int64_t n) const {
    Out* y = reinterpret_cast<Out*>(p[0]);
    const In* x = reinterpret_cast<const In*>(p[1]);
    if (s[0] == 1 && s[1] == 1) {
      contiguous(y, x, n);
    } else if (s[1] == 0) {
      const Out v = store<Out>(op(load(x[0])));
      for (int64_t i = 0; i < n; ++i) y[i * s[0]] = v;
    } else {
      for (int64_t i = 0; i < n; ++i) y[i * s[0]] = store<Out>(op(load(x[i * s[1]])));
    }
  }
  // Kept to plain indexed pointer loops so g++ -O3 vectorizes it.
  void contiguous(Out* __restrict y, const In* __restrict x, int64_t n) const {
    for (int64_t i = 0; i < n; ++i) y[i] = store<Out>(op(load(x[i])));
  }
};

/// y = op(a, b) with contiguous, broadcast-a, broadcast-b and strided loops.
template <class Out, class In, class Op>
struct BinaryLoop {
  Op op;

  void operator()(char* const* p, const int64_t* s, int64_t n) const {
    Out* y = reinterpret_cast<Out*>(p[0]);
    const In* a = reinterpret_cast<const In*>(p[1]);
    const In* b = reinterpret_cast<const In*>(p[2]);
    if (s[0] == 1) {
      if (s[1] == 1 && s[2] == 1) return contiguous(y, a, b, n);
      if (s[1] == 0 && s[2] == 1) return scalar_a(y, load(a[0]), b, n);
      if (s[1] == 1 && s[2] == 0) return scalar_b(y, a, load(b[0]), n);
    }
    for (int64_t i = 0; i < n; ++i) {
      y[i * s[0]] = store<Out>(op(load(a[i * s[1]]), load(b[i * s[2]])));
    }
  }
  void contiguous(Out* __restrict y, const In* __restrict a, const In* __restrict b,
                  int64_t n) const {
    for (int64_t i = 0; i < n; ++i) y[i] = store<Out>(op(load(a[i]), load(b[i])));
  }
  void scalar_a(Out* __restrict y, compute_t<In> a, const In* __restrict b, int64_t n) const {
    for (int64_t i = 0; i < n; ++i) y[i] = store<Out>(op(a, load(b[i])));
  }
  void scalar_b(Out* __restrict y, const In* __restrict a, compute_t<In> b, int64_t n) const {
    for (int64_t i = 0; i < n; ++i) y[i] = store<Out>(op(load(a[i]), b));
  }
};

/// y = x converted to y's dtype, any strides: kiln.copy's loop (copy.cpp).
void copy_tensor(const TensorView& y, const TensorView& x);

}  // namespace kiln::cpu

#endif  // KILN_CPU_KERNELS_ELEMENTWISE_H
