#pragma once
// Complex operands as real pairs: the view of a complex tensor as [..., 2] real
// components, and copy and fill with a complex operand made of real copies and fills
// (the dispatcher sends them here, so a plugin without complex kernels still copies).

#include <memory>
#include <span>

#include "core/tensor_impl.h"
#include "kiln/c_api.h"
#include "runtime/op_ids.h"

namespace kiln::detail {

/// The view of complex `t` as real pairs: shape [..., 2], real dtype.
std::shared_ptr<TensorImpl> pairs_impl(const TensorImpl& t);

/// copy and fill where an operand is complex, made of real copies and fills of the pairs'
/// components (the dispatcher sends them here). Casting complex to a real dtype is an
/// error: it would drop the imaginary part.
void complex_copy_or_fill(OpId op, std::span<const TensorImpl* const> inputs,
                          std::span<const TensorImpl* const> outputs,
                          std::span<const kiln_attr> attrs);

}  // namespace kiln::detail
