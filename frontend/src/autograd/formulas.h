#pragma once
// Hand-written pieces of gradient formulas, for the catalogue entries that name them
// (api/ops.json's "gradient"): the generated ops (pointwise_ops.cpp in the build tree)
// call them by name, so a misspelt or missing helper fails the build.

#include <array>

#include "kiln/tensor.h"

namespace kiln::detail::formulas {

/// relu's input gradient: grad where y > 0, else 0, in one fused kernel
/// (kiln.relu_backward) instead of a comparison, a bool tensor and a select.
Tensor relu_backward(const Tensor& grad, const Tensor& y);

/// The gradients of maximum(a, b) / minimum(a, b) for a and b: the larger (smaller)
/// operand takes the gradient, and ties split it evenly, as PyTorch does.
std::array<Tensor, 2> maximum_backward(const Tensor& grad, const Tensor& a, const Tensor& b);
std::array<Tensor, 2> minimum_backward(const Tensor& grad, const Tensor& a, const Tensor& b);

}  // namespace kiln::detail::formulas
