#pragma once
// Complex tensors inside libkiln. A complex64/complex128 tensor stores (real, imaginary)
// pairs; the frontend computes with it through real views of those pairs, so the
// catalogue's real kernels do the arithmetic on every backend and autograd sees real ops
// (which gives PyTorch's convention for complex gradients: dL/d(re) + i dL/d(im)). Only
// the Fourier transforms send complex operands to a plugin.

#include <memory>
#include <span>

#include "core/tensor_impl.h"
#include "dispatch/complex_pairs.h"
#include "kiln/c_api.h"
#include "runtime/op_ids.h"

namespace kiln::detail {

/// Whether any operand is complex.
bool any_complex(std::initializer_list<const Tensor*> operands);

/// The complex spellings of the generated pointwise ops that have one (the entries
/// with "complex": true in api/ops.json): real operands are promoted to complex first.
Tensor complex_pointwise(OpId op, const char* name, const Tensor& a, const Tensor& b);
Tensor complex_pointwise(OpId op, const char* name, const Tensor& x);
/// self = op(self, other) for a complex self, not recorded by autograd (an operand that
/// requires grad is an error, as for every in-place op).
Tensor& complex_pointwise_inplace(OpId op, const char* name, Tensor& self, const Tensor& other);

/// sum and mean of a complex tensor.
Tensor complex_reduce(OpId op, const Tensor& x, IntArrayRef dims, bool keepdim);
/// matmul with a complex operand: four real products (two when one side is real).
Tensor complex_matmul(const Tensor& a, const Tensor& b);

}  // namespace kiln::detail
