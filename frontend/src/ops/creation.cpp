// Tensor creation: allocation on the options' device, then one catalogue op
// (fill, arange, linspace) or a host-to-device copy (from_vector).

#include <cmath>
#include <cstring>

#include "kiln/ops.h"
#include "ops/common.h"
#include "runtime/registry.h"

namespace kiln {

using detail::OpId;

Device TensorOptions::device() const { return device_ ? *device_ : default_device(); }

namespace {
detail::DeviceContext* context_of(const TensorOptions& options) {
  auto& registry = detail::Registry::get();
  return options.has_device() ? registry.resolve(options.device()) : registry.default_context();
}
}  // namespace

Tensor empty(IntArrayRef shape, TensorOptions options) {
  Tensor t = detail::make_tensor(context_of(options), shape, options.dtype());
  if (options.requires_grad()) t.requires_grad_();
  return t;
}

Tensor full(IntArrayRef shape, Scalar value, TensorOptions options) {
  if (!options.has_dtype()) options.dtype(value.natural_dtype());
  Tensor t = empty(shape, TensorOptions(options).requires_grad(false));
  t.fill_(value);
  if (options.requires_grad()) t.requires_grad_();
  return t;
}

Tensor zeros(IntArrayRef shape, TensorOptions options) {
  return full(shape, 0, options.dtype(options.dtype()));
}
Tensor ones(IntArrayRef shape, TensorOptions options) {
  return full(shape, 1, options.dtype(options.dtype()));
}

Tensor empty_like(const Tensor& t) {
  const auto& impl = detail::impl_of(t, "empty_like");
  return detail::make_tensor(impl.device(), t.shape(), impl.dtype);
}
Tensor zeros_like(const Tensor& t) { return full_like(t, 0); }
Tensor ones_like(const Tensor& t) { return full_like(t, 1); }
Tensor full_like(const Tensor& t, Scalar value) {
  Tensor out = empty_like(t);
  out.fill_(value);
  return out;
}

Tensor scalar_tensor(Scalar value, TensorOptions options) { return full({}, value, options); }

Tensor arange(Scalar end, TensorOptions options) { return arange(0, end, 1, options); }

Tensor arange(Scalar start, Scalar end, Scalar step, TensorOptions options) {
  const bool integral = start.kind() != Scalar::Kind::Floating &&
                        end.kind() != Scalar::Kind::Floating &&
                        step.kind() != Scalar::Kind::Floating;
  if (!options.has_dtype()) options.dtype(integral ? DType::Int64 : DType::Float32);
  const double s = start.to_double(), e = end.to_double(), st = step.to_double();
  KILN_CHECK(std::isfinite(s) && std::isfinite(e) && std::isfinite(st),
             "arange: need finite bounds and step, got start=", s, " end=", e, " step=", st);
  // The element count from a floating one, refused past int64 (the cast would be
  // undefined there).
  constexpr double kLimit = 9.2233720368547758e18;  // 2^63
  auto count_of = [&](double count) {
    KILN_CHECK(count < kLimit, "arange: start=", s, " end=", e, " step=", st,
               " gives more elements than int64 counts");
    return static_cast<int64_t>(count);
  };
  int64_t n = 0;
  double first = s, stride = st;
  if (integral || is_integral(options.dtype())) {
    // Counted in integers. PyTorch 1.13 truncates fractional numbers for an integer dtype
    // (arange(0, 6, 1.5, int64) is 0, 1, ..., 5; a step of 0.5 is 0), and takes the
    // length from the truncated bounds for int64 but from the given ones for the other
    // integer dtypes (arange(2.7, int32) has 3 values, arange(2.7, int64) 2).
    KILN_CHECK(integral || (std::abs(s) < kLimit && std::abs(e) < kLimit && std::abs(st) < kLimit),
               "arange: start=", s, " end=", e, " step=", st, " do not fit in ", options.dtype());
    const int64_t a = integral ? start.to_int() : static_cast<int64_t>(s);
    const int64_t b = integral ? end.to_int() : static_cast<int64_t>(e);
    const int64_t c = integral ? step.to_int() : static_cast<int64_t>(st);
    KILN_CHECK(c != 0, "arange: the step must be non-zero, got ", st,
               integral ? "" : " (truncated to 0 for an integer dtype)");
    KILN_CHECK(c > 0 ? b >= a : b <= a, "arange: the step ", c,
               " moves away from the end (start=", a, ", end=", b, ")");
    if (integral || options.dtype() == DType::Int64) {
      // In 128 bits: end - start alone can pass int64 (arange(INT64_MAX) + 1 did).
      const __int128 count = (static_cast<__int128>(b) - a + c - (c > 0 ? 1 : -1)) / c;
      KILN_CHECK(count <= INT64_MAX, "arange: start=", a, " end=", b, " step=", c,
                 " gives more elements than int64 counts");
      n = static_cast<int64_t>(count);
    } else {
      n = count_of(std::ceil((e - s) / st));
    }
    first = static_cast<double>(a);
    stride = static_cast<double>(c);
  } else {
    KILN_CHECK(st != 0, "arange: the step must be non-zero");
    KILN_CHECK((e - s) / st >= 0 || s == e, "arange: the step ", st,
               " moves away from the end (start=", s, ", end=", e, ")");
    n = count_of(std::ceil((e - s) / st));
  }
  Tensor t = empty({std::max<int64_t>(n, 0)}, options);
  detail::dispatch(detail::attrs::arange{.start = first, .step = stride}, {}, {t.impl().get()});
  return t;
}

Tensor linspace(double start, double end, int64_t steps, TensorOptions options) {
  KILN_CHECK(steps >= 0, "linspace: the number of steps must be non-negative, got ", steps);
  KILN_CHECK(is_floating(options.dtype()), "linspace: expected a floating dtype, got ",
             options.dtype());
  Tensor t = empty({steps}, options);
  detail::dispatch(detail::attrs::linspace{.start = start, .end = end}, {}, {t.impl().get()});
  return t;
}

Tensor copy_from_blob(const void* data, IntArrayRef shape, DType dtype, TensorOptions options) {
  detail::DeviceContext* device = context_of(options);
  Tensor t = detail::make_tensor(device, shape, dtype);
  size_t bytes = static_cast<size_t>(t.numel()) * t.element_size();
  KILN_CHECK(data || bytes == 0, "copy_from_blob: data is null");
  device->copy(KILN_COPY_HOST_TO_DEVICE, t.impl()->storage->data, data, bytes);
  return t;
}

Tensor from_blob(void* data, IntArrayRef shape, IntArrayRef strides, BlobDeleter deleter,
                 TensorOptions options) {
  KILN_CHECK(strides.size() == shape.size(), "from_blob: ", shape.size(), " sizes ", shape, " but ",
             strides.size(), " strides ", strides);
  const int64_t numel = detail::checked_numel(shape, "from_blob");
  // The bytes the view reaches: (sum of (size - 1) * stride) + 1 elements.
  int64_t last = 0;
  for (size_t i = 0; i < shape.size(); ++i) {
    KILN_CHECK(strides[i] >= 0, "from_blob: stride ", strides[i], " of dimension ", i,
               " is negative (wrap the first element and use flip)");
    int64_t reach = 0;
    KILN_CHECK(!__builtin_mul_overflow(shape[i] > 0 ? shape[i] - 1 : 0, strides[i], &reach) &&
                   !__builtin_add_overflow(last, reach, &last),
               "from_blob: sizes ", shape, " with strides ", strides, " overflow");
  }
  KILN_CHECK(data != nullptr || numel == 0, "from_blob: data is null for ", numel, " elements");
  detail::DeviceContext* device = context_of(options);
  const DType dtype = options.dtype();
  const size_t bytes = numel == 0 ? 0 : static_cast<size_t>(last + 1) * element_size(dtype);
  auto storage = std::make_shared<detail::Storage>(device, data, bytes, std::move(deleter));
  auto impl = std::make_shared<detail::TensorImpl>();
  impl->storage = std::move(storage);
  impl->shape.assign(shape.begin(), shape.end());
  impl->strides.assign(strides.begin(), strides.end());
  impl->numel = numel;
  impl->dtype = dtype;
  Tensor t(std::move(impl));
  if (options.requires_grad()) t.requires_grad_();
  return t;
}

Tensor from_blob(void* data, IntArrayRef shape, IntArrayRef strides, TensorOptions options) {
  return from_blob(data, shape, strides, BlobDeleter{}, std::move(options));
}

Tensor from_blob(void* data, IntArrayRef shape, TensorOptions options) {
  const detail::SmallDims strides = detail::contiguous_strides(shape);
  return from_blob(data, shape, IntArrayRef(strides.data(), strides.size()), BlobDeleter{},
                   std::move(options));
}

template <typename T>
Tensor from_vector(const std::vector<T>& values, IntArrayRef shape, TensorOptions options) {
  int64_t n = static_cast<int64_t>(values.size());
  detail::SmallDims dims =
      shape.empty() ? detail::SmallDims{n} : detail::SmallDims(shape.begin(), shape.end());
  KILN_CHECK(detail::checked_numel(dims, "from_vector") == n, "from_vector: ", n,
             " values do not fill shape ", IntArrayRef(dims));
  detail::DeviceContext* device = context_of(options);
  Tensor raw = detail::make_tensor(device, dims, dtype_of<T>());
  if constexpr (std::is_same_v<T, bool>) {
    std::vector<uint8_t> bytes(values.begin(), values.end());
    device->copy(KILN_COPY_HOST_TO_DEVICE, raw.impl()->storage->data, bytes.data(), bytes.size());
  } else {
    device->copy(KILN_COPY_HOST_TO_DEVICE, raw.impl()->storage->data, values.data(),
                 values.size() * sizeof(T));
  }
  Tensor t = detail::cast(raw, options.has_dtype() ? options.dtype() : dtype_of<T>());
  if (options.requires_grad()) t.requires_grad_();
  return t;
}

template Tensor from_vector<float>(const std::vector<float>&, IntArrayRef, TensorOptions);
template Tensor from_vector<double>(const std::vector<double>&, IntArrayRef, TensorOptions);
template Tensor from_vector<int32_t>(const std::vector<int32_t>&, IntArrayRef, TensorOptions);
template Tensor from_vector<int64_t>(const std::vector<int64_t>&, IntArrayRef, TensorOptions);
template Tensor from_vector<uint8_t>(const std::vector<uint8_t>&, IntArrayRef, TensorOptions);
template Tensor from_vector<bool>(const std::vector<bool>&, IntArrayRef, TensorOptions);
template Tensor from_vector<std::complex<float>>(const std::vector<std::complex<float>>&,
                                                 IntArrayRef, TensorOptions);
template Tensor from_vector<std::complex<double>>(const std::vector<std::complex<double>>&,
                                                  IntArrayRef, TensorOptions);

}  // namespace kiln
