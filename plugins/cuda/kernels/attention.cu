// kiln.scaled_dot_product_attention and its backward op (staged: "op.attention",
// staged.h). Off, neither kernel is registered, so the frontend composes attention from
// the verified matmul and softmax kernels on the GPU instead of falling back to the CPU.
//
// A first, simple scheme, FlashAttention's arithmetic without its tiling: one warp per
// query row walks every key, holding its row of q and its output accumulator in
// registers (head dims up to kMaxHeadDim, 8 values per lane) with an online softmax, and
// writes the row's log-sum-exp. The backward op runs three kernels: rowsum(dO ∘ O) per
// query row; dQ, a warp per query row over the keys; dK and dV, a warp per key row over
// the queries; each recomputes the probabilities from the saved log-sum-exp, and the
// dropout decisions from (dropout_seed, dropout_offset) with sdk::attention_keeps, the
// CPU's rule. Sums are in a fixed order (deterministic). Half types compute in float32.
// Reads of k and v repeat across the warps of a head and rely on the L2 cache: the
// tiled kernel (shared-memory blocks of keys, tensor cores) and a cuDNN graph are the
// next step, chosen by the device check's comparison with PyTorch's SDPA.
#include <cmath>

#include "dnn_util.cuh"
#include "kernels/registry.h"
#include "kiln/sdk/attention.h"
#include "staged.h"

