// softmax and log_softmax along one dimension, with their gradients.

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

namespace {
Tensor softmax_impl(const Tensor& x, int64_t dim, bool log) {
  if (detail::autocast_on) {
    Tensor xc = x;
    if (detail::autocast_inputs(log ? OpId::log_softmax : OpId::softmax, {&xc}))
      return softmax_impl(xc, dim, log);
  }
  const char* name = log ? "log_softmax" : "softmax";
  detail::impl_of(x, name);
  KILN_CHECK(is_floating(x.dtype()), name, ": expected a floating-point input, got ", x.dtype());
  int64_t d = detail::wrap_dim(dim, x.dim(), name);
  // A 0-d tensor is a line of one: exp(x - x), so +-inf and NaN give NaN as in PyTorch,
  // and the gradient flows (it is 0).
  if (x.dim() == 0) return softmax_impl(x.reshape({1}), 0, log).reshape({});
  Tensor xc = x.contiguous();
  Tensor y = empty_like(xc);
  if (x.numel() == 0) return y;
  if (log)
    detail::dispatch(detail::attrs::log_softmax{.dim = d}, {xc.impl().get()}, {y.impl().get()});
  else
    detail::dispatch(detail::attrs::softmax{.dim = d}, {xc.impl().get()}, {y.impl().get()});
  if (ag::needs_grad({&x}))
    ag::record(
        log ? "LogSoftmaxBackward" : "SoftmaxBackward", y, {&x}, {y},
        [d, log](const Saved& s, const Tensor& g) -> Grads {
          Tensor gc = g.contiguous();
          Tensor dx = empty_like(s[0]);
          const detail::Operands in{gc.impl().get(), s[0].impl().get()};
          if (log)
            detail::dispatch(detail::attrs::log_softmax_backward{.dim = d}, in, {dx.impl().get()});
          else
            detail::dispatch(detail::attrs::softmax_backward{.dim = d}, in, {dx.impl().get()});
          return {dx};
        });
  return y;
}
}  // namespace

Tensor softmax(const Tensor& x, int64_t dim) { return softmax_impl(x, dim, false); }
Tensor log_softmax(const Tensor& x, int64_t dim) { return softmax_impl(x, dim, true); }

}  // namespace kiln::nn::functional
