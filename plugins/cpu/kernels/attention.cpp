// kiln.scaled_dot_product_attention and its backward op: FlashAttention's scheme on
// the CPU, so memory grows with L + S, never with L·S.
//
// Forward: one task per block of kRows query rows of one (batch, head); it walks the
// keys kCols at a time, scores the block with one GEMM, keeps a running maximum and
// sum per row (the online softmax) and accumulates probabilities·v with a second GEMM,
// rescaling what it has when the maximum grows. It saves each row's log-sum-exp.
// Backward: one task per (batch, head); for each block of keys it recomputes the
// probabilities from the saved log-sum-exp, block by block of queries, and
// accumulates dV = Pᵀ·dO, dK = scale·dSᵀ·Q and dQ = scale·dS·K, where
// dS = P∘(dP − rowsum(dO∘O)) (five GEMMs per tile, as FlashAttention-2).
//
// Operands of any strides are read as dense matrices: directly when they already are
// (float32/float64 rows of unit stride), else from a packed copy in the compute type
// (half types compute in float32); the copies are the size of the inputs.
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "blas.h"
#include "dtype.h"
#include "kiln/sdk/attention.h"
#include "registry.h"

namespace kiln::cpu {

namespace {

constexpr int64_t kRows = 64;   // query rows per tile
constexpr int64_t kCols = 128;  // key rows per tile

using AttentionTypes = TypeList<float, double, float16, bfloat16>;

/// A dense row-major matrix in the compute type: element (i, j) at p[i * ld + j].
template <class C>
struct Matrix {
  const C* p;
  int64_t ld;
  const C* row(int64_t i) const { return p + i * ld; }
};

/// A 4-D strided operand's (b, h) planes as dense matrices of `rows` × `cols`:
/// the operand itself where its rows are dense in the compute type, else a packed copy.
template <class C, class T>
class Planes {
 public:
  Planes(const TensorView& t, int64_t heads, int64_t rows, int64_t cols)
      : t_(t), heads_(heads), rows_(rows), cols_(cols) {
    direct_ = std::is_same_v<C, T> && (cols <= 1 || t.strides[3] == 1) &&
              t.strides[2] >= std::max<int64_t>(cols, 1);
    if (direct_) return;
    const int64_t planes = t.shape[0] * heads;
    packed_.resize(static_cast<size_t>(planes * rows * cols));
    pool().parallel_for(0, planes, 1, [&](int64_t begin, int64_t end) {
      for (int64_t bh = begin; bh < end; ++bh) {
        const T* src = base(bh / heads_, bh % heads_);
        C* dst = packed_.data() + bh * rows_ * cols_;
        for (int64_t i = 0; i < rows_; ++i)
          for (int64_t j = 0; j < cols_; ++j)
            dst[i * cols_ + j] = static_cast<C>(load(src[i * t_.strides[2] + j * t_.strides[3]]));
      }
    });
  }

  Matrix<C> at(int64_t b, int64_t h) const {
    if (direct_) return {reinterpret_cast<const C*>(base(b, h)), t_.strides[2]};
    return {packed_.data() + (b * heads_ + h) * rows_ * cols_, std::max<int64_t>(cols_, 1)};
  }

 private:
  const T* base(int64_t b, int64_t h) const {
    return t_.ptr<const T>() + b * t_.strides[0] + h * t_.strides[1];
  }

