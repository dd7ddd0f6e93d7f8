// matmul: torch.matmul's rank rules, batch broadcasting by stride-0 views, one
// batched kernel call.

#include "kiln/ops.h"
#include "ops/common.h"

namespace kiln {

Tensor matmul(const Tensor& a, const Tensor& b) {
  detail::check_same_device("matmul", {&a, &b});
  KILN_CHECK(a.dim() >= 1 && b.dim() >= 1, "matmul: both operands need at least 1 dimension, got "
             "shapes ", a.shape(), " and ", b.shape());
  DType dtype = promote_types(a.dtype(), b.dtype());
  KILN_CHECK(is_floating(dtype), "matmul: expected floating-point operands, got ", a.dtype(),
             " and ", b.dtype(), " (convert with .to(kiln::float32))");
  // 1-D operands become matrices and lose that dimension again at the end.
  Tensor a2 = a.dim() == 1 ? a.unsqueeze(0) : a;
  Tensor b2 = b.dim() == 1 ? b.unsqueeze(-1) : b;
  int64_t m = a2.size(-2), k = a2.size(-1), k2 = b2.size(-2), n = b2.size(-1);
  KILN_CHECK(k == k2, "matmul: shapes ", a.shape(), " and ", b.shape(),
             " cannot be multiplied (", k, " != ", k2, ")");
  IntArrayRef abatch(a2.shape().data(), a2.shape().size() - 2);
  IntArrayRef bbatch(b2.shape().data(), b2.shape().size() - 2);
  detail::SmallDims batch = detail::broadcast_shapes(abatch, bbatch, "matmul");

  detail::SmallDims ashape = batch, bshape = batch, oshape = batch;
  ashape.insert(ashape.end(), {m, k});
  bshape.insert(bshape.end(), {k, n});
  oshape.insert(oshape.end(), {m, n});
  Tensor ca = detail::expand_to(detail::cast(a2, dtype), ashape);
  Tensor cb = detail::expand_to(detail::cast(b2, dtype), bshape);
  Tensor out = detail::empty_on(a, oshape, dtype);
  detail::dispatch(detail::OpId::matmul, {ca.impl().get(), cb.impl().get()}, {out.impl().get()});

  if (a.dim() == 1 && b.dim() == 1) return out.view({});
  if (a.dim() == 1) return out.squeeze(-2);
  if (b.dim() == 1) return out.squeeze(-1);
  return out;
}

Tensor Tensor::matmul(const Tensor& other) const { return kiln::matmul(*this, other); }

}  // namespace kiln
