// kernels/reduce_engine.h — the loop engine behind every reduction.
//
// Input x (any strides) and output y (contiguous, same rank, reduced dims of size 1,
// as OPS.md fixes it). The engine splits x's dims into *kept* dims (y order) and
// *reduced* dims, drops size-1 dims and coalesces each group, then picks one of two
// layouts:
//
//  - rows:    the innermost x stride belongs to a reduced dim (sum over the last
//             dim, or over everything): each output reduces a run of memory; a
//             contiguous run uses 16 independent partial accumulators, which the
//             compiler vectorizes and which are combined in a fixed order.
//  - columns: the innermost x stride belongs to a kept dim (sum over dim 0 of a
//             row-major matrix): a block of up to kColumnBlock neighbouring outputs
//             is accumulated together, one reduced index at a time, so the inner
//             loop runs over contiguous memory into an accumulator array.
//
// Work is parallel over outputs (or column blocks). When there are few outputs and
// long reductions, each reduction is also cut into chunks of kReduceChunk elements
// whose partial results are merged in chunk order. Both decisions depend only on
// the shape, never on the thread count or timing, so a given shape and layout
// always gives bit-identical results.
//
// A policy P describes the reduction (see reduce.cpp):
//   using In, Acc, Out;                     storage in, accumulator, storage out
//   Acc init(int64_t out) const;            identity (may depend on the output)
//   void step(Acc&, compute_t<In> x, int64_t r) const;   r: index in the reduction
//   void merge(Acc& a, const Acc& b) const; b covers later elements than a
//   Out finish(const Acc&, int64_t n, int64_t out) const;
//   static constexpr bool kLanes;           step is order-insensitive enough for lanes
//   Acc lane_identity(const Acc& a) const;  a fresh partial for the same output
//   (optional) void reduce_contiguous(Acc&, const In* p, int64_t count) const;
//                                           a hand-shaped loop for stride-1 runs
#ifndef KILN_CPU_KERNELS_REDUCE_ENGINE_H
#define KILN_CPU_KERNELS_REDUCE_ENGINE_H

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <vector>

#include "elementwise.h"
#include "kiln/sdk/reduce_plan.h"