  const TensorView& t_;
  int64_t heads_, rows_, cols_;
  bool direct_ = false;
  std::vector<C> packed_;
};

/// The additive mask of one (b, h) plane; `zero` when it adds nothing anywhere (the
/// frontend's broadcast zero for "no mask").
template <class T>
struct MaskPlane {
  const T* p;
  int64_t si, sj;
  bool zero;
};

template <class T>
MaskPlane<T> mask_plane(const TensorView& m, int64_t b, int64_t h) {
  const T* p = m.ptr<const T>() + b * m.strides[0] + h * m.strides[1];
  const bool broadcast_scalar =
      m.strides[0] == 0 && m.strides[1] == 0 && m.strides[2] == 0 && m.strides[3] == 0;
  const bool zero = m.numel() == 0 || (broadcast_scalar && static_cast<double>(load(p[0])) == 0.0);
  return {p, m.strides[2], m.strides[3], zero};
}

/// Adds the mask and the causal −∞ to `row`, the scores of query `i` against keys
/// [c0, c0 + n).
template <class C, class T>
void mask_row(C* row, const MaskPlane<T>& mask, bool causal, int64_t i, int64_t c0, int64_t n) {
  if (!mask.zero) {
    const T* m = mask.p + i * mask.si + c0 * mask.sj;
    for (int64_t j = 0; j < n; ++j) row[j] += static_cast<C>(load(m[j * mask.sj]));
  }
  if (causal) {
    const int64_t first_masked = std::max<int64_t>(0, i + 1 - c0);
    for (int64_t j = first_masked; j < n; ++j) row[j] = -std::numeric_limits<C>::infinity();
  }
}

/// Multiplies the probabilities of query `i` against keys [c0, c0 + n) by dropout's
/// keep/(1 − p), writing them to `out` (which may be `row`).
template <class C>
void drop_row(const C* row, C* out, const sdk::AttentionShape& s, int64_t bh, int64_t i, int64_t c0,
              int64_t n) {
  const C keep_scale = static_cast<C>(1.0 / (1.0 - s.dropout_p));
  const uint64_t first = static_cast<uint64_t>((bh * s.l + i) * s.s + c0);
  for (int64_t j = 0; j < n; ++j)
    out[j] = sdk::attention_keeps(s.seed, s.offset, first + static_cast<uint64_t>(j), s.dropout_p)
                 ? row[j] * keep_scale
                 : C(0);
}

// The order of the forward's tasks within one (b, h): row blocks from both ends in
// turn, so that the contiguous ranges parallel_for hands each thread mix the cheap
// and the costly blocks of a causal mask.
int64_t interleaved_block(int64_t t, int64_t blocks) {
  return t % 2 == 0 ? t / 2 : blocks - 1 - t / 2;
}

template <class T>
void attention_forward(const sdk::Attention& a) {
  using C = compute_t<T>;
  const sdk::AttentionShape& s = a.shape;
  const int64_t planes = s.b * s.h;
  if (planes == 0 || s.l == 0) return;
  T* out = a.out.ptr<T>();
  C* lse = a.lse.ptr<C>();
  if (s.s == 0) {  // no keys: softmax over nothing, times nothing (the composed result)
    std::fill(out, out + planes * s.l * s.ev, T(0.0f));
    std::fill(lse, lse + planes * s.l, -std::numeric_limits<C>::infinity());
    return;
  }
  const Planes<C, T> qs(a.q, s.h, s.l, s.e), ks(a.k, s.h, s.s, s.e), vs(a.v, s.h, s.s, s.ev);
  const int64_t blocks = (s.l + kRows - 1) / kRows;
  const C scale = static_cast<C>(s.scale);
  const int64_t ld_acc = std::max<int64_t>(s.ev, 1);  // BLAS wants leading dims ≥ 1
  pool().parallel_for(0, planes * blocks, 1, [&](int64_t begin, int64_t end) {
    std::vector<C> scores(kRows * kCols), acc(kRows * s.ev), max(kRows), sum(kRows);
    for (int64_t task = begin; task < end; ++task) {
      const int64_t bh = task / blocks, b = bh / s.h, h = bh % s.h;
      const int64_t r0 = interleaved_block(task % blocks, blocks) * kRows;
      const int64_t nr = std::min(kRows, s.l - r0);
      const Matrix<C> q = qs.at(b, h), k = ks.at(b, h), v = vs.at(b, h);
      const MaskPlane<T> mask = mask_plane<T>(a.mask, b, h);
      std::fill(acc.begin(), acc.end(), C(0));
      std::fill(max.begin(), max.end(), -std::numeric_limits<C>::infinity());
      std::fill(sum.begin(), sum.end(), C(0));
      // Keys past the block's last row are all masked under is_causal.
      const int64_t c_end = s.causal ? std::min(s.s, r0 + nr) : s.s;
      for (int64_t c0 = 0; c0 < c_end; c0 += kCols) {
        const int64_t nc = std::min(kCols, c_end - c0);
        gemm(false, true, nr, nc, s.e, scale, q.row(r0), q.ld, k.row(c0), k.ld, C(0), scores.data(),
             kCols);
        for (int64_t i = 0; i < nr; ++i) {
          C* row = scores.data() + i * kCols;
          mask_row(row, mask, s.causal, r0 + i, c0, nc);
          C block_max = -std::numeric_limits<C>::infinity();
          for (int64_t j = 0; j < nc; ++j) block_max = std::max(block_max, row[j]);
          const C new_max = std::max(max[i], block_max);
          // Exponents relative to a finite base, so that a row masked so far gives
          // zeros here rather than exp(−∞ + ∞).
          const C base = std::isinf(new_max) && new_max < 0 ? C(0) : new_max;
          const C rescale = std::exp(max[i] - base);
          C block_sum = 0;
          for (int64_t j = 0; j < nc; ++j) {
            row[j] = std::exp(row[j] - base);
            block_sum += row[j];
          }
          sum[i] = sum[i] * rescale + block_sum;
          max[i] = new_max;
          if (rescale != C(1)) {
            C* o = acc.data() + i * s.ev;
            for (int64_t j = 0; j < s.ev; ++j) o[j] *= rescale;
          }
          if (s.dropout_p > 0) drop_row(row, row, s, bh, r0 + i, c0, nc);
        }
        gemm(false, false, nr, s.ev, nc, C(1), scores.data(), kCols, v.row(c0), v.ld, C(1),
             acc.data(), ld_acc);
      }
      for (int64_t i = 0; i < nr; ++i) {
        // A row with every score −∞ has sum 0: 0·∞ gives NaN, as softmax gives.
        const C inv = C(1) / sum[i];
        T* o = out + (bh * s.l + r0 + i) * s.ev;
        for (int64_t j = 0; j < s.ev; ++j) o[j] = static_cast<T>(acc[i * s.ev + j] * inv);
        lse[bh * s.l + r0 + i] = max[i] + std::log(sum[i]);
      }
    }
  });
}

template <class T>
void attention_backward(const sdk::AttentionBackward& a) {
  using C = compute_t<T>;
  const sdk::AttentionShape& s = a.shape;
  const int64_t planes = s.b * s.h;
  T* grad_q = a.grad_q.ptr<T>();
  T* grad_k = a.grad_k.ptr<T>();
  T* grad_v = a.grad_v.ptr<T>();
  std::fill(grad_q, grad_q + planes * s.l * s.e, T(0.0f));
  std::fill(grad_k, grad_k + planes * s.s * s.e, T(0.0f));
  std::fill(grad_v, grad_v + planes * s.s * s.ev, T(0.0f));
  if (planes == 0 || s.l == 0 || s.s == 0) return;
  const Planes<C, T> qs(a.q, s.h, s.l, s.e), ks(a.k, s.h, s.s, s.e), vs(a.v, s.h, s.s, s.ev),
      gs(a.grad_out, s.h, s.l, s.ev), os(a.out, s.h, s.l, s.ev);
  const C* lse_all = a.lse.ptr<const C>();
  const C scale = static_cast<C>(s.scale);
  const bool dropout = s.dropout_p > 0;
  const int64_t ld_e = std::max<int64_t>(s.e, 1), ld_ev = std::max<int64_t>(s.ev, 1);
  pool().parallel_for(0, planes, 1, [&](int64_t begin, int64_t end) {
    std::vector<C> probs(kRows * kCols), dropped(dropout ? kRows * kCols : 0),
        dscores(kRows * kCols), dq(s.l * s.e), dk(kCols * s.e), dv(kCols * s.ev), delta(s.l);
    for (int64_t bh = begin; bh < end; ++bh) {
      const int64_t b = bh / s.h, h = bh % s.h;
      const Matrix<C> q = qs.at(b, h), k = ks.at(b, h), v = vs.at(b, h), g = gs.at(b, h),
                      o = os.at(b, h);
      const MaskPlane<T> mask = mask_plane<T>(a.mask, b, h);
      const C* lse = lse_all + bh * s.l;
      // delta_i = Σ_j P_ij·dP_ij = rowsum(dO ∘ O).
      for (int64_t i = 0; i < s.l; ++i) {
        C d = 0;
        for (int64_t j = 0; j < s.ev; ++j) d += g.row(i)[j] * o.row(i)[j];
        delta[i] = d;
      }
      std::fill(dq.begin(), dq.end(), C(0));
      for (int64_t c0 = 0; c0 < s.s; c0 += kCols) {
        const int64_t nc = std::min(kCols, s.s - c0);
        std::fill(dk.begin(), dk.end(), C(0));
        std::fill(dv.begin(), dv.end(), C(0));
        // Under is_causal, rows before key c0 see none of these keys.
        const int64_t r_begin = s.causal ? c0 / kRows * kRows : 0;
        for (int64_t r0 = r_begin; r0 < s.l; r0 += kRows) {
          const int64_t nr = std::min(kRows, s.l - r0);
          gemm(false, true, nr, nc, s.e, scale, q.row(r0), q.ld, k.row(c0), k.ld, C(0),
               probs.data(), kCols);
          for (int64_t i = 0; i < nr; ++i) {
            C* row = probs.data() + i * kCols;
            mask_row(row, mask, s.causal, r0 + i, c0, nc);
            for (int64_t j = 0; j < nc; ++j) row[j] = std::exp(row[j] - lse[r0 + i]);
            if (dropout) drop_row(row, dropped.data() + i * kCols, s, bh, r0 + i, c0, nc);
          }
          const C* used = dropout ? dropped.data() : probs.data();
          // dV += Pdropᵀ·dO; dPdrop = dO·Vᵀ.
          gemm(true, false, nc, s.ev, nr, C(1), used, kCols, g.row(r0), g.ld, C(1), dv.data(),
               ld_ev);
          gemm(false, true, nr, nc, s.ev, C(1), g.row(r0), g.ld, v.row(c0), v.ld, C(0),
               dscores.data(), kCols);
          for (int64_t i = 0; i < nr; ++i) {
            C* ds = dscores.data() + i * kCols;
            const C* p = probs.data() + i * kCols;
            // Through dropout: dP = dPdrop·keep/(1 − p), the same decisions.
            if (dropout) drop_row(ds, ds, s, bh, r0 + i, c0, nc);
            for (int64_t j = 0; j < nc; ++j) ds[j] = p[j] * (ds[j] - delta[r0 + i]);
          }
          gemm(false, false, nr, s.e, nc, scale, dscores.data(), kCols, k.row(c0), k.ld, C(1),
               dq.data() + r0 * s.e, ld_e);
          gemm(true, false, nc, s.e, nr, scale, dscores.data(), kCols, q.row(r0), q.ld, C(1),
               dk.data(), ld_e);
        }
        T* k_out = grad_k + (bh * s.s + c0) * s.e;
        T* v_out = grad_v + (bh * s.s + c0) * s.ev;
        for (int64_t i = 0; i < nc * s.e; ++i) k_out[i] = static_cast<T>(dk[i]);
        for (int64_t i = 0; i < nc * s.ev; ++i) v_out[i] = static_cast<T>(dv[i]);
      }
      T* q_out = grad_q + bh * s.l * s.e;
      for (int64_t i = 0; i < s.l * s.e; ++i) q_out[i] = static_cast<T>(dq[i]);
    }
  });
}

// Runs `body(tag)` for the operands' dtype, with BLAS serial (blas.h) and every GEMM
// size checked against BLAS's 32-bit ints.
template <class Operands, class Body>
void run_typed(const Operands& a, const Body& body) {
  const sdk::AttentionShape& s = a.shape;
  check_blas_dims({s.l, s.s, s.e, s.ev, std::max(s.e, s.ev) * kCols});
  SerialBlasScope serial;
  if (!visit_dtype<AttentionTypes>(a.q.dtype, body)) unsupported_dtype(a.q.dtype);
}

void attention_impl(const OpArgs& args) {
  const sdk::Attention a = sdk::attention_operands(args);
  run_typed(a, [&](auto tag) { attention_forward<typename decltype(tag)::type>(a); });
}

void attention_backward_impl(const OpArgs& args) {
  const sdk::AttentionBackward a = sdk::attention_backward_operands(args);
  run_typed(a, [&](auto tag) { attention_backward<typename decltype(tag)::type>(a); });
}

}  // namespace

void add_attention_kernels(KernelList& list) {
  list.push_back(catalogue_kernel<op::scaled_dot_product_attention>(&run_kernel<attention_impl>));
  list.push_back(catalogue_kernel<op::scaled_dot_product_attention_backward>(
      &run_kernel<attention_backward_impl>));
}

}  // namespace kiln::cpu
