// kiln/sdk/loop_plan.h — how an elementwise op walks its operands, planned once for
// every plugin. A kernel's loops (threads, vector widths, a GPU grid) stay its own;
// what they walk is this plan:
//
//   1. size-1 dims dropped (a 0-d or all-size-1 tensor is one dim of size 1);
//   2. the output's strides made positive: a dim with a negative output stride is
//      walked backwards in every operand (harmless for elementwise work);
//   3. dims ordered by the output's stride, largest first;
//   4. neighbouring dims merged when they are contiguous with each other in every
//      operand, so contiguous operands of any rank become one flat dim.
//
// Operands are an output first and then inputs, all of the output's shape (the
// frontend passes broadcast inputs as stride-0 views: share/doc/kiln/OPS.md), which
// the caller checks first.
#ifndef KILN_SDK_LOOP_PLAN_H
#define KILN_SDK_LOOP_PLAN_H

#include <cstdint>
#include <utility>

#include "kiln/sdk/host_device.h"
#include "kiln/sdk/op_args.h"

namespace kiln::sdk {

/// Dims left after dropping size-1 dims (so at least 2^25 elements): never a limit in
/// practice.
inline constexpr int kMaxLoopDims = 25;

/// The plan for N operands. A plain struct: device code may take it by value.
template <int N>
struct LoopPlan {
  int ndim = 1;  ///< >= 1
  int64_t numel = 1;
  int64_t shape[kMaxLoopDims];
  int64_t strides[N][kMaxLoopDims];  ///< elements
  char* base[N];                     ///< each operand's first element, flips applied

  /// Every operand walks memory with stride 1 (or there is at most one element).
  KILN_HOST_DEVICE bool contiguous() const {
    if (numel <= 1) return true;
    if (ndim != 1) return false;
    for (int k = 0; k < N; ++k)
      if (strides[k][0] != 1) return false;
    return true;
  }
};

/// Fills `p` for operands `ops[0..N)` (ops[0] is the output). Throws UNSUPPORTED when
/// more than kMaxLoopDims dims of size > 1 remain. An empty output gives numel 0 and
/// nothing else.
template <int N>
void plan_loop(const TensorView* const (&ops)[N], LoopPlan<N>& p) {
  const TensorView& out = *ops[0];
  int nd = 0;
  p.numel = 1;
  for (int32_t d = 0; d < out.ndim; ++d) {
    const int64_t size = out.shape[d];
    if (size == 1) continue;
    if (size == 0) {
      p.numel = 0;
      return;
    }
    KILN_SDK_CHECK(nd < kMaxLoopDims, KILN_STATUS_UNSUPPORTED, "more than ", kMaxLoopDims,
                   " dims of size > 1");
    p.shape[nd] = size;
    for (int k = 0; k < N; ++k) p.strides[k][nd] = ops[k]->strides[d];
    p.numel *= size;
    ++nd;
  }
  for (int k = 0; k < N; ++k) p.base[k] = ops[k]->data;
  if (nd == 0) {
    p.ndim = 1;
    p.shape[0] = 1;
    for (int k = 0; k < N; ++k) p.strides[k][0] = 0;
    return;
  }
  for (int d = 0; d < nd; ++d) {
    if (p.strides[0][d] < 0) {
      for (int k = 0; k < N; ++k) {
        p.base[k] += p.strides[k][d] * (p.shape[d] - 1) * static_cast<int64_t>(ops[k]->itemsize);
        p.strides[k][d] = -p.strides[k][d];
      }
    }
  }
  // Insertion sort: nd is tiny and usually sorted already. Ties keep their order.
  for (int d = 1; d < nd; ++d) {
    for (int e = d; e > 0 && p.strides[0][e - 1] < p.strides[0][e]; --e) {
      std::swap(p.shape[e - 1], p.shape[e]);
      for (int k = 0; k < N; ++k) std::swap(p.strides[k][e - 1], p.strides[k][e]);
    }
  }
  // The outer kept dim absorbs dim d when stepping it equals stepping all of d.
  int kept = 0;
  for (int d = 0; d < nd; ++d) {
    bool mergeable = kept > 0;
    for (int k = 0; k < N && mergeable; ++k)
      mergeable = p.strides[k][kept - 1] == p.strides[k][d] * p.shape[d];
    if (mergeable) {
      p.shape[kept - 1] *= p.shape[d];
      for (int k = 0; k < N; ++k) p.strides[k][kept - 1] = p.strides[k][d];
    } else {
      p.shape[kept] = p.shape[d];
      for (int k = 0; k < N; ++k) p.strides[k][kept] = p.strides[k][d];
      ++kept;
    }
  }
  p.ndim = kept;
}

}  // namespace kiln::sdk

#endif  // KILN_SDK_LOOP_PLAN_H
