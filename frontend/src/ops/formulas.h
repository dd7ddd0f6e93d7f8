#pragma once
// Hand-written pieces of gradient formulas, for the catalogue entries that name them
// (api/ops.json's "gradient"): the generated ops (pointwise_ops.cpp in the build tree)
// call them by name, so a misspelt or missing helper fails the build.

#include <array>

#include "kiln/tensor.h"

namespace kiln::detail::formulas {

/// relu's input gradient: 0 where y <= 0, else grad (a NaN y passes grad, as PyTorch's
/// threshold_backward), in one fused kernel (kiln.relu_backward) instead of a
/// comparison, a bool tensor and a select.
Tensor relu_backward(const Tensor& grad, const Tensor& y);

/// The gradients of maximum(a, b) / minimum(a, b) for a and b: the larger (smaller)
/// operand takes the gradient, ties split it evenly, and where a or b is NaN both take
/// the whole gradient, as PyTorch 1.13 does.
std::array<Tensor, 2> maximum_backward(const Tensor& grad, const Tensor& a, const Tensor& b);
std::array<Tensor, 2> minimum_backward(const Tensor& grad, const Tensor& a, const Tensor& b);

/// The gradients of atan2(a, b): grad * b / (a² + b²) and grad * -a / (a² + b²), with
/// -a and a² of an integer operand taken in its own dtype as PyTorch 1.13 does (a uint8
/// one wraps around), and a bool one read as 0 or 1 instead of throwing.
std::array<Tensor, 2> atan2_backward(const Tensor& grad, const Tensor& a, const Tensor& b);

}  // namespace kiln::detail::formulas
