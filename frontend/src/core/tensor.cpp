// kiln::Tensor: the handle and its metadata. Views and copies, which record
// autograd, are ops (ops/views.cpp).

#include "core/tensor_impl.h"
#include "kiln/error.h"
#include "runtime/graph_capture.h"
#include "runtime/registry.h"

namespace kiln {

using detail::impl_of;
using detail::wrap_dim;

Tensor::Tensor(std::shared_ptr<detail::TensorImpl> impl) : impl_(std::move(impl)) {}

DType Tensor::dtype() const { return impl_of(*this, "dtype").dtype; }
Device Tensor::device() const { return impl_of(*this, "device").device()->device(); }
IntArrayRef Tensor::shape() const {
  const auto& s = impl_of(*this, "shape").shape;
  return {s.data(), s.size()};
}
IntArrayRef Tensor::strides() const {
  const auto& s = impl_of(*this, "strides").strides;
  return {s.data(), s.size()};
}
int64_t Tensor::size(int64_t d) const {
  const auto& impl = impl_of(*this, "size");
  return impl.shape[static_cast<size_t>(wrap_dim(d, impl.dim(), "size"))];
}
int64_t Tensor::stride(int64_t d) const {
  const auto& impl = impl_of(*this, "stride");
  return impl.strides[static_cast<size_t>(wrap_dim(d, impl.dim(), "stride"))];
}
int64_t Tensor::dim() const { return impl_of(*this, "dim").dim(); }
int64_t Tensor::numel() const { return impl_of(*this, "numel").numel; }
int64_t Tensor::storage_offset() const { return impl_of(*this, "storage_offset").offset; }
size_t Tensor::element_size() const { return impl_of(*this, "element_size").itemsize(); }
bool Tensor::is_contiguous() const { return impl_of(*this, "is_contiguous").is_contiguous(); }
bool Tensor::shares_storage_with(const Tensor& other) const {
  return defined() && other.defined() && impl_->storage == other.impl_->storage;
}

void* Tensor::data_ptr() const {
  const detail::TensorImpl& t = impl_of(*this, "data_ptr");
  detail::graph::refuse_if_capturing(
      "data_ptr()", "host code would read or write memory that the capture does not fill");
  KILN_CHECK(t.device()->host_accessible(), "data_ptr: the memory of ", t.device()->name(),
             " is not host-accessible; copy the tensor first, e.g. .to(\"cpu\")");
  return static_cast<char*>(t.storage->data) + t.offset * static_cast<int64_t>(t.itemsize());
}

void* Tensor::typed_data_ptr(DType expected) const {
  KILN_CHECK(dtype() == expected, "data_ptr<", dtype_name(expected), ">: the tensor is ",
             dtype_name(dtype()));
  return data_ptr();
}

void Tensor::set_data(const Tensor& data) {
  impl_of(*this, "set_data");
  const auto& src = impl_of(data, "set_data");
  auto& dst = *impl_;
  dst.storage = src.storage;
  dst.shape = src.shape;
  dst.strides = src.strides;
  dst.offset = src.offset;
  dst.numel = src.numel;
  dst.dtype = src.dtype;
}

}  // namespace kiln
