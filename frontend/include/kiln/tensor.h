#pragma once
/// @file tensor.h
/// kiln::Tensor: a cheap, reference-counted handle to a strided view of device
/// memory, in the manner of torch::Tensor.
///
/// @code
///   auto x = kiln::randn({64, 784});                       // default device
///   auto w = kiln::zeros({784, 10}, kiln::TensorOptions().device("cuda"));
///   auto y = kiln::matmul(x.to(w.device()), w).relu();     // runs on cuda:0
///   std::cout << y.sum().item<float>() << "\n";            // host read: syncs
/// @endcode
///
/// Copying a Tensor copies the handle, not the data. Views (`reshape`, `transpose`,
/// `narrow`, `expand`, ...) share storage with their base; writes through one are
/// seen by the other. Every op checks its arguments and throws kiln::Error naming
/// the op, the shapes, dtypes and devices involved; after a throw, no existing
/// tensor has changed. Ops on one device run asynchronously in program order; only
/// host reads (`item`, `to_vector`, `to("cpu")`, printing) wait for them.

#include <cstdint>
#include <functional>
#include <iosfwd>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "kiln/device.h"
#include "kiln/dtype.h"
#include "kiln/int_array_ref.h"
#include "kiln/scalar.h"

namespace kiln {

namespace detail {
struct TensorImpl;
}
namespace indexing {
class TensorIndex;  // kiln/indexing.h
}
namespace autograd {
class Node;
}

/// Where and as what a new tensor is created; chainable, with the defaults in one
/// place: dtype float32, device default_device().
///
/// @code
///   kiln::zeros({3}, kiln::TensorOptions().dtype(kiln::int64).device("cpu:1"));
/// @endcode
struct TensorOptions {
  TensorOptions() = default;
  TensorOptions(DType dtype) : dtype_(dtype) {}                   // NOLINT: zeros({2}, kiln::int64)
  TensorOptions(const Device& device) : device_(device) {}        // NOLINT
  TensorOptions(const char* device) : device_(Device(device)) {}  // NOLINT

  TensorOptions& dtype(DType d) {
    dtype_ = d;
    return *this;
  }
  TensorOptions& device(const Device& d) {
    device_ = d;
    return *this;
  }
  /// Create a leaf that requires gradients (float dtypes only).
  TensorOptions& requires_grad(bool r) {
    requires_grad_ = r;
    return *this;
  }
  bool requires_grad() const { return requires_grad_; }
  /// The named dtype, or float32 when none was named.
  DType dtype() const { return dtype_.value_or(DType::Float32); }
  bool has_dtype() const { return dtype_.has_value(); }
  /// The named device, or default_device() when none was named.
  Device device() const;
  bool has_device() const { return device_.has_value(); }

 private:
  std::optional<DType> dtype_;
  std::optional<Device> device_;
  bool requires_grad_ = false;
};

class Tensor {
 public:
  /// An undefined tensor: defined() is false and every op on it throws.
  Tensor() = default;
  explicit Tensor(std::shared_ptr<detail::TensorImpl> impl);

  bool defined() const { return impl_ != nullptr; }

  // -- metadata ------------------------------------------------------------------
  DType dtype() const;
  Device device() const;
  IntArrayRef shape() const;
  IntArrayRef sizes() const { return shape(); }
  /// Size of dimension `dim`; negative dims count from the end.
  int64_t size(int64_t dim) const;
  IntArrayRef strides() const;
  int64_t stride(int64_t dim) const;
  int64_t dim() const;
  int64_t numel() const;
  /// Offset of the first element in its storage, in elements.
  int64_t storage_offset() const;
  size_t element_size() const;
  bool is_contiguous() const;
  /// True when both handles view the same storage (not necessarily the same elements).
  bool shares_storage_with(const Tensor& other) const;
  /// The address of the first element, for host code reading or writing the memory in
  /// place (mind strides() for a non-contiguous tensor). Only on devices whose memory
  /// the host can use (cpu; KILN_DEVICE_FLAG_HOST_ACCESSIBLE) and, for data_ptr<T>,
  /// when T is the dtype's C++ type (dtype_of<T>); otherwise throws kiln::Error.
  /// Synchronize the device first if its plugin runs work asynchronously.
  void* data_ptr() const;
  template <typename T>
  T* data_ptr() const {
    return static_cast<T*>(typed_data_ptr(dtype_of<T>()));
  }