namespace kiln::cpu {

inline constexpr int64_t kReduceChunk = 16384;
// Outputs accumulated together in the column layout. Wide blocks keep each pass over
// a row long and contiguous (few TLB misses when rows are far apart); the block's
// accumulators live on the stack, capped at 16 KiB so that ops called from threads
// with small stacks stay safe.
inline constexpr int64_t kColumnBlockBytes = 16384;
template <class Acc>
inline constexpr int64_t kColumnBlock = std::min<int64_t>(2048, kColumnBlockBytes / sizeof(Acc));

// The plan every plugin shares (kiln/sdk/reduce_plan.h).
using sdk::make_reduce_plan;
using sdk::ReducePlan;

/// Element offset of flat index `flat` over dims [0, nd) with the given strides.
inline int64_t offset_of(int64_t flat, int nd, const int64_t* shape, const int64_t* stride) {
  int64_t offset = 0;
  for (int d = nd - 1; d >= 0; --d) {
    offset += (flat % shape[d]) * stride[d];
    flat /= shape[d];
  }
  return offset;
}

/// Calls fn(offset, first, count, stride) for each run of the innermost dim covering
/// flat indices [begin, end) of dims [0, nd); nd == 0 is one element at offset 0.
template <class Fn>
void for_each_run(int nd, const int64_t* shape, const int64_t* stride, int64_t begin, int64_t end,
                  const Fn& fn) {
  if (begin >= end) return;
  if (nd == 0) {
    fn(int64_t{0}, begin, int64_t{1}, int64_t{0});
    return;
  }
  const int last = nd - 1;
  int64_t index[kMaxLoopDims];
  int64_t offset = 0;
  int64_t rest = begin;
  for (int d = last; d >= 0; --d) {
    index[d] = rest % shape[d];
    rest /= shape[d];
    offset += index[d] * stride[d];
  }
  while (begin < end) {
    const int64_t count = std::min(shape[last] - index[last], end - begin);
    fn(offset, begin, count, stride[last]);
    begin += count;
    if (begin >= end) break;
    offset -= index[last] * stride[last];
    index[last] = 0;
    for (int d = last - 1; d >= 0; --d) {
      offset += stride[d];
      if (++index[d] < shape[d]) break;
      offset -= shape[d] * stride[d];
      index[d] = 0;
    }
  }
}

/// Folds a run of `count` elements (stride `stride`, reduction indices r0...) into acc.
template <class P>
void reduce_run(const P& policy, typename P::Acc& acc, const typename P::In* p, int64_t count,
                int64_t stride, int64_t r0) {
  using Acc = typename P::Acc;
  if constexpr (requires { policy.reduce_contiguous(acc, p, count); }) {
    if (stride == 1) {
      policy.reduce_contiguous(acc, p, count);
      return;
    }
  }
  if constexpr (P::kLanes) {
    // 16 independent partial sums: enough to hide the add latency of an SSE2 double
    // accumulator (four per register pair, latency ~4 cycles).
    constexpr int kLanes = 16;
    if (stride == 1 && count >= 4 * kLanes) {
      Acc lanes[kLanes];
      for (int j = 0; j < kLanes; ++j) lanes[j] = policy.lane_identity(acc);
      int64_t i = 0;
      for (; i + kLanes <= count; i += kLanes) {
        for (int j = 0; j < kLanes; ++j) policy.step(lanes[j], load(p[i + j]), r0 + i + j);
      }
      for (int j = 0; j < kLanes; ++j) policy.merge(acc, lanes[j]);
      for (; i < count; ++i) policy.step(acc, load(p[i]), r0 + i);
      return;
    }
  }
  for (int64_t i = 0; i < count; ++i) policy.step(acc, load(p[i * stride]), r0 + i);
}

/// Folds `width` neighbouring outputs' elements at p[j * stride] into acc[j].
template <class P>
void reduce_columns(const P& policy, typename P::Acc* acc, const typename P::In* p, int64_t width,
                    int64_t stride, int64_t r) {
  if (stride == 1) {
    for (int64_t j = 0; j < width; ++j) policy.step(acc[j], load(p[j]), r);
  } else {
    for (int64_t j = 0; j < width; ++j) policy.step(acc[j], load(p[j * stride]), r);
  }
}

/// Four consecutive reduction indices at once (rows p, p + row_stride, ...). Each
/// acc[j] still takes its elements in order, so the result equals four single-row
/// passes; reading four rows together gives the prefetcher four streams and cuts the
/// accumulator traffic by four.
template <class P>
void reduce_columns4(const P& policy, typename P::Acc* acc, const typename P::In* p, int64_t width,
                     int64_t row_stride, int64_t r) {
  const typename P::In *p0 = p, *p1 = p + row_stride, *p2 = p + 2 * row_stride,
                       *p3 = p + 3 * row_stride;
  for (int64_t j = 0; j < width; ++j) {
    typename P::Acc a = acc[j];
    policy.step(a, load(p0[j]), r);
    policy.step(a, load(p1[j]), r + 1);
    policy.step(a, load(p2[j]), r + 2);
    policy.step(a, load(p3[j]), r + 3);
    acc[j] = a;
  }
}

/// Runs the reduction described by `plan` from x into the contiguous y.
template <class P>
void run_reduce(const ReducePlan& plan, const typename P::In* x, typename P::Out* y,
                const P& policy) {
  using Acc = typename P::Acc;
  constexpr int64_t kBlock = kColumnBlock<Acc>;
  if (plan.outputs == 0) return;
  const int64_t n = plan.n;

  // Groups: one output (rows) or one block of up to kBlock outputs (columns).
  const int64_t row_length = plan.columns ? plan.k_shape[plan.nk - 1] : 1;
  const int64_t column_stride = plan.columns ? plan.k_stride[plan.nk - 1] : 0;
  const int64_t blocks_per_row = plan.columns ? (row_length + kBlock - 1) / kBlock : 1;
  const int64_t groups = plan.columns ? plan.outputs / row_length * blocks_per_row : plan.outputs;
  const int outer_kept = plan.columns ? plan.nk - 1 : plan.nk;

  struct Group {
    int64_t first_output;
    int64_t width;
    const typename P::In* base;  // x at (group's kept index, reduction index 0)
  };
  auto group_at = [&](int64_t g) {
    if (!plan.columns) {
      return Group{g, 1, x + offset_of(g, plan.nk, plan.k_shape, plan.k_stride)};
    }
    const int64_t row = g / blocks_per_row;
    const int64_t c0 = (g % blocks_per_row) * kBlock;
    return Group{row * row_length + c0, std::min(kBlock, row_length - c0),
                 x + offset_of(row, outer_kept, plan.k_shape, plan.k_stride) + c0 * column_stride};
  };
  // Folds reduction indices [rb, re) of group `grp` into acc[0..width).
  auto reduce_group = [&](const Group& grp, int64_t rb, int64_t re, Acc* acc) {
    for_each_run(plan.nr, plan.r_shape, plan.r_stride, rb, re,
                 [&](int64_t offset, int64_t first, int64_t count, int64_t stride) {
                   if (!plan.columns) {
                     reduce_run(policy, acc[0], grp.base + offset, count, stride, first);
                   } else {
                     int64_t t = 0;
                     if (column_stride == 1) {
                       for (; t + 4 <= count; t += 4) {
                         reduce_columns4(policy, acc, grp.base + offset + t * stride, grp.width,
                                         stride, first + t);
                       }
                     }
                     for (; t < count; ++t) {
                       reduce_columns(policy, acc, grp.base + offset + t * stride, grp.width,
                                      column_stride, first + t);
                     }
                   }
                 });
  };

  const int64_t width = plan.columns ? kBlock : 1;
  const int64_t work_per_group = std::max<int64_t>(1, width * n);
  const bool split = groups < 16 && n >= 2 * kReduceChunk;
  if (!split) {
    const int64_t grain = std::max<int64_t>(1, kParallelGrain / work_per_group);
    pool().parallel_for(0, groups, grain, [&](int64_t gb, int64_t ge) {
      Acc acc[kBlock];
      for (int64_t g = gb; g < ge; ++g) {
        const Group grp = group_at(g);
        for (int64_t j = 0; j < grp.width; ++j) acc[j] = policy.init(grp.first_output + j);
        reduce_group(grp, 0, n, acc);
        for (int64_t j = 0; j < grp.width; ++j) {
          y[grp.first_output + j] = policy.finish(acc[j], n, grp.first_output + j);
        }
      }
    });
    return;
  }

  const int64_t chunks = (n + kReduceChunk - 1) / kReduceChunk;
  std::vector<Acc> partial(static_cast<size_t>(groups * chunks * width));
  pool().parallel_for(0, groups * chunks, 1, [&](int64_t ib, int64_t ie) {
    for (int64_t item = ib; item < ie; ++item) {
      const int64_t g = item / chunks;
      const int64_t c = item % chunks;
      const Group grp = group_at(g);
      Acc* acc = &partial[static_cast<size_t>(item * width)];
      for (int64_t j = 0; j < grp.width; ++j) acc[j] = policy.init(grp.first_output + j);
      reduce_group(grp, c * kReduceChunk, std::min(n, (c + 1) * kReduceChunk), acc);
    }
  });
  for (int64_t g = 0; g < groups; ++g) {
    const Group grp = group_at(g);
    Acc* first = &partial[static_cast<size_t>(g * chunks * width)];
    for (int64_t c = 1; c < chunks; ++c) {
      const Acc* later = first + c * width;
      for (int64_t j = 0; j < grp.width; ++j) policy.merge(first[j], later[j]);
    }
    for (int64_t j = 0; j < grp.width; ++j) {
      y[grp.first_output + j] = policy.finish(first[j], n, grp.first_output + j);
    }
  }
}

}  // namespace kiln::cpu

#endif  // KILN_CPU_KERNELS_REDUCE_ENGINE_H
