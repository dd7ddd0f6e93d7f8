// kiln/sdk/op_args.h — a checked C++ view of kiln_op_args for kernels.
//
// The frontend validates arguments against the op catalogue (share/doc/kiln/OPS.md),
// but a kernel must still never touch memory outside its operands, so the cheap
// structural facts (counts, struct sizes, ranks, matching shapes) are checked here and
// reported as KILN_STATUS_INVALID_ARGUMENT through kiln::sdk::Error.
//
// Arrays of tensor views are walked with the stride their writer reported in
// `struct_size`, so a frontend built against a later minor version (whose views have
// grown) still works.
#ifndef KILN_SDK_OP_ARGS_H
#define KILN_SDK_OP_ARGS_H

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <string>

#include "kiln/c_api.h"
#include "kiln/sdk/status.h"

namespace kiln::sdk {

#define KILN_SDK_CHECK_ARG(cond, ...) \
  KILN_SDK_CHECK(cond, KILN_STATUS_INVALID_ARGUMENT, __VA_ARGS__)

/// One operand: a non-owning view of a kiln_tensor_view, with byte_offset applied and the
/// dtype checked. Its pointers are the caller's, valid for the kernel call (unlike
/// kiln::Tensor, the frontend's reference-counted handle, which owns its storage).
struct TensorView {
  char* data = nullptr;
  const int64_t* shape = nullptr;
  const int64_t* strides = nullptr;
  int32_t ndim = 0;
  kiln_dtype dtype = KILN_DTYPE_INVALID;
  size_t itemsize = 0;

  int64_t numel() const {
    int64_t n = 1;
    for (int32_t d = 0; d < ndim; ++d) n *= shape[d];
    return n;
  }
  bool same_shape(const TensorView& other) const {
    if (ndim != other.ndim) return false;
    for (int32_t d = 0; d < ndim; ++d) {
      if (shape[d] != other.shape[d]) return false;
    }
    return true;
  }
  /// Row-major contiguous (size-1 dims may have any stride; an empty tensor, which
  /// addresses no memory, always is).
  bool is_contiguous() const {
    int64_t expected = 1;
    bool contiguous = true;
    for (int32_t d = ndim - 1; d >= 0; --d) {
      if (shape[d] == 0) return true;
      if (shape[d] != 1 && strides[d] != expected) contiguous = false;
      expected *= shape[d];
    }
    return contiguous;
  }
  template <class T>
  T* ptr() const {
    return reinterpret_cast<T*>(data);
  }
};

/// The 1.0 name, kept for out-of-tree plugins through 1.x (warns when used).
using Tensor [[deprecated("renamed kiln::sdk::TensorView")]] = TensorView;

/// "float32", "bool", ... for messages.
inline const char* dtype_name(int32_t dtype) {
  switch (dtype) {
    case KILN_DTYPE_FLOAT32:
      return "float32";
    case KILN_DTYPE_FLOAT64:
      return "float64";
    case KILN_DTYPE_FLOAT16:
      return "float16";
    case KILN_DTYPE_BFLOAT16:
      return "bfloat16";
    case KILN_DTYPE_INT32:
      return "int32";
    case KILN_DTYPE_INT64:
      return "int64";
    case KILN_DTYPE_UINT8:
      return "uint8";
    case KILN_DTYPE_BOOL:
      return "bool";
    case KILN_DTYPE_COMPLEX64:
      return "complex64";
    case KILN_DTYPE_COMPLEX128:
      return "complex128";
    default:
      return "an unknown dtype";
  }
}

/// "[2,3,4]", for messages.
inline std::string shape_string(const TensorView& t) {
  std::string out = "[";
  for (int32_t d = 0; d < t.ndim; ++d) {
    if (d > 0) out += ',';
    out += std::to_string(t.shape[d]);
  }
  out += ']';
  return out;
}

/// Reads the dtype of view `index` without throwing (for `supports`); INVALID if the
/// view does not exist.
inline kiln_dtype view_dtype(const kiln_tensor_view* views, size_t count, size_t index) {
  if (views == nullptr || index >= count) return KILN_DTYPE_INVALID;
  const size_t stride = views[0].struct_size;
  const auto* view = reinterpret_cast<const kiln_tensor_view*>(
      reinterpret_cast<const char*>(views) + index * stride);
  return static_cast<kiln_dtype>(view->dtype);
}

inline kiln_dtype input_dtype(const kiln_op_args* args, size_t i) {
  return view_dtype(args->inputs, args->num_inputs, i);
}
inline kiln_dtype output_dtype(const kiln_op_args* args, size_t i) {
  return view_dtype(args->outputs, args->num_outputs, i);
}

class OpArgs {
 public:
  explicit OpArgs(const kiln_op_args* args) : args_(args) {
    KILN_SDK_CHECK_ARG(args != nullptr, "null argument list");
    KILN_SDK_CHECK_ARG(args->struct_size >= KILN_OP_ARGS_SIZE_1_0, "kiln_op_args.struct_size ",
                       args->struct_size, " is smaller than ABI 1.0's ", KILN_OP_ARGS_SIZE_1_0);
  }