  // -- views (share storage) -----------------------------------------------------
  /// One dimension may be -1 (inferred). Returns a view when the strides allow,
  /// otherwise a contiguous copy (as torch.reshape).
  Tensor reshape(IntArrayRef shape) const;
  /// Like reshape but never copies: throws when the strides do not allow a view.
  Tensor view(IntArrayRef shape) const;
  Tensor flatten(int64_t start_dim = 0, int64_t end_dim = -1) const;
  Tensor transpose(int64_t dim0, int64_t dim1) const;
  /// transpose(0, 1) of a ≤2-D tensor.
  Tensor t() const;
  Tensor permute(IntArrayRef dims) const;
  /// Elements [start, end) with `step` (> 0) along `dim`; start/end are clamped and
  /// may be negative (from the end), as Python slicing.
  Tensor slice(int64_t dim, int64_t start, int64_t end, int64_t step = 1) const;
  /// `length` elements from `start` along `dim`; out of range throws.
  Tensor narrow(int64_t dim, int64_t start, int64_t length) const;
  /// The `index`-th sub-tensor along `dim` (rank drops by one).
  Tensor select(int64_t dim, int64_t index) const;
  /// Views of `chunks` (> 0) nearly equal pieces along `dim`, each ceil(size / chunks)
  /// long but the last, as torch.chunk: fewer pieces when the size runs out.
  std::vector<Tensor> chunk(int64_t chunks, int64_t dim = 0) const;
  /// Views of `size` elements each along `dim`, the last shorter (torch.split).
  std::vector<Tensor> split(int64_t size, int64_t dim = 0) const;
  /// Views of the given lengths along `dim`, which must add up to its size.
  std::vector<Tensor> split(const std::vector<int64_t>& sizes, int64_t dim = 0) const;
  /// Every sub-tensor along `dim`, as select(dim, i) (torch.unbind).
  std::vector<Tensor> unbind(int64_t dim = 0) const;
  Tensor squeeze() const;
  Tensor squeeze(int64_t dim) const;
  Tensor unsqueeze(int64_t dim) const;
  /// Broadcasts size-1 dimensions (and adds leading ones) without copying; -1
  /// keeps a size.
  Tensor expand(IntArrayRef shape) const;
  Tensor expand_as(const Tensor& other) const { return expand(other.shape()); }

  // -- copies and conversion -----------------------------------------------------
  /// This tensor if already contiguous, else a contiguous copy.
  Tensor contiguous() const;
  /// A contiguous copy on the same device.
  Tensor clone() const;
  /// Copies to `device` (this tensor itself when already there).
  Tensor to(const Device& device) const;
  Tensor to(const char* device) const { return to(Device(device)); }
  /// Converts to `dtype` (this tensor itself when already of it).
  Tensor to(DType dtype) const;
  /// The only element as T (float, double, int32_t, int64_t, uint8_t, bool);
  /// throws unless numel() == 1. Waits for pending work.
  template <typename T>
  T item() const;
  /// All elements in row-major order, converted to T. Waits for pending work.
  template <typename T>
  std::vector<T> to_vector() const;
  /// Copies the raw elements (row-major, this dtype, native byte order) into
  /// `dst`, which must hold exactly numel() * element_size() bytes. Waits.
  void copy_to_host(void* dst, size_t bytes) const;

  // -- in place (return *this) ------------------------------------------------------
  /// Copies `src` (broadcast to this shape, converted to this dtype, from any device).
  Tensor& copy_(const Tensor& src);
  Tensor& fill_(Scalar value);
  Tensor& zero_() { return fill_(0); }

