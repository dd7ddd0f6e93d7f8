// DLPack export and import (kiln/dlpack.h): the mapping of devices and dtypes, and
// the lifetime of shared memory in both directions.
#include "kiln/dlpack.h"

#include <vector>

#include "core/tensor_impl.h"
#include "kiln/error.h"
#include "runtime/graph_capture.h"
#include "runtime/registry.h"

namespace kiln {

namespace {

DLDataType dl_dtype(DType dtype) {
  switch (dtype) {
    case DType::Float32:
      return {kDLFloat, 32, 1};
    case DType::Float64:
      return {kDLFloat, 64, 1};
    case DType::Float16:
      return {kDLFloat, 16, 1};
    case DType::BFloat16:
      return {kDLBfloat, 16, 1};
    case DType::Int32:
      return {kDLInt, 32, 1};
    case DType::Int64:
      return {kDLInt, 64, 1};
    case DType::UInt8:
    case DType::Bool:
      return {kDLUInt, 8, 1};
    case DType::Complex64:
      return {kDLComplex, 64, 1};
    case DType::Complex128:
      return {kDLComplex, 128, 1};
  }
  KILN_FAIL("to_dlpack: dtype ", static_cast<int>(dtype), " has no DLPack type");
}

DType kiln_dtype(DLDataType t) {
  KILN_CHECK(t.lanes == 1, "from_dlpack: vector types (", t.lanes, " lanes) are not supported");
  if (t.code == kDLFloat && t.bits == 32) return DType::Float32;
  if (t.code == kDLFloat && t.bits == 64) return DType::Float64;
  if (t.code == kDLFloat && t.bits == 16) return DType::Float16;
  if (t.code == kDLBfloat && t.bits == 16) return DType::BFloat16;
  if (t.code == kDLInt && t.bits == 32) return DType::Int32;
  if (t.code == kDLInt && t.bits == 64) return DType::Int64;
  if (t.code == kDLUInt && t.bits == 8) return DType::UInt8;
  if (t.code == kDLComplex && t.bits == 64) return DType::Complex64;
  if (t.code == kDLComplex && t.bits == 128) return DType::Complex128;
  KILN_FAIL("from_dlpack: DLPack type code ", static_cast<int>(t.code), " with ",
            static_cast<int>(t.bits),
            " bits has no Kiln dtype (float16/32/64, bfloat16, "
            "int32, int64, uint8, complex64, complex128)");
}

DLDevice dl_device(const detail::DeviceContext& device) {
  if (device.host_accessible()) return {kDLCPU, 0};
  if (device.device().backend() == "cuda") return {kDLCUDA, device.index()};
  KILN_FAIL("to_dlpack: DLPack has no device type for ", device.name(),
            " (its memory is not host-accessible and it is not a CUDA device)");
}

Device kiln_device(DLDevice d) {
  switch (d.device_type) {
    case kDLCPU:
    case kDLCUDAHost:
      return Device("cpu", 0);
    case kDLCUDA:
      return Device("cuda", d.device_id);
    default:
      KILN_FAIL("from_dlpack: DLPack device type ", static_cast<int>(d.device_type), " (device ",
                d.device_id, ") has no Kiln backend (cpu and cuda only)");
  }
}

// What an exported DLManagedTensor owns: the tensor (keeping its memory alive) and
// the shape and stride arrays the DLTensor points to.
struct Export {
  Tensor tensor;
  std::vector<int64_t> shape, strides;
  DLManagedTensor managed{};
};

}  // namespace

DLManagedTensor* to_dlpack(const Tensor& tensor) {
  const detail::TensorImpl& t = detail::impl_of(tensor, "to_dlpack");
  detail::graph::refuse_if_capturing(
      "to_dlpack()", "another library would read or write memory that the capture does not fill");
  KILN_CHECK(!tensor.requires_grad(),
             "to_dlpack: the tensor requires grad; export "
             "tensor.detach() (the gradient history cannot cross DLPack)");
  auto out = std::make_unique<Export>();
  out->tensor = tensor;
  out->shape.assign(t.shape.begin(), t.shape.end());
  out->strides.assign(t.strides.begin(), t.strides.end());
  DLTensor& dl = out->managed.dl_tensor;
  dl.data = static_cast<char*>(t.storage->data) + t.offset * static_cast<int64_t>(t.itemsize());
  dl.device = dl_device(*t.device());
  dl.ndim = static_cast<int>(t.shape.size());
  dl.dtype = dl_dtype(t.dtype);
  dl.shape = out->shape.data();
  dl.strides = out->strides.data();
  dl.byte_offset = 0;
  out->managed.manager_ctx = out.get();
  out->managed.deleter = [](DLManagedTensor* self) {
    delete static_cast<Export*>(self->manager_ctx);
  };
  return &out.release()->managed;
}

Tensor from_dlpack(DLManagedTensor* managed) {
  KILN_CHECK(managed != nullptr, "from_dlpack: null DLManagedTensor");
  const DLTensor& dl = managed->dl_tensor;
  KILN_CHECK(dl.ndim >= 0 && dl.ndim <= 64, "from_dlpack: ndim ", dl.ndim, " is out of range");
  KILN_CHECK(dl.ndim == 0 || dl.shape != nullptr, "from_dlpack: shape is null for ndim ", dl.ndim);
  const DType dtype = kiln_dtype(dl.dtype);
  const Device device = kiln_device(dl.device);
  const IntArrayRef shape(dl.shape, static_cast<size_t>(dl.ndim));
  detail::SmallDims strides = dl.strides != nullptr
                                  ? detail::SmallDims(dl.strides, dl.strides + dl.ndim)
                                  : detail::contiguous_strides(shape);
  void* data = static_cast<char*>(dl.data) + dl.byte_offset;
  return from_blob(
      data, shape, IntArrayRef(strides.data(), strides.size()),
      [managed](void*) {
        if (managed->deleter) managed->deleter(managed);
      },
      TensorOptions().dtype(dtype).device(device));
}

}  // namespace kiln