  /// Checks the operand counts the catalogue entry prescribes.
  void expect_counts(size_t inputs, size_t outputs) const {
    KILN_SDK_CHECK_ARG(args_->num_inputs == inputs && args_->num_outputs == outputs, "expected ",
                       inputs, " inputs and ", outputs, " outputs, got ", args_->num_inputs,
                       " and ", args_->num_outputs);
  }

  TensorView input(size_t i) const { return parse(args_->inputs, args_->num_inputs, i, "input"); }
  TensorView output(size_t i) const {
    return parse(args_->outputs, args_->num_outputs, i, "output");
  }

  double attr_float(const char* name) const {
    const kiln_attr* a = find(name, KILN_ATTR_FLOAT, "FLOAT");
    return a->value.f;
  }
  int64_t attr_int(const char* name) const {
    const kiln_attr* a = find(name, KILN_ATTR_INT, "INT");
    return a->value.i;
  }
  /// An INTS attribute that must have exactly `count` values.
  const int64_t* attr_ints(const char* name, int64_t count) const {
    const kiln_attr* a = find(name, KILN_ATTR_INTS, "INTS");
    KILN_SDK_CHECK_ARG(a->count == count && a->value.ints != nullptr, "attribute '", name,
                       "' must hold ", count, " values, got ", a->count);
    return a->value.ints;
  }
  const char* attr_string(const char* name) const {
    const kiln_attr* a = find(name, KILN_ATTR_STRING, "STRING");
    KILN_SDK_CHECK_ARG(a->value.s != nullptr, "attribute '", name, "' is a null string");
    return a->value.s;
  }

  /// Optional attributes (one a later catalogue entry added, or one a vendor op lets
  /// its callers leave out): `fallback` when the caller did not pass it, as in
  /// `args.attr_float_or("beta", 1.0)`. One passed with another type throws
  /// INVALID_ARGUMENT, as the required readers do.
  const char* attr_string_or(const char* name, const char* fallback) const {
    const kiln_attr* a = find_optional(name, KILN_ATTR_STRING, "STRING");
    if (a == nullptr) return fallback;
    KILN_SDK_CHECK_ARG(a->value.s != nullptr, "attribute '", name, "' is a null string");
    return a->value.s;
  }
  double attr_float_or(const char* name, double fallback) const {
    const kiln_attr* a = find_optional(name, KILN_ATTR_FLOAT, "FLOAT");
    return a != nullptr ? a->value.f : fallback;
  }
  int64_t attr_int_or(const char* name, int64_t fallback) const {
    const kiln_attr* a = find_optional(name, KILN_ATTR_INT, "INT");
    return a != nullptr ? a->value.i : fallback;
  }
  /// Whether the caller passed attribute `name` (of any type).
  bool has_attr(const char* name) const {
    return args_->attrs != nullptr && kiln_find_attr(args_, name) != nullptr;
  }

  const kiln_op_args& raw() const { return *args_; }

