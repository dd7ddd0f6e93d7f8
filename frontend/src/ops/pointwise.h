#pragma once
// The one implementation behind every pointwise op that cmake/opgen generates from
// api/ops.json (the generated functions call these): type promotion, broadcasting,
// output allocation, the in-place rules, then one dispatch.

#include <initializer_list>

#include "kiln/scalar.h"
#include "kiln/tensor.h"
#include "runtime/op_ids.h"

namespace kiln::detail {

/// How an op's operand dtypes become the dtype it computes in and its result dtype
/// (the catalogue entry's frontend.promote).
enum class Promote {
  Arith,    ///< promote; bool is refused; result = promoted
  Float,    ///< promote, then integers and bool to float32; result = that
  Compare,  ///< promote; result bool
  Logical,  ///< promote; result bool
};

/// y = op(x), in the dtype `promote` gives.
Tensor pointwise_unary(OpId op, const char* name, const Tensor& x, Promote promote,
                       std::span<const kiln_attr> attrs = {});

/// y = op(a, b), broadcast (NumPy rules), on a's device; throws naming both devices
/// when they differ.
Tensor pointwise_binary(OpId op, const char* name, const Tensor& a, const Tensor& b,
                        Promote promote);

/// self = op(self, other), computed and stored in self's dtype: other broadcasts to
/// self's shape; a result type self cannot hold, an expanded (overlapping) self, or a
/// self that autograd still needs is an error naming `name`.
Tensor& pointwise_inplace(OpId op, const char* name, Tensor& self, const Tensor& other,
                          Promote promote);

/// self = op(self) in self's dtype (x.exp_()): a result type self cannot hold, an
/// expanded (overlapping) self, or a self that autograd still needs is an error
/// naming `name`.
Tensor& pointwise_unary_inplace(OpId op, const char* name, Tensor& self, Promote promote,
                                std::span<const kiln_attr> attrs = {});

/// `s` as a 0-d tensor on `like`'s device, in the dtype PyTorch's scalar promotion
/// gives it next to `like` (an int scalar keeps a float tensor's dtype). For an op that
/// computes in float (Promote::Float: true division), a bool or integer operand of an
/// integer or bool tensor is float32, the dtype the op computes in, never the tensor's
/// (int32 0-d / -2^63 is -3.3e-19, not a division by the wrapped 0).
Tensor scalar_operand(const Tensor& like, Scalar s, const char* name,
                      Promote promote = Promote::Arith);

}  // namespace kiln::detail
