// kiln/sdk/attention.h — the operands of kiln.scaled_dot_product_attention and its
// backward op, checked once for every plugin, and the dropout decision both share.
//
// q [B, H, L, E], k [B, H, S, E], v [B, H, S, Ev] and the additive mask [B, H, L, S]
// come with any strides (broadcast dims have stride 0); out, lse and the gradients are
// contiguous. The element (b, h, i, j) of a strided operand lives at
// `data + b·strides[0] + h·strides[1] + i·strides[2] + j·strides[3]` elements.
#ifndef KILN_SDK_ATTENTION_H
#define KILN_SDK_ATTENTION_H

#include <cstdint>

#include "kiln/sdk/host_device.h"
#include "kiln/sdk/op_args.h"
#include "kiln/sdk/op_attrs.h"
#include "kiln/sdk/philox.h"

namespace kiln::sdk {

/// The sizes and attributes both attention ops share.
struct AttentionShape {
  int64_t b, h, l, s, e, ev;
  double scale;
  bool causal;
  double dropout_p;
  uint64_t seed, offset;
};

/// Whether dropout keeps probability (b, h, i, j), whose row-major index in the
/// [B, H, L, S] matrix is `n`: kiln.dropout's rule on that matrix (Philox counter
/// offset + n/4, word n mod 4, kept iff its float32 uniform is ≥ p).
KILN_HOST_DEVICE inline bool attention_keeps(uint64_t seed, uint64_t offset, uint64_t n, double p) {
  const PhiloxBlock w = philox_block(seed, offset + n / 4);
  return static_cast<double>(unit_float_from_word(w.w[n % 4])) >= p;
}

namespace detail {

inline void expect_attention_operand(const TensorView& t, const char* name,
                                     std::initializer_list<int64_t> shape, kiln_dtype dtype) {
  expect_shape(t, shape, name);
  expect_dtype(t, dtype, name);
}

inline AttentionShape attention_shape(const OpArgs& args, const TensorView& q, const TensorView& k,
                                      const TensorView& v, const TensorView& mask) {
  KILN_SDK_CHECK_ARG(q.ndim == 4 && k.ndim == 4 && v.ndim == 4,
                     "q, k and v must be [B, H, L, E], [B, H, S, E], [B, H, S, Ev]; got ",
                     shape_string(q), ", ", shape_string(k), ", ", shape_string(v));
  const auto a = attrs::scaled_dot_product_attention::read(args);
  AttentionShape s{q.shape[0],
                   q.shape[1],
                   q.shape[2],
                   k.shape[2],
                   q.shape[3],
                   v.shape[3],
                   a.scale,
                   a.is_causal != 0,
                   a.dropout_p,
                   static_cast<uint64_t>(a.dropout_seed),
                   static_cast<uint64_t>(a.dropout_offset)};
  expect_attention_operand(k, "k", {s.b, s.h, s.s, s.e}, q.dtype);
  expect_attention_operand(v, "v", {s.b, s.h, s.s, s.ev}, q.dtype);
  expect_attention_operand(mask, "mask", {s.b, s.h, s.l, s.s}, q.dtype);
  KILN_SDK_CHECK_ARG(s.dropout_p >= 0 && s.dropout_p < 1, "dropout_p must be in [0, 1), got ",
                     s.dropout_p);
  KILN_SDK_CHECK_ARG(s.e > 0, "q and k need at least one feature (E = 0)");
  return s;
}

// lse's dtype: float32 for float32 and half inputs, float64 for float64.
inline kiln_dtype lse_dtype(kiln_dtype d) {
  return d == KILN_DTYPE_FLOAT64 ? KILN_DTYPE_FLOAT64 : KILN_DTYPE_FLOAT32;
}

inline void expect_contiguous_operand(const TensorView& t, const char* name,
                                      std::initializer_list<int64_t> shape, kiln_dtype dtype) {
  expect_shape(t, shape, name);
  expect_dtype(t, dtype, name);
  expect_contiguous(t, name);
}

}  // namespace detail

/// kiln.scaled_dot_product_attention: q, k, v, mask in; out, lse out.
struct Attention {
  TensorView q, k, v, mask, out, lse;
  AttentionShape shape;
};

inline Attention attention_operands(const OpArgs& args) {
  args.expect_counts(4, 2);
  Attention a{args.input(0),
              args.input(1),
              args.input(2),
              args.input(3),
              args.output(0),
              args.output(1),
              {}};
  a.shape = detail::attention_shape(args, a.q, a.k, a.v, a.mask);
  const AttentionShape& s = a.shape;
  detail::expect_contiguous_operand(a.out, "out", {s.b, s.h, s.l, s.ev}, a.q.dtype);
  detail::expect_contiguous_operand(a.lse, "lse", {s.b, s.h, s.l}, detail::lse_dtype(a.q.dtype));
  return a;
}

/// kiln.scaled_dot_product_attention_backward: grad_out, q, k, v, mask, out, lse in;
/// grad_q, grad_k, grad_v out.
struct AttentionBackward {
  TensorView grad_out, q, k, v, mask, out, lse, grad_q, grad_k, grad_v;
  AttentionShape shape;
};

inline AttentionBackward attention_backward_operands(const OpArgs& args) {
  args.expect_counts(7, 3);
  AttentionBackward a{args.input(0),
                      args.input(1),
                      args.input(2),
                      args.input(3),
                      args.input(4),
                      args.input(5),
                      args.input(6),
                      args.output(0),
                      args.output(1),
                      args.output(2),
                      {}};
  a.shape = detail::attention_shape(args, a.q, a.k, a.v, a.mask);
  const AttentionShape& s = a.shape;
  detail::expect_attention_operand(a.grad_out, "grad_out", {s.b, s.h, s.l, s.ev}, a.q.dtype);
  detail::expect_attention_operand(a.out, "out", {s.b, s.h, s.l, s.ev}, a.q.dtype);
  detail::expect_contiguous_operand(a.lse, "lse", {s.b, s.h, s.l}, detail::lse_dtype(a.q.dtype));
  detail::expect_contiguous_operand(a.grad_q, "grad_q", {s.b, s.h, s.l, s.e}, a.q.dtype);
  detail::expect_contiguous_operand(a.grad_k, "grad_k", {s.b, s.h, s.s, s.e}, a.q.dtype);
  detail::expect_contiguous_operand(a.grad_v, "grad_v", {s.b, s.h, s.s, s.ev}, a.q.dtype);
  return a;
}

}  // namespace kiln::sdk

#endif  // KILN_SDK_ATTENTION_H
