// Hand-written gradient helpers named by api/ops.json (ops/formulas.h).

#include "ops/formulas.h"

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

// PyTorch 1.13's rule: ties share the gradient equally, the smaller (larger) operand gets 0,
// and where either operand is NaN neither loses, so both get the whole gradient. masked_fill
// rather than a product keeps an inf or NaN gradient from leaking into the losing side.
std::array<Tensor, 2> split_by(const Tensor& grad, const Tensor& a_loses, const Tensor& b_loses,
                               const Tensor& ties) {
  Tensor shared = where(ties, grad * 0.5, grad);
  return {masked_fill(shared, a_loses, 0), masked_fill(shared, b_loses, 0)};
}

}  // namespace

std::array<Tensor, 2> maximum_backward(const Tensor& grad, const Tensor& a, const Tensor& b) {
  return split_by(grad, a<b, a> b, a == b);
}

std::array<Tensor, 2> minimum_backward(const Tensor& grad, const Tensor& a, const Tensor& b) {
  return split_by(grad, a > b, a < b, a == b);
}

std::array<Tensor, 2> atan2_backward(const Tensor& grad, const Tensor& a, const Tensor& b) {
  // Half types in float32, rounded once: a² + b² overflows float16 from 256 on.
  if (grad.dtype() == DType::Float16 || grad.dtype() == DType::BFloat16) {
    auto wide = [](const Tensor& t) { return is_floating(t.dtype()) ? t.to(DType::Float32) : t; };
    auto [da, db] = atan2_backward(grad.to(DType::Float32), wide(a), wide(b));
    return {da.to(grad.dtype()), db.to(grad.dtype())};
  }
  // PyTorch 1.13 squares and negates an integer operand in its own dtype, so a uint8 one
  // wraps around (-9 is 247, 200² is 64); a bool one squares to itself. Kiln has no uint8
  // or bool neg kernel: 0 - a wraps the same way, and a bool a is read as 0 or 1.
  auto square = [](const Tensor& t) { return t.dtype() == DType::Bool ? t : t * t; };
  Tensor minus_a = a.dtype() == DType::UInt8  ? 0 - a
                   : a.dtype() == DType::Bool ? -a.to(grad.dtype())
                                              : -a;
  Tensor squares = square(a) + square(b);
  return {grad * b / squares, grad * minus_a / squares};
}

}  // namespace kiln::detail::formulas
