#include "core/tensor_impl.h"

#include <algorithm>
#include <ostream>

#include "kiln/error.h"
#include "runtime/registry.h"

namespace kiln {

std::ostream& operator<<(std::ostream& out, IntArrayRef values) {
  out << '[';
  for (size_t i = 0; i < values.size(); ++i) out << (i ? ", " : "") << values[i];
  return out << ']';
}

}  // namespace kiln

namespace kiln::detail {

int64_t wrap_dim(int64_t dim, int64_t rank, const char* op) {
  int64_t lo = rank == 0 ? -1 : -rank, hi = rank == 0 ? 0 : rank - 1;
  KILN_CHECK(dim >= lo && dim <= hi, op, ": dimension ", dim, " is out of range for a ", rank,
             "-D tensor (expected ", lo, " to ", hi, ")");
  return dim < 0 ? dim + std::max<int64_t>(rank, 1) : dim;
}

bool TensorImpl::is_contiguous() const {
  int64_t expected = 1;
  for (size_t i = shape.size(); i-- > 0;) {
    if (shape[i] == 1) continue;
    if (strides[i] != expected) return numel == 0;
    expected *= shape[i];
  }
  return true;
}

bool TensorImpl::has_internal_overlap() const {
  for (size_t i = 0; i < shape.size(); ++i)
    if (shape[i] > 1 && strides[i] == 0) return true;
  return false;
}

std::pair<int64_t, int64_t> TensorImpl::byte_extent() const {
  if (numel == 0) return {0, 0};
  int64_t lo = offset, hi = offset;
  for (size_t i = 0; i < shape.size(); ++i) {
    int64_t span = (shape[i] - 1) * strides[i];
    if (span > 0)
      hi += span;
    else
      lo += span;
  }
  auto item = static_cast<int64_t>(itemsize());
  return {lo * item, (hi + 1) * item};
}

SmallDims contiguous_strides(IntArrayRef shape) {
  SmallDims strides(shape.size());
  int64_t s = 1;
  for (size_t i = shape.size(); i-- > 0;) {
    strides[i] = s;
    // Saturating: a product past int64 is only reachable with a zero-size dimension
    // elsewhere (checked_numel refuses it otherwise), and an empty tensor's strides
    // never address memory. Plain multiplication would be undefined behaviour.
    if (__builtin_mul_overflow(s, std::max<int64_t>(shape[i], 1), &s)) s = INT64_MAX;
  }
  return strides;
}

int64_t checked_numel(IntArrayRef shape, const char* op) {
  int64_t n = 1;
  for (int64_t s : shape) {
    KILN_CHECK(s >= 0, op, ": negative size ", s, " in shape ", shape);
    KILN_CHECK(s == 0 || n <= INT64_MAX / s, op, ": shape ", shape, " has too many elements");
    n *= s;
  }
  return n;
}

Tensor make_tensor(DeviceContext* device, IntArrayRef shape, DType dtype) {
  auto impl = std::make_shared<TensorImpl>();
  impl->numel = checked_numel(shape, "empty");
  impl->dtype = dtype;
  size_t itemsize = impl->itemsize();
  KILN_CHECK(static_cast<uint64_t>(impl->numel) <= SIZE_MAX / itemsize, "empty: shape ", shape,
             " of ", dtype, " does not fit in memory");
  impl->shape.assign(shape.begin(), shape.end());
  impl->strides = contiguous_strides(shape);
  impl->storage = device->allocate(static_cast<size_t>(impl->numel) * itemsize);
  return Tensor(std::move(impl));
}

Tensor make_view(const Tensor& base, IntArrayRef shape, IntArrayRef strides, int64_t offset) {
  auto impl = std::make_shared<TensorImpl>();
  const TensorImpl& b = *base.impl();
  impl->storage = b.storage;
  impl->shape.assign(shape.begin(), shape.end());
  impl->strides.assign(strides.begin(), strides.end());
  impl->offset = offset;
  impl->numel = checked_numel(shape, "view");
  impl->dtype = b.dtype;
  return Tensor(std::move(impl));
}

const TensorImpl& impl_of(const Tensor& t, const char* op) {
  KILN_CHECK(t.defined(), op, ": the tensor is undefined (default-constructed)");
  return *t.impl();
}

}  // namespace kiln::detail