namespace kiln::cuda {

namespace {

using namespace dnn;

constexpr int kMaxHeadDim = 256;
constexpr int kPerLane = kMaxHeadDim / 32;
constexpr int kWarpsPerBlock = 8;

// A 4-D operand: base pointer and element strides.
template <class T>
struct Operand4 {
  const T* p;
  int64_t s0, s1, s2, s3;
  __device__ __forceinline__ T at(int64_t b, int64_t h, int64_t i, int64_t j) const {
    return p[b * s0 + h * s1 + i * s2 + j * s3];
  }
};

template <class T>
Operand4<T> operand4(const TensorView& t) {
  return {t.ptr<const T>(), t.strides[0], t.strides[1], t.strides[2], t.strides[3]};
}

// The shapes and attributes, and the operands every kernel reads. The mask is always
// added ("no mask" is the frontend's broadcast zero, one cached value).
template <class T>
struct Problem {
  Operand4<T> q, k, v, mask;
  sdk::AttentionShape s;
};

template <class T>
Problem<T> problem(const sdk::AttentionShape& s, const TensorView& q, const TensorView& k,
                   const TensorView& v, const TensorView& mask) {
  return {operand4<T>(q), operand4<T>(k), operand4<T>(v), operand4<T>(mask), s};
}

template <class C>
__device__ __forceinline__ C warp_all_sum(C v) {
  for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_xor_sync(0xffffffffu, v, offset);
  return v;
}

__device__ __forceinline__ float exp_c(float v) { return expf(v); }
__device__ __forceinline__ double exp_c(double v) { return exp(v); }
__device__ __forceinline__ float log_c(float v) { return logf(v); }
__device__ __forceinline__ double log_c(double v) { return log(v); }

// The score of query i against key j: scale·q_i·k_j + mask, −∞ above the diagonal
// under is_causal. `q` holds this lane's part of q_i.
template <class T, class C>
__device__ __forceinline__ C score(const Problem<T>& pr, const C (&q)[kPerLane], int64_t b,
                                   int64_t h, int64_t i, int64_t j, int lane) {
  C part = 0;
#pragma unroll
  for (int c = 0; c < kPerLane; ++c) {
    const int64_t d = lane + 32 * c;
    if (d < pr.s.e) part += q[c] * load(pr.k.at(b, h, j, d));
  }
  C s = warp_all_sum(part) * static_cast<C>(pr.s.scale) + load(pr.mask.at(b, h, i, j));
  if (pr.s.causal && j > i) s = -INFINITY;
  return s;
}

// keep/(1 − p) for probability (b·H + h, i, j), or 1 without dropout.
template <class C>
__device__ __forceinline__ C dropout_factor(const sdk::AttentionShape& s, int64_t bh, int64_t i,
                                            int64_t j) {
  if (s.dropout_p <= 0) return C(1);
  const uint64_t n = static_cast<uint64_t>((bh * s.l + i) * s.s + j);
  return sdk::attention_keeps(s.seed, s.offset, n, s.dropout_p)
             ? static_cast<C>(1.0 / (1.0 - s.dropout_p))
             : C(0);
}

template <class T, class C>
__device__ __forceinline__ void load_row(const Operand4<T>& t, int64_t b, int64_t h, int64_t i,
                                         int64_t width, int lane, C (&out)[kPerLane]) {
#pragma unroll
  for (int c = 0; c < kPerLane; ++c) {
    const int64_t d = lane + 32 * c;
    out[c] = d < width ? load(t.at(b, h, i, d)) : C(0);
  }
}

__device__ __forceinline__ int64_t warp_index() {
  return (static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) >> 5;
}
__device__ __forceinline__ int64_t warp_count() {
  return (static_cast<int64_t>(gridDim.x) * blockDim.x) >> 5;
}

template <class T>
__global__ void forward_kernel(Problem<T> pr, T* __restrict__ out, compute_t<T>* __restrict__ lse) {
  using C = compute_t<T>;
  const sdk::AttentionShape& s = pr.s;
  const int lane = threadIdx.x & 31;
  for (int64_t row = warp_index(); row < s.b * s.h * s.l; row += warp_count()) {
    const int64_t bh = row / s.l, i = row % s.l, b = bh / s.h, h = bh % s.h;
    C q[kPerLane], acc[kPerLane];
    load_row(pr.q, b, h, i, s.e, lane, q);
#pragma unroll
    for (int c = 0; c < kPerLane; ++c) acc[c] = 0;
    C max = -INFINITY, sum = 0;
    const int64_t end = s.causal ? (i + 1 < s.s ? i + 1 : s.s) : s.s;
    for (int64_t j = 0; j < end; ++j) {
      const C x = score(pr, q, b, h, i, j, lane);
      const C new_max = x > max ? x : max;  // a NaN score leaves the maximum (as the CPU)
      const C base = isinf(new_max) && new_max < 0 ? C(0) : new_max;
      const C rescale = exp_c(max - base), p = exp_c(x - base);
      sum = sum * rescale + p;
      max = new_max;
      const C weight = p * dropout_factor<C>(s, bh, i, j);
#pragma unroll
      for (int c = 0; c < kPerLane; ++c) {
        const int64_t d = lane + 32 * c;
        acc[c] = acc[c] * rescale + (d < s.ev ? weight * load(pr.v.at(b, h, j, d)) : C(0));
      }
    }
    // No keys: zeros (softmax over nothing, times nothing); a row of only −∞: NaN.
    const C inv = s.s == 0 ? C(0) : C(1) / sum;
#pragma unroll
    for (int c = 0; c < kPerLane; ++c) {
      const int64_t d = lane + 32 * c;
      if (d < s.ev) out[row * s.ev + d] = store<T>(s.s == 0 ? C(0) : acc[c] * inv);
    }
    if (lane == 0) lse[row] = s.s == 0 ? C(-INFINITY) : max + log_c(sum);
  }
}

// delta_i = rowsum(dO_i ∘ O_i).
template <class T>
__global__ void delta_kernel(Problem<T> pr, Operand4<T> grad_out, Operand4<T> out,
                             compute_t<T>* __restrict__ delta) {
  using C = compute_t<T>;
  const sdk::AttentionShape& s = pr.s;
  const int lane = threadIdx.x & 31;
  for (int64_t row = warp_index(); row < s.b * s.h * s.l; row += warp_count()) {
    const int64_t bh = row / s.l, i = row % s.l, b = bh / s.h, h = bh % s.h;
    C part = 0;
    for (int64_t d = lane; d < s.ev; d += 32)
      part += load(grad_out.at(b, h, i, d)) * load(out.at(b, h, i, d));
    part = warp_all_sum(part);
    if (lane == 0) delta[row] = part;
  }
}

// dQ_i = scale·Σ_j dS_ij·k_j, dS_ij = P_ij·(dP_ij − delta_i), dP_ij = (dO_i·v_j)·keep/(1 − p).
template <class T>
__global__ void grad_q_kernel(Problem<T> pr, Operand4<T> grad_out,
                              const compute_t<T>* __restrict__ lse,
                              const compute_t<T>* __restrict__ delta, T* __restrict__ grad_q) {
  using C = compute_t<T>;
  const sdk::AttentionShape& s = pr.s;
  const int lane = threadIdx.x & 31;
  for (int64_t row = warp_index(); row < s.b * s.h * s.l; row += warp_count()) {
    const int64_t bh = row / s.l, i = row % s.l, b = bh / s.h, h = bh % s.h;
    C q[kPerLane], g[kPerLane], dq[kPerLane];
    load_row(pr.q, b, h, i, s.e, lane, q);
    load_row(grad_out, b, h, i, s.ev, lane, g);
#pragma unroll
    for (int c = 0; c < kPerLane; ++c) dq[c] = 0;
    const int64_t end = s.causal ? (i + 1 < s.s ? i + 1 : s.s) : s.s;
    for (int64_t j = 0; j < end; ++j) {
      const C p = exp_c(score(pr, q, b, h, i, j, lane) - lse[row]);
      C part = 0;
#pragma unroll
      for (int c = 0; c < kPerLane; ++c) {
        const int64_t d = lane + 32 * c;
        if (d < s.ev) part += g[c] * load(pr.v.at(b, h, j, d));
      }
      const C dp = warp_all_sum(part) * dropout_factor<C>(s, bh, i, j);
      const C ds = p * (dp - delta[row]) * static_cast<C>(s.scale);
#pragma unroll
      for (int c = 0; c < kPerLane; ++c) {
        const int64_t d = lane + 32 * c;
        if (d < s.e) dq[c] += ds * load(pr.k.at(b, h, j, d));
      }
    }
#pragma unroll
    for (int c = 0; c < kPerLane; ++c) {
      const int64_t d = lane + 32 * c;
      if (d < s.e) grad_q[row * s.e + d] = store<T>(dq[c]);
    }
  }
}

// dV_j = Σ_i P_ij·keep/(1 − p)·dO_i and dK_j = scale·Σ_i dS_ij·q_i, a warp per key row.
template <class T>
__global__ void grad_kv_kernel(Problem<T> pr, Operand4<T> grad_out,
                               const compute_t<T>* __restrict__ lse,
                               const compute_t<T>* __restrict__ delta, T* __restrict__ grad_k,
                               T* __restrict__ grad_v) {
  using C = compute_t<T>;
  const sdk::AttentionShape& s = pr.s;
  const int lane = threadIdx.x & 31;
  for (int64_t key = warp_index(); key < s.b * s.h * s.s; key += warp_count()) {
    const int64_t bh = key / s.s, j = key % s.s, b = bh / s.h, h = bh % s.h;
    C v[kPerLane], dk[kPerLane], dv[kPerLane];
    load_row(pr.v, b, h, j, s.ev, lane, v);
#pragma unroll
    for (int c = 0; c < kPerLane; ++c) dk[c] = dv[c] = 0;
    for (int64_t i = s.causal ? j : 0; i < s.l; ++i) {
      C q[kPerLane], g[kPerLane];
      load_row(pr.q, b, h, i, s.e, lane, q);
      load_row(grad_out, b, h, i, s.ev, lane, g);
      const int64_t row = bh * s.l + i;
      const C p = exp_c(score(pr, q, b, h, i, j, lane) - lse[row]);
      const C keep = dropout_factor<C>(s, bh, i, j);
      C part = 0;
#pragma unroll
      for (int c = 0; c < kPerLane; ++c) part += g[c] * v[c];
      const C ds = p * (warp_all_sum(part) * keep - delta[row]) * static_cast<C>(s.scale);
#pragma unroll
      for (int c = 0; c < kPerLane; ++c) {
        dv[c] += p * keep * g[c];
        dk[c] += ds * q[c];
      }
    }
#pragma unroll
    for (int c = 0; c < kPerLane; ++c) {
      const int64_t d = lane + 32 * c;
      if (d < s.e) grad_k[key * s.e + d] = store<T>(dk[c]);
      if (d < s.ev) grad_v[key * s.ev + d] = store<T>(dv[c]);
    }
  }
}

unsigned warp_blocks(int64_t rows, const Launch& l) {
  const int64_t wanted = (rows + kWarpsPerBlock - 1) / kWarpsPerBlock;
  const int64_t cap = static_cast<int64_t>(std::max(1, l.multiprocessor_count())) * 64;
  return static_cast<unsigned>(std::max<int64_t>(1, std::min(wanted, cap)));
}

void attention_impl(const OpArgs& args, const Launch& l) {
  const sdk::Attention a = sdk::attention_operands(args);
  const sdk::AttentionShape& s = a.shape;
  if (s.b * s.h * s.l == 0) return;
  if (!visit_float(a.q.dtype, [&](auto tag) {
        using T = typename decltype(tag)::type;
        const Problem<T> pr = problem<T>(s, a.q, a.k, a.v, a.mask);
        forward_kernel<T><<<warp_blocks(s.b * s.h * s.l, l), 32 * kWarpsPerBlock, 0, l.stream()>>>(
            pr, a.out.ptr<T>(), a.lse.ptr<compute_t<T>>());
      }))
    sdk::unsupported_dtype(a.q.dtype);
  check_launch("scaled_dot_product_attention");
}

void attention_backward_impl(const OpArgs& args, const Launch& l) {
  const sdk::AttentionBackward a = sdk::attention_backward_operands(args);
  const sdk::AttentionShape& s = a.shape;
  const int64_t rows = s.b * s.h * s.l, keys = s.b * s.h * s.s;
  if (!visit_float(a.q.dtype, [&](auto tag) {
        using T = typename decltype(tag)::type;
        using C = compute_t<T>;
        const Problem<T> pr = problem<T>(s, a.q, a.k, a.v, a.mask);
        const Operand4<T> g = operand4<T>(a.grad_out), o = operand4<T>(a.out);
        const C* lse = a.lse.ptr<const C>();
        // Every output element is written by exactly one warp, except where L or S is 0.
        if (rows == 0 || keys == 0) {
          for (const TensorView* t : {&a.grad_q, &a.grad_k, &a.grad_v})
            check(cudaMemsetAsync(t->data, 0, static_cast<size_t>(t->numel()) * sizeof(T),
                                  l.stream()),
                  "scaled_dot_product_attention_backward");
          return;
        }
        C* delta = static_cast<C*>(l.scratch(static_cast<size_t>(rows) * sizeof(C)));
        const int threads = 32 * kWarpsPerBlock;
        delta_kernel<T><<<warp_blocks(rows, l), threads, 0, l.stream()>>>(pr, g, o, delta);
        grad_q_kernel<T><<<warp_blocks(rows, l), threads, 0, l.stream()>>>(pr, g, lse, delta,
                                                                           a.grad_q.ptr<T>());
        grad_kv_kernel<T><<<warp_blocks(keys, l), threads, 0, l.stream()>>>(
            pr, g, lse, delta, a.grad_k.ptr<T>(), a.grad_v.ptr<T>());
      }))
    sdk::unsupported_dtype(a.q.dtype);
  check_launch("scaled_dot_product_attention_backward");
}

// The catalogue's dtypes, 4-D operands and head dims up to kMaxHeadDim.
template <const sdk::CatalogueOp& Op, size_t kQ, size_t kV>
int32_t supports_attention(void* context, const kiln_op_args* args) noexcept {
  if (!sdk::supports_catalogue_dtypes<Op>(context, args)) return 0;
  try {
    const OpArgs a(args);
    const TensorView q = a.input(kQ), v = a.input(kV);
    return q.ndim == 4 && v.ndim == 4 && q.shape[3] <= kMaxHeadDim && v.shape[3] <= kMaxHeadDim;
  } catch (...) {
    return 0;
  }
}

}  // namespace

void add_attention_kernels(KernelList& list) {
  // Off: no kernel at all, so the frontend composes attention on the GPU (a declining
  // supports() would send it to the CPU fallback instead).
  if (!staged_on(kStagedAttention)) return;
  list.push_back(catalogue_entry<op::scaled_dot_product_attention>(
      &attention_impl, &supports_attention<op::scaled_dot_product_attention, 0, 2>,
      KILN_KERNEL_STRIDED_INPUTS));
  list.push_back(catalogue_entry<op::scaled_dot_product_attention_backward>(
      &attention_backward_impl,
      &supports_attention<op::scaled_dot_product_attention_backward, 1, 3>,
      KILN_KERNEL_STRIDED_INPUTS));
}

}  // namespace kiln::cuda
