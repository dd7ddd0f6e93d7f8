#pragma once
/// @file ops.h
/// The op library as free functions (torch:: style). Binary ops broadcast with
/// NumPy rules and promote dtypes (see promote_types); every operand must be on
/// one device, or the op throws naming both devices.
///
/// @code
///   auto y = kiln::where(x > 0, x, 0.1 * x);                 // leaky relu
///   auto p = kiln::matmul(a, b.transpose(-1, -2));           // batched, broadcast
///   auto z = kiln::cat({x, y}, /*dim=*/1);
/// @endcode

#include <optional>
#include <string>
#include <vector>

#include "kiln/pointwise_ops.h"
#include "kiln/tensor.h"

namespace kiln {

// -- elementwise ------------------------------------------------------------------------
// The pointwise ops of api/ops.json (neg, exp, sigmoid, add, pow, maximum, eq, atan2, ...)
// are declared in kiln/pointwise_ops.h, generated from the catalogue; these take
// attributes:
/// approximate: "none" (exact, erf) or "tanh".
Tensor gelu(const Tensor& x, const std::string& approximate = "none");
/// At least one bound must be given; NaN stays NaN.
Tensor clamp(const Tensor& x, std::optional<double> min, std::optional<double> max);
/// `value` where `mask` (bool, broadcast to x's shape) is true, else x's element, in
/// x's dtype; differentiable in x (torch.masked_fill).
Tensor masked_fill(const Tensor& x, const Tensor& mask, Scalar value);
/// condition ? a : b, elementwise; `condition` must be bool.
Tensor where(const Tensor& condition, const Tensor& a, const Tensor& b);
Tensor where(const Tensor& condition, const Tensor& a, Scalar b);
Tensor where(const Tensor& condition, Scalar a, const Tensor& b);
/// True when every element pair satisfies |a - b| <= atol + rtol * |b| (NaNs unequal).
bool allclose(const Tensor& a, const Tensor& b, double rtol = 1e-5, double atol = 1e-8);

// -- reductions -----------------------------------------------------------------------
Tensor sum(const Tensor& x, IntArrayRef dims = {}, bool keepdim = false);
Tensor mean(const Tensor& x, IntArrayRef dims = {}, bool keepdim = false);
Tensor prod(const Tensor& x, IntArrayRef dims = {}, bool keepdim = false);
Tensor amax(const Tensor& x, IntArrayRef dims = {}, bool keepdim = false);
Tensor amin(const Tensor& x, IntArrayRef dims = {}, bool keepdim = false);
Tensor argmax(const Tensor& x, std::optional<int64_t> dim = std::nullopt, bool keepdim = false);
Tensor argmin(const Tensor& x, std::optional<int64_t> dim = std::nullopt, bool keepdim = false);
Tensor var(const Tensor& x, IntArrayRef dims = {}, int64_t correction = 1, bool keepdim = false);

// -- linear algebra -------------------------------------------------------------------
/// torch.matmul: 1-D·1-D is a dot product, 2-D·2-D a matrix product, and higher
/// ranks are batched with broadcasting of the batch dimensions.
Tensor matmul(const Tensor& a, const Tensor& b);

/// How precise float32 matrix products (matmul and convolutions) must be, with
/// PyTorch's names: "highest" (full float32, the default), "high" (a backend may
/// round the operands to TF32 on tensor cores, accumulating in float32), "medium"
/// (bfloat16 rounding allowed too). Backends without such hardware ignore it. The
/// initial value comes from KILN_MATMUL_PRECISION. Throws kiln::Error for any other
/// name. Process-wide, like torch.set_float32_matmul_precision.
void set_matmul_precision(const std::string& precision);
std::string get_matmul_precision();

// -- joining and indexing ----------------------------------------------------------
/// Concatenates along `dim`; all shapes must agree elsewhere; dtypes are promoted.
Tensor cat(const std::vector<Tensor>& tensors, int64_t dim = 0);
/// Joins along a new dimension `dim`; all shapes must be equal.
Tensor stack(const std::vector<Tensor>& tensors, int64_t dim = 0);
/// Picks the entries `index` (1-D, int64 or int32) along `dim`.
Tensor index_select(const Tensor& x, int64_t dim, const Tensor& index);
/// torch.gather: y[i][j] = x[index[i][j]][j] for dim 0, and so on.
Tensor gather(const Tensor& x, int64_t dim, const Tensor& index);

}  // namespace kiln