 private:
  static TensorView parse(const kiln_tensor_view* views, size_t count, size_t i, const char* what) {
    KILN_SDK_CHECK_ARG(i < count && views != nullptr, "missing ", what, " ", i);
    const size_t stride = views[0].struct_size;
    KILN_SDK_CHECK_ARG(stride >= KILN_TENSOR_VIEW_SIZE_1_0, what, " ", i,
                       ": kiln_tensor_view.struct_size ", stride, " is smaller than ABI 1.0's ",
                       KILN_TENSOR_VIEW_SIZE_1_0);
    const auto& view = *reinterpret_cast<const kiln_tensor_view*>(
        reinterpret_cast<const char*>(views) + i * stride);
    TensorView t;
    t.ndim = view.ndim;
    t.dtype = static_cast<kiln_dtype>(view.dtype);
    t.itemsize = kiln_dtype_size(view.dtype);
    KILN_SDK_CHECK_ARG(t.itemsize != 0, what, " ", i, ": unknown dtype code ", view.dtype);
    KILN_SDK_CHECK_ARG(t.ndim >= 0 && (t.ndim == 0 || (view.shape && view.strides)), what, " ", i,
                       ": bad rank ", t.ndim, " or null shape/strides");
    t.shape = view.shape;
    t.strides = view.strides;
    for (int32_t d = 0; d < t.ndim; ++d) {
      KILN_SDK_CHECK_ARG(t.shape[d] >= 0, what, " ", i, ": negative size ", t.shape[d], " in dim ",
                         d);
    }
    t.data = static_cast<char*>(view.data) + view.byte_offset;
    return t;
  }

  const kiln_attr* find(const char* name, kiln_attr_type type, const char* type_name) const {
    const kiln_attr* a = args_->attrs ? kiln_find_attr(args_, name) : nullptr;
    KILN_SDK_CHECK_ARG(a != nullptr, "missing attribute '", name, "'");
    KILN_SDK_CHECK_ARG(a->type == type, "attribute '", name, "' must be ", type_name);
    return a;
  }

  // The attribute if the caller passed it (nullptr if not), checked to be of `type`.
  const kiln_attr* find_optional(const char* name, kiln_attr_type type,
                                 const char* type_name) const {
    const kiln_attr* a = args_->attrs ? kiln_find_attr(args_, name) : nullptr;
    KILN_SDK_CHECK_ARG(a == nullptr || a->type == type, "attribute '", name, "' must be ",
                       type_name);
    return a;
  }

  const kiln_op_args* args_;
};

/// Checks that `t` has the same shape as `reference` (elementwise operands).
inline void expect_same_shape(const TensorView& t, const TensorView& reference, const char* name) {
  if (t.same_shape(reference)) return;
  throw Error(KILN_STATUS_INVALID_ARGUMENT, str_cat(name, " has shape ", shape_string(t),
                                                    ", expected ", shape_string(reference)));
}

/// Throws INVALID_ARGUMENT unless `t` is contiguous row-major (ops without stride
/// flags receive such operands; checking keeps a frontend bug from reading past them).
inline void expect_contiguous(const TensorView& t, const char* name) {
  KILN_SDK_CHECK_ARG(t.is_contiguous(), name, " must be contiguous");
}

/// Throws INVALID_ARGUMENT unless `t` has shape `shape`.
inline void expect_shape(const TensorView& t, std::initializer_list<int64_t> shape,
                         const char* name) {
  bool same = t.ndim == static_cast<int32_t>(shape.size());
  int32_t d = 0;
  for (int64_t s : shape) same = same && t.shape[d++] == s;
  if (same) return;
  std::string want = "[";
  for (int64_t s : shape) {
    if (want.size() > 1) want += ',';
    want += std::to_string(s);
  }
  want += ']';
  throw Error(KILN_STATUS_INVALID_ARGUMENT,
              str_cat(name, " has shape ", shape_string(t), ", expected ", want));
}

/// Throws INVALID_ARGUMENT unless `t` has dtype `dtype`.
inline void expect_dtype(const TensorView& t, kiln_dtype dtype, const char* name) {
  KILN_SDK_CHECK_ARG(t.dtype == dtype, name, " has dtype ", dtype_name(t.dtype), ", expected ",
                     dtype_name(dtype));
}

/// The error kernels throw for a dtype their `supports` rejects.
[[noreturn]] inline void unsupported_dtype(kiln_dtype dtype) {
  throw Error(KILN_STATUS_UNSUPPORTED,
              str_cat(dtype_name(dtype), " is not supported by this kernel"));
}

}  // namespace kiln::sdk

#endif  // KILN_SDK_OP_ARGS_H
