#include "ops/common.h"

#include <sstream>

#include "runtime/registry.h"

namespace kiln::detail {

void check_same_device(const char* op, std::initializer_list<const Tensor*> tensors) {
  const TensorImpl* first = nullptr;
  for (const Tensor* t : tensors) {
    const TensorImpl& impl = impl_of(*t, op);
    if (!first) {
      first = &impl;
    } else if (impl.device() != first->device()) {
      KILN_FAIL(op, ": expected all tensors on one device, but got ", first->device()->name(),
                " and ", impl.device()->name(), " (move one with .to(device))");
    }
  }
}

std::string shape_str(IntArrayRef shape) {
  std::ostringstream out;
  out << shape;
  return out.str();
}

SmallDims broadcast_shapes(IntArrayRef a, IntArrayRef b, const char* op) {
  size_t n = std::max(a.size(), b.size());
  SmallDims out(n);
  for (size_t i = 0; i < n; ++i) {
    int64_t da = i < n - a.size() ? 1 : a[i - (n - a.size())];
    int64_t db = i < n - b.size() ? 1 : b[i - (n - b.size())];
    KILN_CHECK(da == db || da == 1 || db == 1, op, ": shapes ", a, " and ", b,
               " cannot be broadcast (dimension ", i, ": ", da, " vs ", db, ")");
    out[i] = da == 1 ? db : da;
  }
  return out;
}

Tensor expand_to(const Tensor& t, IntArrayRef shape) {
  if (t.shape() == shape) return t;
  return expand_view(t, shape);
}

namespace {
int category(DType d) { return d == DType::Bool ? 0 : is_integral(d) ? 1 : is_complex(d) ? 3 : 2; }
}  // namespace

DType result_type(const Tensor& a, const Tensor& b) {
  const DType da = a.dtype(), db = b.dtype();
  if (da == db) [[likely]] {
    return da;
  }
  const bool a0 = a.dim() == 0, b0 = b.dim() == 0;
  if (a0 == b0) return promote_types(da, db);
  const DType dim = a0 ? db : da, zero = a0 ? da : db;
  return category(zero) > category(dim) ? promote_types(dim, zero) : dim;
}

Tensor cast(const Tensor& t, DType dtype) {
  if (t.dtype() == dtype) return t;
  Tensor out = make_tensor(t.impl()->device(), t.shape(), dtype);
  dispatch(OpId::copy, {t.impl().get()}, {out.impl().get()});
  return out;
}

Tensor empty_on(const Tensor& like, IntArrayRef shape, DType dtype) {
  return make_tensor(like.impl()->device(), shape, dtype);
}

Tensor scalar_on(const Tensor& like, Scalar value, DType dtype) {
  Tensor out = make_tensor(like.impl()->device(), {}, dtype);
  fill_with(out, value, "scalar operand", /*check=*/false);
  return out;
}

}  // namespace kiln::detail
