// Complex operands as real pairs, below the ops (dispatch/complex_pairs.h).

#include "dispatch/complex_pairs.h"

#include "dispatch/dispatch.h"
#include "kiln/error.h"
#include "op_attrs.h"

namespace kiln::detail {

namespace {

// Component k (0 real, 1 imaginary) of complex `t` as a real view of t's shape.
std::shared_ptr<TensorImpl> component_impl(const TensorImpl& t, int64_t k) {
  auto impl = std::make_shared<TensorImpl>();
  impl->storage = t.storage;
  impl->shape = t.shape;
  for (int64_t s : t.strides) impl->strides.push_back(2 * s);
  impl->offset = 2 * t.offset + k;
  impl->numel = t.numel;
  impl->dtype = real_dtype(t.dtype);
  return impl;
}

}  // namespace

std::shared_ptr<TensorImpl> pairs_impl(const TensorImpl& t) {
  auto impl = component_impl(t, 0);
  impl->shape.push_back(2);
  impl->strides.push_back(1);
  impl->numel *= 2;
  return impl;
}

void complex_copy_or_fill(OpId op, std::span<const TensorImpl* const> inputs,
                          std::span<const TensorImpl* const> outputs,
                          std::span<const kiln_attr> attrs) {
  const TensorImpl& dst = *outputs[0];
  if (op == OpId::fill) {
    // A real value: the imaginary parts become 0.
    auto re = component_impl(dst, 0), im = component_impl(dst, 1);
    dispatch(op, {}, {re.get()}, attrs);
    dispatch(attrs::fill{.value = 0.0}, {}, {im.get()});
    return;
  }
  const TensorImpl& src = *inputs[0];
  KILN_CHECK(is_complex(dst.dtype), "copy: casting ", src.dtype, " to ", dst.dtype,
             " would drop the imaginary part; take real(x), imag(x) or abs(x) first");
  if (is_complex(src.dtype)) {
    auto from = pairs_impl(src), to = pairs_impl(dst);
    dispatch(OpId::copy, {from.get()}, {to.get()});
    return;
  }
  auto re = component_impl(dst, 0), im = component_impl(dst, 1);
  dispatch(OpId::copy, {&src}, {re.get()});
  dispatch(attrs::fill{.value = 0.0}, {}, {im.get()});
}

}  // namespace kiln::detail
