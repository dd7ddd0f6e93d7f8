// linear and embedding: the layers defined by a weight matrix.

#include "autograd/record.h"
#include "dispatch/autocast.h"
#include "kiln/autograd.h"
#include "kiln/nn/functional.h"
#include "kiln/ops.h"
#include "ops/common.h"

namespace kiln::nn::functional {

using detail::OpId;
namespace ag = detail::autograd_impl;
using Grads = std::vector<Tensor>;
using Saved = std::vector<Tensor>;

Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias) {
  if (detail::autocast_on) {  // matmul's policy for the whole layer, bias included
    Tensor xc = x, wc = weight, bc = bias;
    if (detail::autocast_inputs(OpId::matmul, {&xc, &wc, &bc})) return linear(xc, wc, bc);
  }
  detail::impl_of(x, "linear");
  KILN_CHECK(weight.defined() && weight.dim() == 2, "linear: expected a 2-D weight [out, in], got ",
             weight.defined() ? detail::shape_str(weight.shape()) : std::string("undefined"));
  KILN_CHECK(x.dim() >= 1 && x.size(-1) == weight.size(1), "linear: input of shape ", x.shape(),
             " does not match weight ", weight.shape(), " (", x.dim() ? x.size(-1) : 0,
             " != ", weight.size(1), ")");
  if (bias.defined() && bias.dim() != 1) {
    // Anything but a [out] bias keeps the plain composition (and its broadcasting).
    Tensor y = matmul(x, weight.t());
    return y + bias;
  }
  // One node for the whole layer rather than matmul's, the transpose view's and the
  // add's: the weight gradient comes out as g^T·x, already [out, in] and contiguous
  // (matmul's node would produce the transposed view's gradient, [in, out], which
  // then has to be copied into place), and the bias gradient is one reduction.
  const bool record = ag::needs_grad({&x, &weight, &bias});
  Tensor y;
  {
    NoGradGuard no_grad;
    y = matmul(x, weight.t());
    if (bias.defined()) {
      // y is fresh: add in place when the result type allows, saving a tensor.
      if (promote_types(y.dtype(), bias.dtype()) == y.dtype())
        y.add_(bias);
      else
        y = y + bias;
    }
  }
  if (!record) return y;
  const bool gx = ag::requires_grad(x), gw = ag::requires_grad(weight),
             gb = ag::requires_grad(bias);
  const int64_t in = weight.size(1), out = weight.size(0);
  int64_t rows = 1;  // x as [rows, in], y as [rows, out]
  for (int64_t d = 0; d + 1 < x.dim(); ++d) rows *= x.size(d);
  ag::record("LinearBackward", y, {&x, &weight, &bias}, {gw ? x : Tensor(), gx ? weight : Tensor()},
             [=, x_shape = x.shape().vec(),
              b_shape = bias.defined() ? bias.shape().vec() : std::vector<int64_t>{}](
                 const Saved& s, const Tensor& g) -> Grads {
               Tensor g2 = g.reshape({rows, out});
               Grads grads(3);
               if (gx) grads[0] = matmul(g2, s[1]).reshape(x_shape);
               if (gw) grads[1] = matmul(g2.t(), s[0].reshape({rows, in}));
               if (gb) grads[2] = ag::sum_to(g, b_shape);
               return grads;
             });
  return y;
}

Tensor embedding(const Tensor& indices, const Tensor& weight) {
  detail::impl_of(indices, "embedding");
  detail::impl_of(weight, "embedding");
  KILN_CHECK(weight.dim() == 2, "embedding: expected a 2-D weight [num_embeddings, dim], got ",
             weight.shape());
  KILN_CHECK(indices.dtype() == DType::Int64 || indices.dtype() == DType::Int32,
             "embedding: indices must be int64 or int32, got ", indices.dtype());
  std::vector<int64_t> shape = indices.shape().vec();
  shape.push_back(weight.size(1));
  return index_select(weight, 0, indices.reshape({-1})).reshape(shape);
}

}  // namespace kiln::nn::functional
