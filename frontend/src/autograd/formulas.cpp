// Hand-written gradient helpers named by api/ops.json (autograd/formulas.h).

#include "autograd/formulas.h"

#include "kiln/ops.h"
#include "ops/common.h"

namespace kiln::detail::formulas {

Tensor relu_backward(const Tensor& grad, const Tensor& y) {
  Tensor dx = empty_on(y, y.shape(), y.dtype());
  Tensor g = cast(grad, y.dtype());
  dispatch(OpId::relu_backward, {g.impl().get(), y.impl().get()}, {dx.impl().get()});
  return dx;
}

namespace {

std::array<Tensor, 2> split_by(const Tensor& grad, const Tensor& wins, const Tensor& ties) {
  Tensor share = wins.to(grad.dtype()) + ties.to(grad.dtype()) * 0.5;
  return {grad * share, grad * (1.0 - share)};
}

}  // namespace

std::array<Tensor, 2> maximum_backward(const Tensor& grad, const Tensor& a, const Tensor& b) {
  return split_by(grad, a > b, a == b);
}

std::array<Tensor, 2> minimum_backward(const Tensor& grad, const Tensor& a, const Tensor& b) {
  return split_by(grad, a < b, a == b);
}

}  // namespace kiln::detail::formulas