  // -- elementwise -------------------------------------------------------------------
  /// approximate: "none" (erf) or "tanh".
  Tensor gelu(const std::string& approximate = "none") const;
  Tensor clamp(std::optional<Scalar> min, std::optional<Scalar> max) const;
  /// clamp in place, in this tensor's dtype (not recorded by autograd); a bound that
  /// would promote the result (a floating bound of an integer tensor) is an error.
  Tensor& clamp_(std::optional<Scalar> min, std::optional<Scalar> max);
  /// `value` where `mask` (bool, broadcast to this shape) is true, else this tensor's
  /// element, in this tensor's dtype (torch.masked_fill).
  Tensor masked_fill(const Tensor& mask, Scalar value) const;
  Tensor& masked_fill_(const Tensor& mask, Scalar value);
  // The pointwise ops of the catalogue (share/doc/kiln/ops.json), generated by the Kiln
  // sources' cmake/opgen: exp(), sigmoid(), pow(e), maximum(b), atan2(b), ..., and in
  // place exp_(), relu_(), ..., add_, sub_, mul_, div_, pow_, atan2_.
#include "kiln/pointwise_methods.h"

  // -- reductions (dims may be negative; an empty list reduces every dim) ------------
  Tensor sum(IntArrayRef dims = {}, bool keepdim = false) const;
  Tensor mean(IntArrayRef dims = {}, bool keepdim = false) const;
  Tensor prod(IntArrayRef dims = {}, bool keepdim = false) const;
  /// Largest / smallest values over `dims` (every dim when empty), as torch.amax /
  /// torch.amin.
  Tensor amax(IntArrayRef dims = {}, bool keepdim = false) const;
  Tensor amin(IntArrayRef dims = {}, bool keepdim = false) const;
  /// The largest / smallest value of the whole tensor (0-d), as torch.max(x).
  Tensor max() const;
  Tensor min() const;
  /// Along `dim`, as torch.max(x, dim): the values and the index of the first
  /// largest (smallest) one.
  std::tuple<Tensor, Tensor> max(int64_t dim, bool keepdim = false) const;
  std::tuple<Tensor, Tensor> min(int64_t dim, bool keepdim = false) const;
  /// Index of the first largest value along `dim`, or in the flattened tensor.
  Tensor argmax(std::optional<int64_t> dim = std::nullopt, bool keepdim = false) const;
  Tensor argmin(std::optional<int64_t> dim = std::nullopt, bool keepdim = false) const;
  /// Variance with Bessel's correction by default (correction = 1).
  Tensor var(IntArrayRef dims = {}, int64_t correction = 1, bool keepdim = false) const;

  /// sqrt(var(...)); see kiln::std.
  Tensor std(IntArrayRef dims = {}, int64_t correction = 1, bool keepdim = false) const;
  /// The vector p-norm; see kiln::norm.
  Tensor norm(double p = 2, IntArrayRef dims = {}, bool keepdim = false) const;
  /// Bool: any / every element non-zero over `dims`.
  Tensor any(IntArrayRef dims = {}, bool keepdim = false) const;
  Tensor all(IntArrayRef dims = {}, bool keepdim = false) const;
  Tensor isnan() const;
  Tensor isinf() const;
  Tensor isfinite() const;

  // -- indexing in libtorch's spelling (kiln/indexing.h) --------------------------------
  /// x.index({0, Slice(1, 3)}) is Python's x[0, 1:3]: a view for integers, slices,
  /// None and Ellipsis; a copy when an index is a tensor.
  Tensor index(const std::vector<indexing::TensorIndex>& indices) const;
  /// x[indices] = values (broadcast to the indexed shape, converted to this dtype), or
  /// += with `accumulate`. With index tensors and no accumulate, a position named
  /// twice is an error (checked with one host read). Not recorded by autograd.
  Tensor& index_put_(const std::vector<indexing::TensorIndex>& indices, const Tensor& values,
                     bool accumulate = false);
  Tensor& index_put_(const std::vector<indexing::TensorIndex>& indices, Scalar value);
  /// x[i] is select(0, i) (a view); x[t] is index({t}) for an integer or bool tensor.
  Tensor operator[](int64_t i) const { return select(0, i); }
  Tensor operator[](const Tensor& index) const;

  // -- sorting and selection (see ops.h) ------------------------------------------------
  Tensor cumsum(int64_t dim) const;
  Tensor cumprod(int64_t dim) const;
  std::tuple<Tensor, Tensor> sort(int64_t dim = -1, bool descending = false) const;
  Tensor argsort(int64_t dim = -1, bool descending = false) const;
  std::tuple<Tensor, Tensor> topk(int64_t k, int64_t dim = -1, bool largest = true) const;
  Tensor nonzero() const;
  Tensor masked_select(const Tensor& mask) const;
  Tensor masked_scatter(const Tensor& mask, const Tensor& source) const;
  Tensor& masked_scatter_(const Tensor& mask, const Tensor& source);

