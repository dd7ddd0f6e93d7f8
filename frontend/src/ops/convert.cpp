// Moving data: between devices (to), between dtypes (to, copy_), and to the host
// (item, to_vector). Host reads go through the plugin's device-to-host copy, which
// returns only when the data is there: that is Kiln's one synchronization point.

#include <cstring>
#include <limits>
#include <memory>

#include "autograd/record.h"
#include "kiln/autograd.h"
#include "kiln/ops.h"
#include "ops/common.h"
#include "runtime/graph_capture.h"
#include "runtime/registry.h"

namespace kiln {

namespace ag = detail::autograd_impl;

namespace {

constexpr const char* kHostRead =
    "it reads a value back to the host, which a replay cannot hand to host code; keep the "
    "value in a tensor and read it after replay()";

void* element_ptr(const detail::TensorImpl& t) {
  return static_cast<char*>(t.storage->data) + t.offset * static_cast<int64_t>(t.itemsize());
}

// Copies `bytes` contiguous bytes between devices of any plugins, by the shortest
// route: within a device, a device-to-device copy; between two devices of one plugin
// that offers copy_peer, a peer copy; when one side's memory is host-accessible
// (a device property), one copy by the other side; otherwise through a host buffer.
void transfer(detail::DeviceContext* src, const void* src_ptr, detail::DeviceContext* dst,
              void* dst_ptr, size_t bytes) {
  if (bytes == 0) return;
  if (src == dst) {
    dst->copy(KILN_COPY_DEVICE_TO_DEVICE, dst_ptr, src_ptr, bytes);
  } else if (src->plugin() == dst->plugin() && dst->has_copy_peer()) {
    dst->copy_peer(dst_ptr, *src, src_ptr, bytes);
  } else if (src->host_accessible()) {
    src->synchronize();  // work queued on the source device may still be writing it
    dst->copy(KILN_COPY_HOST_TO_DEVICE, dst_ptr, src_ptr, bytes);
  } else if (dst->host_accessible()) {
    src->copy(KILN_COPY_DEVICE_TO_HOST, dst_ptr, src_ptr, bytes);
  } else {
    auto staging = std::make_unique<char[]>(bytes);
    src->copy(KILN_COPY_DEVICE_TO_HOST, staging.get(), src_ptr, bytes);
    dst->copy(KILN_COPY_HOST_TO_DEVICE, dst_ptr, staging.get(), bytes);
  }
}

// Reads a contiguous tensor's bytes to host memory.
void read_to_host(const Tensor& contiguous, void* dst) {
  const auto& impl = *contiguous.impl();
  size_t bytes = static_cast<size_t>(impl.numel) * impl.itemsize();
  if (bytes == 0) return;
  impl.device()->copy(KILN_COPY_DEVICE_TO_HOST, dst, element_ptr(impl), bytes);
}

}  // namespace

Tensor Tensor::to(const Device& device) const {
  const auto& impl = detail::impl_of(*this, "to");
  detail::DeviceContext* dst = detail::Registry::get().resolve(device);
  if (dst == impl.device()) return *this;
  Tensor src = contiguous();
  Tensor out = detail::make_tensor(dst, shape(), impl.dtype);
  transfer(impl.device(), element_ptr(*src.impl()), dst, out.impl()->storage->data,
           static_cast<size_t>(impl.numel) * impl.itemsize());
  if (ag::needs_grad({this}))
    ag::record(
        "ToDeviceBackward", out, {this}, {},
        [from = this->device()](const std::vector<Tensor>&,
                                const Tensor& g) -> std::vector<Tensor> { return {g.to(from)}; });
  return out;
}

Tensor Tensor::to(DType dtype) const {
  const auto& impl = detail::impl_of(*this, "to");
  Tensor out = detail::cast(*this, dtype);
  if (impl.dtype != dtype && (is_floating(dtype) || is_complex(dtype)) && ag::needs_grad({this}))
    ag::record(
        "ToDtypeBackward", out, {this}, {},
        [from = impl.dtype](const std::vector<Tensor>&, const Tensor& g) -> std::vector<Tensor> {
          // A real input promoted to complex gets the real part (PyTorch's rule).
          return {is_complex(g.dtype()) && !is_complex(from) ? real(g).to(from) : g.to(from)};
        });
  return out;
}

Tensor& Tensor::copy_(const Tensor& src) {
  const auto& impl = detail::impl_of(*this, "copy_");
  detail::impl_of(src, "copy_");
  KILN_CHECK(!impl.has_internal_overlap(),
             "copy_: cannot write into a tensor whose elements "
             "overlap (an expanded view)");
  ag::check_inplace(*this, "copy_", &src);
  Tensor s = src.device() == device() ? src : src.to(device());
  if (s.shape() != shape()) {
    auto b = detail::broadcast_shapes(shape(), s.shape(), "copy_");
    KILN_CHECK(IntArrayRef(b) == shape(), "copy_: source shape ", s.shape(),
               " does not broadcast to destination shape ", shape());
    s = s.expand(shape());
  }
  detail::dispatch(detail::OpId::copy, {s.impl().get()}, {&impl});
  return *this;
}

template <typename T>
T Tensor::item() const {
  const auto& impl = detail::impl_of(*this, "item");
  detail::graph::refuse_if_capturing("item()", kHostRead);
  KILN_CHECK(impl.numel == 1, "item: the tensor has ", impl.numel,
             " elements; item() needs exactly one (shape ", shape(), ")");
  Tensor v = detail::cast(*this, dtype_of<T>());
  if constexpr (std::is_same_v<T, bool>) {
    uint8_t b = 0;
    v.impl()->device()->copy(KILN_COPY_DEVICE_TO_HOST, &b, element_ptr(*v.impl()), 1);
    return b != 0;
  } else {
    T value{};
    v.impl()->device()->copy(KILN_COPY_DEVICE_TO_HOST, &value, element_ptr(*v.impl()), sizeof(T));
    return value;
  }
}

template <typename T>
std::vector<T> Tensor::to_vector() const {
  detail::impl_of(*this, "to_vector");
  detail::graph::refuse_if_capturing("to_vector()", kHostRead);
  Tensor v = detail::cast(*this, dtype_of<T>()).contiguous();
  if constexpr (std::is_same_v<T, bool>) {
    std::vector<uint8_t> bytes(static_cast<size_t>(v.numel()));
    read_to_host(v, bytes.data());
    return std::vector<bool>(bytes.begin(), bytes.end());
  } else {
    std::vector<T> out(static_cast<size_t>(v.numel()));
    read_to_host(v, out.data());
    return out;
  }
}

void Tensor::copy_to_host(void* dst, size_t bytes) const {
  const auto& impl = detail::impl_of(*this, "copy_to_host");
  KILN_CHECK(bytes == static_cast<size_t>(impl.numel) * impl.itemsize(),
             "copy_to_host: the "
             "destination holds ",
             bytes, " bytes but the tensor has ", static_cast<size_t>(impl.numel) * impl.itemsize(),
             " (", impl.numel, " x ", impl.dtype, ")");
  read_to_host(contiguous(), dst);
}

#define KILN_INSTANTIATE(T)           \
  template T Tensor::item<T>() const; \
  template std::vector<T> Tensor::to_vector<T>() const;
KILN_INSTANTIATE(float)
KILN_INSTANTIATE(double)
KILN_INSTANTIATE(int32_t)
KILN_INSTANTIATE(int64_t)
KILN_INSTANTIATE(uint8_t)
KILN_INSTANTIATE(bool)
KILN_INSTANTIATE(std::complex<float>)
KILN_INSTANTIATE(std::complex<double>)
#undef KILN_INSTANTIATE

bool allclose(const Tensor& a, const Tensor& b, double rtol, double atol) {
  detail::check_same_device("allclose", {&a, &b});
  NoGradGuard no_grad;
  Tensor x = a.to(DType::Float64), y = b.to(DType::Float64);
  // Equal values (infinities included) are close; otherwise both must be finite and
  // within tolerance; NaN is close to nothing (numpy's and PyTorch's isclose).
  const double inf = std::numeric_limits<double>::infinity();
  Tensor finite = logical_and(x.abs() < inf, y.abs() < inf);
  Tensor close = logical_or(x == y, logical_and(finite, (x - y).abs() <= (y.abs() * rtol + atol)));
  return close.logical_not().sum().item<int64_t>() == 0;
}

}  // namespace kiln
