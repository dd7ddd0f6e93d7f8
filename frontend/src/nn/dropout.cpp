// dropout, with the Philox stream shared by every device.

#include "autograd/record.h"
#include "kiln/autograd.h"
#include "kiln/nn/functional.h"
#include "kiln/ops.h"
#include "ops/common.h"

namespace kiln::nn::functional {

using detail::OpId;
namespace ag = detail::autograd_impl;
using Grads = std::vector<Tensor>;
using Saved = std::vector<Tensor>;

Tensor dropout(const Tensor& x, double p, bool training) {
  detail::impl_of(x, "dropout");
  KILN_CHECK(p >= 0 && p <= 1, "dropout: p must be in [0, 1], got ", p);
  if (!training || p == 0) return x;
  if (p == 1) return x * 0.0;
  KILN_CHECK(is_floating(x.dtype()), "dropout: expected a floating-point input, got ", x.dtype());
  Tensor xc = x.contiguous();
  Tensor y = empty_like(xc);
  Tensor mask = detail::empty_on(x, x.shape(), DType::UInt8);
  GeneratorState state = detail::reserve_random(x.numel());
  detail::dispatch(detail::attrs::dropout{.p = p,
                                          .seed = static_cast<int64_t>(state.seed),
                                          .offset = static_cast<int64_t>(state.offset)},
                   {xc.impl().get()}, {y.impl().get(), mask.impl().get()});
  if (ag::needs_grad({&x}))
    ag::record("DropoutBackward", y, {&x}, {mask},
               [scale = 1.0 / (1.0 - p)](const Saved& s, const Tensor& g) -> Grads {
                 return {g * s[0].to(g.dtype()) * scale};
               });
  return y;
}

}  // namespace kiln::nn::functional