  // -- rearranging and accumulating (copies; see ops.h) -------------------------------
  Tensor flip(IntArrayRef dims) const;
  Tensor roll(IntArrayRef shifts, IntArrayRef dims = {}) const;
  /// Repeats the tensor reps[i] times along dim i (torch.Tensor.repeat): reps has at
  /// least dim() entries, extra leading ones add dimensions. A copy.
  Tensor repeat(IntArrayRef reps) const;
  Tensor tile(IntArrayRef reps) const;
  Tensor tril(int64_t diagonal = 0) const;
  Tensor triu(int64_t diagonal = 0) const;
  Tensor diag(int64_t diagonal = 0) const;
  Tensor scatter(int64_t dim, const Tensor& index, const Tensor& src) const;
  Tensor scatter(int64_t dim, const Tensor& index, Scalar value) const;
  Tensor& scatter_(int64_t dim, const Tensor& index, const Tensor& src);
  Tensor& scatter_(int64_t dim, const Tensor& index, Scalar value);
  Tensor scatter_add(int64_t dim, const Tensor& index, const Tensor& src) const;
  Tensor index_add(int64_t dim, const Tensor& index, const Tensor& src) const;

  Tensor matmul(const Tensor& other) const;

  // -- autograd (see autograd.h) ---------------------------------------------------------
  bool requires_grad() const;
  /// Marks a leaf tensor as needing gradients (float dtypes only); returns *this.
  Tensor& requires_grad_(bool requires_grad = true);
  /// The gradient accumulated by backward() (undefined until then).
  Tensor grad() const;
  /// Replaces the gradient (an undefined tensor clears it), e.g. for zero_grad.
  void set_grad(const Tensor& grad);
  /// True for tensors not produced by a recorded op.
  bool is_leaf() const;
  /// Keeps .grad() for this non-leaf tensor during backward().
  void retain_grad() const;
  /// The node that produced this tensor; null for leaves.
  std::shared_ptr<autograd::Node> grad_fn() const;
  /// Shares storage, but is cut from the graph and does not require grad.
  Tensor detach() const;
  /// Makes this tensor (every handle to it) view `data`'s storage, shape and dtype,
  /// keeping its autograd state: how modules move parameters between devices.
  void set_data(const Tensor& data);
  /// Computes the gradients of this tensor with respect to the leaves. `gradient`
  /// may be omitted for a single-element tensor.
  void backward(const Tensor& gradient = {}, bool retain_graph = false) const;

  /// Internal: the implementation object (for the frontend's own code).
  const std::shared_ptr<detail::TensorImpl>& impl() const { return impl_; }

