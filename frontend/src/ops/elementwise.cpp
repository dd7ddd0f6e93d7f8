// The elementwise ops that are not generated from api/ops.json: those with attributes
// (gelu, clamp), where, the operators and fill_. The plain pointwise ops, their methods
// and gradients are generated (cmake/opgen); their shared rules are ops/pointwise.h.

#include <cmath>
#include <limits>

#include "autograd/record.h"
#include "kiln/ops.h"
#include "ops/common.h"
#include "ops/pointwise.h"
#include "runtime/registry.h"

namespace kiln {

using detail::OpId;
namespace ag = detail::autograd_impl;
using Grads = std::vector<Tensor>;
using Saved = std::vector<Tensor>;

namespace {

// `a op scalar` and `scalar op a` with PyTorch's scalar promotion.
Tensor with_scalar(Tensor (*op)(const Tensor&, const Tensor&), const char* name, const Tensor& a,
                   Scalar s, bool scalar_first, detail::Promote promote = detail::Promote::Arith) {
  Tensor st = detail::scalar_operand(a, s, name, promote);
  return scalar_first ? op(st, a) : op(a, st);
}

}  // namespace

namespace {

// Whether `value` can be written into a `dtype` tensor without overflow, by PyTorch's
// rule (c10's checked conversion): a negative integer may wrap into uint8 (so -1 is
// 255), a floating value must lie within the dtype's range (255.9 does not fit uint8;
// NaN and ±inf fit no integer dtype), and anything fits bool.
bool fits(Scalar value, DType dtype) {
  if (dtype == DType::Bool || is_complex(dtype)) return true;
  const double d = value.to_double();
  if (is_floating(dtype)) {
    if (!std::isfinite(d)) return true;
    const double max = dtype == DType::Float16    ? 65504.0
                       : dtype == DType::BFloat16 ? 3.3895313892515355e38
                       : dtype == DType::Float32  ? std::numeric_limits<float>::max()
                                                  : std::numeric_limits<double>::max();
    return std::abs(d) <= max;
  }
  const double lo = dtype == DType::UInt8 ? 0.0 : dtype == DType::Int32 ? -2147483648.0 : -0x1p63;
  const double hi = dtype == DType::UInt8 ? 255.0 : dtype == DType::Int32 ? 2147483647.0 : 0x1p63;
  if (value.kind() == Scalar::Kind::Floating)
    return d >= lo && (dtype == DType::Int64 ? d < hi : d <= hi);  // false for NaN
  const int64_t i = value.to_int();
  if (dtype == DType::UInt8) return i <= 255 && i >= -255;
  if (dtype == DType::Int32) return i >= INT32_MIN && i <= INT32_MAX;
  return true;
}

std::string describe(Scalar value) {
  return value.kind() == Scalar::Kind::Floating ? std::to_string(value.to_double())
                                                : std::to_string(value.to_int());
}

// The value an integer `dtype` element holds for `value`: truncated toward zero, then
// wrapped modulo the dtype's width (C++20 defines narrowing conversions that way).
int64_t wrapped(Scalar value, DType dtype) {
  const int64_t i = value.to_int();
  if (dtype == DType::UInt8) return static_cast<uint8_t>(i);
  if (dtype == DType::Int32) return static_cast<int32_t>(i);
  return i;
}

}  // namespace

// -- unary with attributes (the plain pointwise ops are generated from api/ops.json) --

Tensor gelu(const Tensor& x, const std::string& approximate) {
  KILN_CHECK(approximate == "none" || approximate == "tanh",
             "gelu: approximate must be \"none\" or \"tanh\", got \"", approximate, "\"");
  const char* form = approximate == "tanh" ? "tanh" : "none";
  Tensor y = detail::pointwise_unary(OpId::gelu, "gelu", x, detail::Promote::Float,
                                     detail::attrs::gelu{.approximate = form}.pack());
  if (ag::needs_grad({&x}))
    ag::record("GeluBackward", y, {&x}, {x}, [form](const Saved& s, const Tensor& g) -> Grads {
      Tensor dx = empty_like(s[0]);
      Tensor gc = detail::cast(g, s[0].dtype());
      detail::dispatch(detail::attrs::gelu_backward{.approximate = form},
                       {gc.impl().get(), s[0].impl().get()}, {dx.impl().get()});
      return {dx};
    });
  return y;
}

namespace {
using Bound = std::optional<Scalar>;

bool is_nan_bound(const Bound& b) { return b && std::isnan(b->to_double()); }

// The dtype PyTorch clamps `dtype` in: each bound promotes as a scalar operand does
// (a floating bound makes an integer tensor float32, an integer bound a bool one int64).
DType clamp_dtype(DType dtype, const Bound& min, const Bound& max) {
  for (const Bound& b : {min, max})
    if (b) dtype = b->result_type(dtype);
  return dtype;
}

// Whether a bound is exactly the double clamp's attributes carry.
bool exact_as_double(const Bound& b) {
  if (!b || b->kind() != Scalar::Kind::Integral) return true;
  const double d = b->to_double();
  return d < 0x1p63 && static_cast<int64_t>(d) == b->to_int();
}

// Checks a clamp's bounds for a tensor of `dtype` (the dtype it is clamped in) and
// returns the kernel's attributes.
detail::attrs::clamp clamp_bounds(const char* name, DType dtype, const Bound& min,
                                  const Bound& max) {
  KILN_CHECK(min || max, name, ": at least one of min and max must be given");
  if (!is_nan_bound(min) && !is_nan_bound(max))  // PyTorch checks only without a NaN
    for (const Bound& b : {min, max})
      KILN_CHECK(!b || fits(*b, dtype), name, ": the bound ", describe(*b),
                 " cannot be converted to ", dtype, " without overflow");
  // c10 would wrap a negative bound into uint8 (-4 clamps to 252): never what was meant.
  for (const Bound& b : {min, max})
    KILN_CHECK(!b || dtype != DType::UInt8 || !(b->to_double() < 0), name, ": the bound ",
               describe(*b), " cannot be converted to uint8 (PyTorch 1.13 wraps it to ",
               b->to_int() & 255, ")");
  constexpr double inf = std::numeric_limits<double>::infinity();
  return {.min = min ? min->to_double() : -inf, .max = max ? max->to_double() : inf};
}
}  // namespace

Tensor clamp(const Tensor& x, Bound min, Bound max) {
  const auto& impl = detail::impl_of(x, "clamp");
  const DType dtype = clamp_dtype(impl.dtype, min, max);
  if (dtype != impl.dtype) return clamp(x.to(dtype), min, max);
  const detail::attrs::clamp bounds = clamp_bounds("clamp", dtype, min, max);
  const double lo = bounds.min, hi = bounds.max;
  Tensor y;
  if (is_nan_bound(min) || is_nan_bound(max)) {
    // A NaN bound makes every element NaN (PyTorch); the kernel's max/min would
    // ignore it.
    y = full_like(x, std::numeric_limits<double>::quiet_NaN());
  } else if (dtype == DType::UInt8) {  // no uint8 kernel: clamped in int32, exact
    return clamp(x.to(DType::Int32), min, max).to(DType::UInt8);
  } else if (is_integral(dtype) && (!exact_as_double(min) || !exact_as_double(max))) {
    // An int64 bound beyond 2^53: compared exactly, as an int64 operand.
    y = x;
    if (min) y = maximum(y, detail::scalar_on(x, *min, dtype));
    if (max) y = minimum(y, detail::scalar_on(x, *max, dtype));
    return y;
  } else {
    y = detail::pointwise_unary(OpId::clamp, "clamp", x, detail::Promote::Arith, bounds.pack());
  }
  if (ag::needs_grad({&x}))
    ag::record("ClampBackward", y, {&x}, {x}, [lo, hi](const Saved& s, const Tensor& g) -> Grads {
      return {where(logical_and(s[0] >= lo, s[0] <= hi), g, 0.0)};
    });
  return y;
}

// -- selection -------------------------------------------------------------------------

Tensor masked_fill(const Tensor& x, const Tensor& mask, Scalar value) {
  detail::impl_of(x, "masked_fill");
  detail::impl_of(mask, "masked_fill");
  KILN_CHECK(mask.dtype() == DType::Bool, "masked_fill: the mask must be a bool tensor, got ",
             mask.dtype(), " (compare it, e.g. x > 0)");
  KILN_CHECK(
      IntArrayRef(detail::broadcast_shapes(x.shape(), mask.shape(), "masked_fill")) == x.shape(),
      "masked_fill: a mask of shape ", mask.shape(), " does not broadcast to the shape ",
      x.shape());
  // The value takes x's dtype (PyTorch's rule), so where() keeps it.
  return where(mask, scalar_tensor(value, TensorOptions(x.dtype()).device(x.device())), x);
}

Tensor where(const Tensor& condition, const Tensor& a, const Tensor& b) {
  detail::check_same_device("where", {&condition, &a, &b});
  KILN_CHECK(condition.dtype() == DType::Bool, "where: the condition must be a bool tensor, got ",
             condition.dtype(), " (compare it, e.g. x > 0)");
  DType dtype = detail::result_type(a, b);
  auto shape = detail::broadcast_shapes(
      IntArrayRef(detail::broadcast_shapes(condition.shape(), a.shape(), "where")), b.shape(),
      "where");
  Tensor c = detail::expand_to(condition, shape);
  Tensor ca = detail::expand_to(detail::cast(a, dtype), shape);
  Tensor cb = detail::expand_to(detail::cast(b, dtype), shape);
  Tensor out = detail::empty_on(a, shape, dtype);
  detail::dispatch(OpId::where, {c.impl().get(), ca.impl().get(), cb.impl().get()},
                   {out.impl().get()});
  if (ag::needs_grad({&a, &b}))
    ag::record(
        "WhereBackward", out, {&a, &b}, {condition},
        [sa = a.shape().vec(), sb = b.shape().vec()](const Saved& s, const Tensor& g) -> Grads {
          return {ag::sum_to(where(s[0], g, 0.0), sa), ag::sum_to(where(s[0], 0.0, g), sb)};
        });
  return out;
}

namespace {
// where's number operand is a value written into the result: it must fit (PyTorch).
void check_where_value(const Tensor& other, Scalar value) {
  const DType dtype = value.result_type(detail::impl_of(other, "where").dtype);
  KILN_CHECK(fits(value, dtype), "where: the value ", describe(value), " cannot be converted to ",
             dtype, " without overflow");
}
}  // namespace

Tensor where(const Tensor& condition, const Tensor& a, Scalar b) {
  check_where_value(a, b);
  return where(condition, a, detail::scalar_operand(a, b, "where"));
}

Tensor where(const Tensor& condition, Scalar a, const Tensor& b) {
  check_where_value(b, a);
  return where(condition, detail::scalar_operand(b, a, "where"), b);
}

// -- operators -------------------------------------------------------------------------

Tensor operator-(const Tensor& a) { return neg(a); }
Tensor operator+(const Tensor& a, const Tensor& b) { return add(a, b); }
Tensor operator-(const Tensor& a, const Tensor& b) { return sub(a, b); }
Tensor operator*(const Tensor& a, const Tensor& b) { return mul(a, b); }
Tensor operator/(const Tensor& a, const Tensor& b) { return div(a, b); }
Tensor operator==(const Tensor& a, const Tensor& b) { return eq(a, b); }
Tensor operator!=(const Tensor& a, const Tensor& b) { return ne(a, b); }
Tensor operator<(const Tensor& a, const Tensor& b) { return lt(a, b); }
Tensor operator<=(const Tensor& a, const Tensor& b) { return le(a, b); }
Tensor operator>(const Tensor& a, const Tensor& b) { return gt(a, b); }
Tensor operator>=(const Tensor& a, const Tensor& b) { return ge(a, b); }

#define KILN_SCALAR_OPERATOR(op, fn, promote)                            \
  Tensor operator op(const Tensor& a, Scalar b) {                        \
    return with_scalar(&fn, #fn, a, b, false, detail::Promote::promote); \
  }                                                                      \
  Tensor operator op(Scalar a, const Tensor& b) {                        \
    return with_scalar(&fn, #fn, b, a, true, detail::Promote::promote);  \
  }
KILN_SCALAR_OPERATOR(+, add, Arith)
KILN_SCALAR_OPERATOR(-, sub, Arith)
KILN_SCALAR_OPERATOR(*, mul, Arith)
KILN_SCALAR_OPERATOR(/, div, Float)
#undef KILN_SCALAR_OPERATOR
#define KILN_SCALAR_COMPARISON(op, fn) \
  Tensor operator op(const Tensor& a, Scalar b) { return with_scalar(&fn, #fn, a, b, false); }
KILN_SCALAR_COMPARISON(==, eq)
KILN_SCALAR_COMPARISON(!=, ne)
KILN_SCALAR_COMPARISON(<, lt)
KILN_SCALAR_COMPARISON(<=, le)
KILN_SCALAR_COMPARISON(>, gt)
KILN_SCALAR_COMPARISON(>=, ge)
#undef KILN_SCALAR_COMPARISON

// -- methods -----------------------------------------------------------------------------

Tensor Tensor::gelu(const std::string& approximate) const { return kiln::gelu(*this, approximate); }
Tensor Tensor::clamp(std::optional<Scalar> min, std::optional<Scalar> max) const {
  return kiln::clamp(*this, min, max);
}
Tensor& Tensor::clamp_(std::optional<Scalar> min, std::optional<Scalar> max) {
  const auto& impl = detail::impl_of(*this, "clamp_");
  const DType dtype = clamp_dtype(impl.dtype, min, max);
  KILN_CHECK(dtype == impl.dtype, "clamp_: the result type ", dtype,
             " cannot be stored in place in a ", impl.dtype, " tensor");
  const detail::attrs::clamp bounds = clamp_bounds("clamp_", dtype, min, max);
  if (is_nan_bound(min) || is_nan_bound(max))
    return fill_(std::numeric_limits<double>::quiet_NaN());
  if (dtype == DType::UInt8 ||
      (is_integral(dtype) && (!exact_as_double(min) || !exact_as_double(max))))
    return copy_(kiln::clamp(*this, min, max));
  return detail::pointwise_unary_inplace(OpId::clamp, "clamp_", *this, detail::Promote::Arith,
                                         bounds.pack());
}
Tensor Tensor::masked_fill(const Tensor& mask, Scalar value) const {
  return kiln::masked_fill(*this, mask, value);
}
Tensor& Tensor::masked_fill_(const Tensor& mask, Scalar value) {
  detail::impl_of(*this, "masked_fill_");
  return copy_(kiln::masked_fill(*this, mask, value));
}

namespace detail {

void fill_with(Tensor& t, Scalar value, const char* name, bool check) {
  const auto& impl = impl_of(t, name);
  KILN_CHECK(!check || fits(value, impl.dtype), name, ": the value ", describe(value),
             " cannot be converted to ", impl.dtype, " without overflow");
  double v = value.to_double();
  if (is_integral(impl.dtype)) {
    const int64_t i = wrapped(value, impl.dtype);
    if (i > (int64_t{1} << 53) || i < -(int64_t{1} << 53)) {
      // Beyond float64's exact integers: kiln.fill's attribute is a float64, so the
      // exact value is copied in from the host instead.
      t.copy_(from_vector<int64_t>({i}, {1}, TensorOptions(DType::Int64).device(t.device()))
                  .reshape({}));
      return;
    }
    v = static_cast<double>(i);
  }
  dispatch(attrs::fill{.value = v}, {}, {&impl});
}

}  // namespace detail

Tensor& Tensor::fill_(Scalar value) {
  detail::impl_of(*this, "fill_");
  ag::check_inplace(*this, "fill_");
  detail::fill_with(*this, value, "fill_", /*check=*/true);
  return *this;
}

}  // namespace kiln
