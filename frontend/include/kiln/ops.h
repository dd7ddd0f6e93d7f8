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
#include <tuple>
#include <vector>

#include "kiln/pointwise_ops.h"
#include "kiln/tensor.h"

namespace kiln {

// -- elementwise ------------------------------------------------------------------------
// The pointwise ops of the catalogue (share/doc/kiln/ops.json: neg, exp, sigmoid, add,
// pow, maximum, eq, atan2, ...) are declared in kiln/pointwise_ops.h, generated from
// it; these take attributes:
/// approximate: "none" (exact, erf) or "tanh".
Tensor gelu(const Tensor& x, const std::string& approximate = "none");
/// At least one bound must be given; a NaN element stays NaN and a NaN bound makes
/// every element NaN (as PyTorch). The result's dtype is PyTorch's: the bounds promote
/// like scalar operands, so an integer tensor with a floating bound (2.0 or 0.5) is
/// clamped in float32, an integer bound keeps it integral and is exact (int64 bounds
/// beyond 2^53 included). A bound its dtype cannot hold is an error (c10's checked
/// conversion), unless the other bound is NaN.
Tensor clamp(const Tensor& x, std::optional<Scalar> min, std::optional<Scalar> max);
/// `value` where `mask` (bool, broadcast to x's shape) is true, else x's element, in
/// x's dtype; differentiable in x (torch.masked_fill).
Tensor masked_fill(const Tensor& x, const Tensor& mask, Scalar value);
/// condition ? a : b, elementwise; `condition` must be bool.
Tensor where(const Tensor& condition, const Tensor& a, const Tensor& b);
Tensor where(const Tensor& condition, const Tensor& a, Scalar b);
Tensor where(const Tensor& condition, Scalar a, const Tensor& b);
/// Elementwise tests giving bool tensors (false / true everywhere for integer dtypes).
Tensor isnan(const Tensor& x);
Tensor isinf(const Tensor& x);
Tensor isfinite(const Tensor& x);
/// True when every element pair satisfies |a - b| <= atol + rtol * |b| (NaNs unequal).
bool allclose(const Tensor& a, const Tensor& b, double rtol = 1e-5, double atol = 1e-8);

// -- complex numbers -----------------------------------------------------------------
// complex64 and complex128 hold (real, imaginary) pairs of float32 or float64. add, sub,
// mul, div, neg, abs, sum, mean and matmul take them (a real operand is promoted);
// ops with no complex meaning (comparisons, max, relu, ...) refuse them. Gradients follow
// PyTorch's convention: a complex input's gradient is dL/d(re) + i·dL/d(im).
/// The pairs of complex `x` as a real view of shape [..., 2] (shares x's memory).
Tensor view_as_real(const Tensor& x);
/// The inverse view: float32/float64 [..., 2] with last stride 1 and even other strides.
Tensor view_as_complex(const Tensor& x);
/// The real or imaginary parts of complex `x` as views; real(x) of a real x is x.
Tensor real(const Tensor& x);
Tensor imag(const Tensor& x);
/// re + i·im, broadcast; both float32 or both float64.
Tensor complex(const Tensor& re, const Tensor& im);
/// abs·(cos(angle) + i·sin(angle)).
Tensor polar(const Tensor& abs, const Tensor& angle);
/// The complex conjugate, as a new tensor (Kiln has no lazy conjugate bit); a real x is
/// returned as it is.
Tensor conj(const Tensor& x);
/// The argument atan2(imag, real) in (-π, π]; for a real x, 0 or π (x < 0).
Tensor angle(const Tensor& x);

// -- reductions -----------------------------------------------------------------------
Tensor sum(const Tensor& x, IntArrayRef dims = {}, bool keepdim = false);
Tensor mean(const Tensor& x, IntArrayRef dims = {}, bool keepdim = false);
Tensor prod(const Tensor& x, IntArrayRef dims = {}, bool keepdim = false);
Tensor amax(const Tensor& x, IntArrayRef dims = {}, bool keepdim = false);
Tensor amin(const Tensor& x, IntArrayRef dims = {}, bool keepdim = false);
Tensor argmax(const Tensor& x, std::optional<int64_t> dim = std::nullopt, bool keepdim = false);
Tensor argmin(const Tensor& x, std::optional<int64_t> dim = std::nullopt, bool keepdim = false);
Tensor var(const Tensor& x, IntArrayRef dims = {}, int64_t correction = 1, bool keepdim = false);
/// Standard deviation: sqrt(var) with the same arguments.
Tensor std(const Tensor& x, IntArrayRef dims = {}, int64_t correction = 1, bool keepdim = false);
/// The vector p-norm over `dims` (every dim when empty) of a floating tensor: p = 2 by
/// default, p = 1, p = 0 (count of non-zeros), p = infinity (largest |x|), or any p > 0.
/// The p = 2 gradient is 0 where the norm is 0, as PyTorch's.
Tensor norm(const Tensor& x, double p = 2, IntArrayRef dims = {}, bool keepdim = false);
/// Whether any / every element over `dims` is non-zero (NaN counts as non-zero); bool.
/// The empty reduction gives false / true.
Tensor any(const Tensor& x, IntArrayRef dims = {}, bool keepdim = false);
Tensor all(const Tensor& x, IntArrayRef dims = {}, bool keepdim = false);

// -- linear algebra -------------------------------------------------------------------
/// torch.matmul: 1-D·1-D is a dot product, 2-D·2-D a matrix product, and higher
/// ranks are batched with broadcasting of the batch dimensions.
Tensor matmul(const Tensor& a, const Tensor& b);
/// Einstein summation, torch.einsum: "ij,jk->ik" (matmul), "bij,bjk->bik", "i,j->ij"
/// (outer), "ii->" (trace), "ij->ji", "...ij,jk->...ik" (batch dims broadcast as in
/// PyTorch; an output without "..." sums them); without "->" the output is the "..."
/// dims, then the labels used once, in alphabetical order. A label's sizes in different
/// operands broadcast (equal, or 1); within one operand they must be equal. Made of
/// matmul, sum, permute and index_select: differentiable.
Tensor einsum(const std::string& equation, const std::vector<Tensor>& operands);

/// How precise float32 matrix products (matmul and convolutions) must be, with
/// PyTorch's names: "highest" (full float32, the default), "high" (a backend may
/// round the operands to TF32 on tensor cores, accumulating in float32), "medium"
/// (bfloat16 rounding allowed too). Backends without such hardware ignore it. The
/// initial value comes from KILN_MATMUL_PRECISION. Throws kiln::Error for any other
/// name. Process-wide, like torch.set_float32_matmul_precision.
void set_matmul_precision(const std::string& precision);
std::string get_matmul_precision();

// -- joining and indexing ----------------------------------------------------------
/// Concatenates along `dim`; all shapes must agree elsewhere; dtypes are promoted. A 1-D
/// tensor of size 0 is skipped whatever the others' rank (PyTorch's legacy rule, for
/// `acc = cat({acc, x})` starting from an empty tensor); it still takes part in the dtype.
Tensor cat(const std::vector<Tensor>& tensors, int64_t dim = 0);
/// Joins along a new dimension `dim`; all shapes must be equal.
Tensor stack(const std::vector<Tensor>& tensors, int64_t dim = 0);
/// Picks the entries `index` (1-D, int64 or int32) along `dim`.
Tensor index_select(const Tensor& x, int64_t dim, const Tensor& index);
/// torch.gather: y[i][j] = x[index[i][j]][j] for dim 0, and so on.
Tensor gather(const Tensor& x, int64_t dim, const Tensor& index);
/// A copy of x with src's elements added at `index` along `dim`:
/// y[index[i][j]][j] += src[i][j] for dim 0 (torch.scatter_add). index and src have x's
/// rank; index may be smaller than src (the rest of src is unused). Deterministic.
Tensor scatter_add(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src);
/// A copy of x with src's elements written at `index` along `dim`: y[index[i][j]][j] =
/// src[i][j] for dim 0 (torch.scatter); shapes as scatter_add, src of x's dtype. A
/// position named twice by a tensor src is an error (one host read): PyTorch leaves
/// which value wins unspecified. A scalar may be written twice. Differentiable.
Tensor scatter(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src);
Tensor scatter(const Tensor& x, int64_t dim, const Tensor& index, Scalar value);
/// A copy of x with src's slice i added at position index[i] along `dim`
/// (torch.index_add); duplicates accumulate. Deterministic.
Tensor index_add(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src);

// -- sorting, scans and data-dependent selections -----------------------------------
/// Inclusive prefix sums along `dim`; integer and bool inputs give int64 (exact, in
/// 64 bits), floats keep their dtype (float32 adds in float64). Differentiable.
Tensor cumsum(const Tensor& x, int64_t dim);
/// A copy of x with source's first elements, in order, where mask (bool, broadcast to x)
/// is true (torch.masked_scatter); source has x's dtype and at least as many elements as
/// the mask selects (one host read checks it). Differentiable in x and source.
Tensor masked_scatter(const Tensor& x, const Tensor& mask, const Tensor& source);
/// Inclusive prefix products along `dim`, dtypes as cumsum (integers wrap in 64 bits).
/// Differentiable, zeros included (torch.cumprod's gradient).
Tensor cumprod(const Tensor& x, int64_t dim);
/// Sorted values along `dim` and their int64 positions in x. Stable both ways (equal
/// values keep their order); NaN sorts above every number, as PyTorch's stable sort.
/// Differentiable in the values.
std::tuple<Tensor, Tensor> sort(const Tensor& x, int64_t dim = -1, bool descending = false);
/// The positions of sort(x, dim, descending).
Tensor argsort(const Tensor& x, int64_t dim = -1, bool descending = false);
/// The k largest (or smallest) values along `dim`, sorted, and their positions; ties
/// keep x's order and NaN counts as the largest.
std::tuple<Tensor, Tensor> topk(const Tensor& x, int64_t k, int64_t dim = -1, bool largest = true);
// The next ones have an output size that depends on the data: each reads one count
// back to the host (one synchronisation, a profiler scope "<op>: read the count").
/// The coordinates of the non-zero elements, int64 [count, x.dim()], in row-major order.
Tensor nonzero(const Tensor& x);
/// Same as nonzero (numpy's name).
Tensor argwhere(const Tensor& x);
/// One-argument where: nonzero(condition) as one 1-D tensor per dimension.
std::vector<Tensor> where(const Tensor& condition);
/// The elements of x where the bool `mask` is true (the two broadcast together), as a
/// 1-D tensor in row-major order; differentiable in x.
Tensor masked_select(const Tensor& x, const Tensor& mask);
/// torch.unique(sorted=True, return_inverse=True, return_counts=True) of the flattened x:
/// the distinct values ascending (each NaN distinct), the slot of each element of x
/// (int64, x's shape), and how many elements each value has.
struct UniqueResult {
  Tensor values, inverse, counts;
};
UniqueResult unique(const Tensor& x);

// -- rearranging (copies, differentiable) ------------------------------------------
/// Reverses the order along each of `dims`.
Tensor flip(const Tensor& x, IntArrayRef dims);
/// Rotates by shifts[i] along dims[i]; without dims, the flattened tensor by one shift.
Tensor roll(const Tensor& x, IntArrayRef shifts, IntArrayRef dims = {});
/// torch.tile: repeats, with reps padded by leading 1s to x's rank (see Tensor::repeat).
Tensor tile(const Tensor& x, IntArrayRef reps);
/// The lower / upper triangle of the last two dims: elements with col - row <= k
/// (tril) or >= k (triu) kept, the rest zero.
Tensor tril(const Tensor& x, int64_t diagonal = 0);
Tensor triu(const Tensor& x, int64_t diagonal = 0);
/// A 1-D x becomes a square matrix with x on diagonal `diagonal`; a 2-D x gives that
/// diagonal as a 1-D copy (torch.diag).
Tensor diag(const Tensor& x, int64_t diagonal = 0);

}  // namespace kiln