 private:
  void* typed_data_ptr(DType expected) const;
  std::shared_ptr<detail::TensorImpl> impl_;
};

// -- creation ------------------------------------------------------------------------
/// Uninitialized memory.
Tensor empty(IntArrayRef shape, TensorOptions options = {});
Tensor zeros(IntArrayRef shape, TensorOptions options = {});
Tensor ones(IntArrayRef shape, TensorOptions options = {});
Tensor full(IntArrayRef shape, Scalar value, TensorOptions options = {});
Tensor empty_like(const Tensor& t);
Tensor zeros_like(const Tensor& t);
Tensor ones_like(const Tensor& t);
Tensor full_like(const Tensor& t, Scalar value);
/// start, start+step, ... < end (as torch.arange). Without a dtype in the options
/// the result is int64 when every bound is an integer, else float32. An integer dtype
/// with fractional bounds counts from start and step truncated to integers, as PyTorch:
/// @code
///   kiln::arange(5);               // int64 [0, 1, 2, 3, 4]
///   kiln::arange(0.0, 1.0, 0.25);  // float32 [0, 0.25, 0.5, 0.75]
/// @endcode
Tensor arange(Scalar end, TensorOptions options = {});
Tensor arange(Scalar start, Scalar end, Scalar step = 1, TensorOptions options = {});
/// `steps` evenly spaced values from start to end, both included.
Tensor linspace(double start, double end, int64_t steps, TensorOptions options = {});
/// A tensor holding `values` with `shape` (an empty shape means 1-D; use
/// scalar_tensor for 0-d); the dtype is T's unless the options name another (then
/// converted), e.g.
/// @code
///   auto m = kiln::from_vector<float>({1, 2, 3, 4}, {2, 2});  // [[1, 2], [3, 4]]
/// @endcode
template <typename T>
Tensor from_vector(const std::vector<T>& values, IntArrayRef shape = {},
                   TensorOptions options = {});
/// A tensor of `dtype` and `shape` holding a copy of the raw row-major bytes at
/// `data` (numel * element_size bytes, native byte order), on the options' device.
/// Works for every dtype, float16 and bfloat16 included. `data` may be freed at once.
Tensor copy_from_blob(const void* data, IntArrayRef shape, DType dtype, TensorOptions options = {});

/// Called once with the data pointer when the last tensor using memory wrapped by
/// from_blob is gone (views and autograd's saved tensors included).
using BlobDeleter = std::function<void(void*)>;

/// Wraps memory without copying, as torch::from_blob: a tensor of the options' dtype
/// and device whose elements are at data + (i0*strides[0] + i1*strides[1] + ...) *
/// element_size. The memory must belong to that device (host memory: a device whose
/// memory the host can use, e.g. cpu; a CUDA pointer: a cuda device) and stay valid
/// until `deleter` is called (without one, for as long as any tensor uses it). Writes
/// through the tensor are writes to the memory. Strides are in elements and must not
/// be negative; without strides the layout is row-major. Throws kiln::Error for a null
/// pointer with elements, mismatched shape and strides, or negative sizes or strides
/// (and then never calls the deleter: the memory stays the caller's).
Tensor from_blob(void* data, IntArrayRef shape, IntArrayRef strides, BlobDeleter deleter,
                 TensorOptions options = {});
Tensor from_blob(void* data, IntArrayRef shape, IntArrayRef strides, TensorOptions options = {});
Tensor from_blob(void* data, IntArrayRef shape, TensorOptions options = {});
/// A 0-d tensor.
Tensor scalar_tensor(Scalar value, TensorOptions options = {});

// -- operators -----------------------------------------------------------------------
Tensor operator-(const Tensor& a);
Tensor operator+(const Tensor& a, const Tensor& b);
Tensor operator-(const Tensor& a, const Tensor& b);
Tensor operator*(const Tensor& a, const Tensor& b);
Tensor operator/(const Tensor& a, const Tensor& b);
Tensor operator+(const Tensor& a, Scalar b);
Tensor operator-(const Tensor& a, Scalar b);
Tensor operator*(const Tensor& a, Scalar b);
Tensor operator/(const Tensor& a, Scalar b);
Tensor operator+(Scalar a, const Tensor& b);
Tensor operator-(Scalar a, const Tensor& b);
Tensor operator*(Scalar a, const Tensor& b);
Tensor operator/(Scalar a, const Tensor& b);
/// Elementwise comparisons giving bool tensors (as torch).
Tensor operator==(const Tensor& a, const Tensor& b);
Tensor operator!=(const Tensor& a, const Tensor& b);
Tensor operator<(const Tensor& a, const Tensor& b);
Tensor operator<=(const Tensor& a, const Tensor& b);
Tensor operator>(const Tensor& a, const Tensor& b);
Tensor operator>=(const Tensor& a, const Tensor& b);
Tensor operator==(const Tensor& a, Scalar b);
Tensor operator!=(const Tensor& a, Scalar b);
Tensor operator<(const Tensor& a, Scalar b);
Tensor operator<=(const Tensor& a, Scalar b);
Tensor operator>(const Tensor& a, Scalar b);
Tensor operator>=(const Tensor& a, Scalar b);

/// Prints like PyTorch: `tensor([[1., 2.], [3., 4.]], device='cuda:0', dtype=float64)`
/// (long tensors are summarized with "...").
std::ostream& operator<<(std::ostream& out, const Tensor& t);

}  // namespace kiln
