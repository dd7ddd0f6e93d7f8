#pragma once
// Helpers shared by the op implementations: argument checks that produce Kiln's
// error messages, dimension wrapping, broadcasting and dtype conversion.

#include <string>

#include "core/tensor_impl.h"
#include "dispatch/dispatch.h"
#include "kiln/error.h"
#include "kiln/random.h"
#include "kiln/tensor.h"
#include "op_attrs.h"

namespace kiln::detail {

/// Throws unless every defined tensor lives on the same device as the first.
void check_same_device(const char* op, std::initializer_list<const Tensor*> tensors);

/// NumPy broadcast of two shapes; throws "<op>: shapes [..] and [..] cannot be broadcast".
SmallDims broadcast_shapes(IntArrayRef a, IntArrayRef b, const char* op);

/// `t` viewed with shape `shape` (same rank or fewer dims, broadcastable): stride 0
/// for broadcast dims. Returns `t` itself when the shape already matches.
Tensor expand_to(const Tensor& t, IntArrayRef shape);

/// The optional `precision` attribute of kiln.matmul and the kiln.conv2d ops
/// (api/OPS.md), from kiln::set_matmul_precision.
const char* matmul_precision();

/// The dtype `a (op) b` is computed in, by PyTorch's rule: a 0-d tensor (a scalar
/// operand is one) takes part only when its category (bool < integer < floating <
/// complex) is above that of the other, dimensioned, operand: float16 × 0-d float32
/// stays float16, int32 + 0-d float64 is float64. Two 0-d or two dimensioned operands
/// promote as promote_types.
DType result_type(const Tensor& a, const Tensor& b);

/// `t` converted to `dtype` (itself when it already is).
Tensor cast(const Tensor& t, DType dtype);

/// A new contiguous tensor with `like`'s device.
Tensor empty_on(const Tensor& like, IntArrayRef shape, DType dtype);

/// Checks that every entry of the int64 `index` is in [0, size) for dimension `d`, with
/// one host read; for ops whose kernel, which checks otherwise, has nothing to copy.
void check_index_in_range(const Tensor& index, int64_t size, int64_t d, const char* op);

/// A 0-d tensor holding `value` on `like`'s device: an operand of `like (op) value`,
/// so an integer value wraps into an integer dtype (uint8 + (-3) subtracts 3).
Tensor scalar_on(const Tensor& like, Scalar value, DType dtype);

/// Writes `value` into every element of `t`, exactly for any int64. With `check`, a
/// value that does not fit t's dtype (300 into uint8, NaN or 1e300 into int64) throws
/// naming `name`, as PyTorch's fill_/full/masked_fill do; without, integers wrap.
void fill_with(Tensor& t, Scalar value, const char* name, bool check);

/// Reserves `n` elements of the global Philox stream: returns (seed, first offset).
GeneratorState reserve_random(int64_t n);

/// "[2, 3]" for messages.
std::string shape_str(IntArrayRef shape);

}  // namespace kiln::detail
