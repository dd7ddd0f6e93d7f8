#pragma once
// Helpers shared by the op implementations: argument checks that produce Kiln's
// error messages, dimension wrapping, broadcasting and dtype conversion.

#include <string>

#include "core/tensor_impl.h"
#include "kiln/error.h"
#include "kiln/random.h"
#include "kiln/tensor.h"
#include "op_attrs.h"
#include "ops/dispatch.h"

namespace kiln::detail {

/// Wraps a possibly negative `dim` into [0, rank); throws naming `op`.
int64_t wrap_dim(int64_t dim, int64_t rank, const char* op);

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

/// `t` converted to `dtype` (itself when it already is).
Tensor cast(const Tensor& t, DType dtype);

/// A new contiguous tensor with `like`'s device.
Tensor empty_on(const Tensor& like, IntArrayRef shape, DType dtype);

/// A 0-d tensor holding `value` on `like`'s device.
Tensor scalar_on(const Tensor& like, Scalar value, DType dtype);

/// Reserves `n` elements of the global Philox stream: returns (seed, first offset).
GeneratorState reserve_random(int64_t n);

/// "[2, 3]" for messages.
std::string shape_str(IntArrayRef shape);

}  // namespace kiln::detail
