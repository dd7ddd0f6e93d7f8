// Elementwise ops: type promotion, broadcasting and in-place rules live here; the
// arithmetic lives in the plugins.

#include <cmath>
#include <limits>

#include "autograd/record.h"
#include "kiln/ops.h"
#include "ops/common.h"
#include "runtime/registry.h"

namespace kiln {

using detail::OpId;
namespace ag = detail::autograd_impl;
using Grads = std::vector<Tensor>;
using Saved = std::vector<Tensor>;

namespace {

// How an op's operand dtypes become its computation and result dtypes.
enum class Kind {
  Arith,    // promote; result = promoted (float, int)
  Float,    // promote, integers and bool to float32; result = that
  Compare,  // promote; result bool
  Logical,  // promote; result bool
};

DType compute_dtype(Kind kind, DType promoted) {
  if (kind == Kind::Float && !is_floating(promoted)) return DType::Float32;
  return promoted;
}

DType result_dtype(Kind kind, DType computed) {
  return kind == Kind::Compare || kind == Kind::Logical ? DType::Bool : computed;
}

void check_not_bool(const char* op, DType dtype) {
  KILN_CHECK(dtype != DType::Bool, op,
             ": not supported for bool tensors (convert with "
             ".to(kiln::int64) or use logical_and/logical_or)");
}

Tensor unary(OpId op, const char* name, const Tensor& x, Kind kind,
             std::initializer_list<kiln_attr> attrs = {}) {
  const auto& impl = detail::impl_of(x, name);
  DType dtype = compute_dtype(kind, impl.dtype);
  if (kind == Kind::Arith) check_not_bool(name, dtype);
  Tensor in = detail::cast(x, dtype);
  Tensor out = detail::empty_on(x, x.shape(), result_dtype(kind, dtype));
  detail::dispatch(op, {in.impl().get()}, {out.impl().get()}, attrs);
  return out;
}

Tensor binary(OpId op, const char* name, const Tensor& a, const Tensor& b, Kind kind) {
  detail::check_same_device(name, {&a, &b});
  DType dtype = compute_dtype(kind, promote_types(a.dtype(), b.dtype()));
  if (kind == Kind::Arith) check_not_bool(name, dtype);
  Tensor ca = detail::cast(a, dtype), cb = detail::cast(b, dtype);
  DType out_dtype = result_dtype(kind, dtype);
  Tensor out;
  if (a.shape() == b.shape()) [[likely]] {
    out = detail::empty_on(a, a.shape(), out_dtype);
  } else {
    auto shape = detail::broadcast_shapes(a.shape(), b.shape(), name);
    out = detail::empty_on(a, shape, out_dtype);
    ca = detail::expand_to(ca, shape);
    cb = detail::expand_to(cb, shape);
  }
  detail::dispatch(op, {ca.impl().get(), cb.impl().get()}, {out.impl().get()});
  return out;
}

// The gradients of the differentiable binary ops, reduced to each operand's shape.
Tensor binary_op(OpId op, const char* name, const Tensor& a, const Tensor& b, Kind kind) {
  Tensor out = binary(op, name, a, b, kind);
  if (kind == Kind::Compare || kind == Kind::Logical || !ag::needs_grad({&a, &b})) return out;
  auto sa = a.shape().vec(), sb = b.shape().vec();
  bool ga = ag::requires_grad(a), gb = ag::requires_grad(b);
  auto reduce = [sa, sb, ga, gb](Tensor da, Tensor db) -> Grads {
    return {ga && da.defined() ? ag::sum_to(da, sa) : Tensor(),
            gb && db.defined() ? ag::sum_to(db, sb) : Tensor()};
  };
  switch (op) {
    case OpId::add:
      ag::record("AddBackward", out, {&a, &b}, {},
                 [reduce](const Saved&, const Tensor& g) { return reduce(g, g); });
      break;
    case OpId::sub:
      ag::record("SubBackward", out, {&a, &b}, {}, [reduce, gb](const Saved&, const Tensor& g) {
        return reduce(g, gb ? -g : Tensor());
      });
      break;
    case OpId::mul:
      ag::record("MulBackward", out, {&a, &b}, {ga ? b : Tensor(), gb ? a : Tensor()},
                 [reduce, ga, gb](const Saved& s, const Tensor& g) {
                   return reduce(ga ? g * s[0] : Tensor(), gb ? g * s[1] : Tensor());
                 });
      break;
    case OpId::div:
      ag::record("DivBackward", out, {&a, &b}, {b, gb ? out : Tensor()},
                 [reduce, gb](const Saved& s, const Tensor& g) {
                   Tensor da = g / s[0];
                   return reduce(da, gb ? -(da * s[1]) : Tensor());
                 });
      break;
    case OpId::pow:
      ag::record("PowBackward", out, {&a, &b}, {a, b, gb ? out : Tensor()},
                 [reduce, ga, gb](const Saved& s, const Tensor& g) {
                   const Tensor &x = s[0], &e = s[1];
                   Tensor da = ga ? g * e * kiln::pow(x, e - 1) : Tensor();
                   // d/de x^e = x^e ln x, taken as 0 where x == 0 and e >= 0 (PyTorch's rule).
                   Tensor db = gb ? where(logical_and(x == 0, e >= 0), 0.0, g * s[2] * kiln::log(x))
                                  : Tensor();
                   return reduce(da, db);
                 });
      break;
    case OpId::maximum:
    case OpId::minimum: {
      bool is_max = op == OpId::maximum;
      ag::record(is_max ? "MaximumBackward" : "MinimumBackward", out, {&a, &b}, {a, b},
                 [reduce, is_max](const Saved& s, const Tensor& g) {
                   // Ties split the gradient evenly, as PyTorch does.
                   Tensor wins = (is_max ? s[0] > s[1] : s[0] < s[1]).to(g.dtype());
                   Tensor share = wins + (s[0] == s[1]).to(g.dtype()) * 0.5;
                   return reduce(g * share, g * (1.0 - share));
                 });
      break;
    }
    default:
      KILN_FAIL(name, ": internal error: no gradient formula");
  }
  return out;
}

// `a op scalar` and `scalar op a` with PyTorch's scalar promotion.
Tensor binary_scalar(OpId op, const char* name, const Tensor& a, Scalar s, Kind kind,
                     bool scalar_first) {
  const auto& impl = detail::impl_of(a, name);
  Tensor st = detail::scalar_on(a, s, s.result_type(impl.dtype));
  return scalar_first ? binary_op(op, name, st, a, kind) : binary_op(op, name, a, st, kind);
}

// self = self op other, computed in self's dtype.
Tensor& binary_inplace(OpId op, const char* name, Tensor& self, const Tensor& other, Kind kind) {
  detail::check_same_device(name, {&self, &other});
  ag::check_inplace(self, name, &other);
  const auto& impl = *self.impl();
  DType dtype = impl.dtype;
  DType promoted = compute_dtype(kind, promote_types(dtype, other.dtype()));
  KILN_CHECK(promote_types(promoted, dtype) == dtype, name, ": the result type ", promoted,
             " cannot be stored in place in a ", dtype, " tensor");
  check_not_bool(name, dtype);
  KILN_CHECK(!impl.has_internal_overlap(), name,
             ": cannot write in place into a tensor whose elements overlap (an expanded "
             "view); call .contiguous() first");
  Tensor b = detail::cast(other, dtype);
  if (b.shape() != self.shape()) {
    auto shape = detail::broadcast_shapes(self.shape(), other.shape(), name);
    KILN_CHECK(IntArrayRef(shape) == self.shape(), name, ": the operand of shape ", other.shape(),
               " does not broadcast to the in-place shape ", self.shape());
    b = b.expand(self.shape());
  }
  detail::dispatch(op, {&impl, b.impl().get()}, {&impl});
  return self;
}

Tensor& binary_inplace_scalar(OpId op, const char* name, Tensor& self, Scalar s, Kind kind) {
  const auto& impl = detail::impl_of(self, name);
  Tensor st = detail::scalar_on(self, s, s.result_type(impl.dtype));
  return binary_inplace(op, name, self, st, kind);
}

}  // namespace

// -- unary ---------------------------------------------------------------------------

// Unary ops with their gradients; `saved` is what the formula reads (x or y).
template <typename F>
Tensor unary_op(OpId op, const char* name, const char* node, const Tensor& x, Kind kind,
                bool save_output, F grad, std::initializer_list<kiln_attr> attrs = {}) {
  Tensor y = unary(op, name, x, kind, attrs);
  if (ag::needs_grad({&x}))
    ag::record(node, y, {&x}, {save_output ? y : x},
               [grad](const Saved& s, const Tensor& g) -> Grads { return {grad(g, s[0])}; });
  return y;
}

Tensor neg(const Tensor& x) {
  return unary_op(OpId::neg, "neg", "NegBackward", x, Kind::Arith, false,
                  [](const Tensor& g, const Tensor&) { return -g; });
}
Tensor abs(const Tensor& x) {
  return unary_op(OpId::abs, "abs", "AbsBackward", x, Kind::Arith, false,
                  [](const Tensor& g, const Tensor& x) { return g * kiln::sign(x); });
}
Tensor sign(const Tensor& x) { return unary(OpId::sign, "sign", x, Kind::Arith); }
Tensor exp(const Tensor& x) {
  return unary_op(OpId::exp, "exp", "ExpBackward", x, Kind::Float, true,
                  [](const Tensor& g, const Tensor& y) { return g * y; });
}
Tensor log(const Tensor& x) {
  return unary_op(OpId::log, "log", "LogBackward", x, Kind::Float, false,
                  [](const Tensor& g, const Tensor& x) { return g / x; });
}
Tensor sqrt(const Tensor& x) {
  return unary_op(OpId::sqrt, "sqrt", "SqrtBackward", x, Kind::Float, true,
                  [](const Tensor& g, const Tensor& y) { return g / (y * 2.0); });
}
Tensor rsqrt(const Tensor& x) {
  return unary_op(OpId::rsqrt, "rsqrt", "RsqrtBackward", x, Kind::Float, true,
                  [](const Tensor& g, const Tensor& y) { return g * (y * y * y * -0.5); });
}
Tensor sin(const Tensor& x) {
  return unary_op(OpId::sin, "sin", "SinBackward", x, Kind::Float, false,
                  [](const Tensor& g, const Tensor& x) { return g * kiln::cos(x); });
}
Tensor cos(const Tensor& x) {
  return unary_op(OpId::cos, "cos", "CosBackward", x, Kind::Float, false,
                  [](const Tensor& g, const Tensor& x) { return g * -kiln::sin(x); });
}
Tensor tanh(const Tensor& x) {
  return unary_op(OpId::tanh, "tanh", "TanhBackward", x, Kind::Float, true,
                  [](const Tensor& g, const Tensor& y) { return g * (1.0 - y * y); });
}
Tensor sigmoid(const Tensor& x) {
  return unary_op(OpId::sigmoid, "sigmoid", "SigmoidBackward", x, Kind::Float, true,
                  [](const Tensor& g, const Tensor& y) { return g * (y * (1.0 - y)); });
}
Tensor relu(const Tensor& x) {
  // One fused kernel (kiln.relu_backward) instead of where(y > 0, g, 0): that took a
  // comparison, a bool tensor, a 0-d zero and a three-operand select per call.
  return unary_op(
      OpId::relu, "relu", "ReluBackward", x, Kind::Arith, true,
      [](const Tensor& g, const Tensor& y) {
        Tensor dx = detail::empty_on(y, y.shape(), y.dtype());
        Tensor gc = detail::cast(g, y.dtype());
        detail::dispatch(OpId::relu_backward, {gc.impl().get(), y.impl().get()}, {dx.impl().get()});
        return dx;
      });
}
Tensor logical_not(const Tensor& x) {
  return unary(OpId::logical_not, "logical_not", x, Kind::Logical);
}

Tensor gelu(const Tensor& x, const std::string& approximate) {
  KILN_CHECK(approximate == "none" || approximate == "tanh",
             "gelu: approximate must be "
             "\"none\" or \"tanh\", got \"",
             approximate, "\"");
  bool tanh_form = approximate == "tanh";
  return unary_op(OpId::gelu, "gelu", "GeluBackward", x, Kind::Float, false,
                  [tanh_form](const Tensor& g, const Tensor& x) {
                    Tensor dx = empty_like(x);
                    Tensor gc = detail::cast(g, x.dtype());
                    detail::dispatch(
                        OpId::gelu_backward, {gc.impl().get(), x.impl().get()}, {dx.impl().get()},
                        {detail::string_attr("approximate", tanh_form ? "tanh" : "none")});
                    return dx;
                  },
                  {detail::string_attr("approximate", approximate.c_str())});
}

Tensor clamp(const Tensor& x, std::optional<double> min, std::optional<double> max) {
  KILN_CHECK(min || max, "clamp: at least one of min and max must be given");
  constexpr double inf = std::numeric_limits<double>::infinity();
  double lo = min.value_or(-inf), hi = max.value_or(inf);
  return unary_op(OpId::clamp, "clamp", "ClampBackward", x, Kind::Arith, false,
                  [lo, hi](const Tensor& g, const Tensor& x) {
                    return where(logical_and(x >= lo, x <= hi), g, 0.0);
                  },
                  {detail::float_attr("min", lo), detail::float_attr("max", hi)});
}

// -- binary --------------------------------------------------------------------------

#define KILN_BINARY(fn, kind) \
  Tensor fn(const Tensor& a, const Tensor& b) { return binary_op(OpId::fn, #fn, a, b, Kind::kind); }
KILN_BINARY(add, Arith)
KILN_BINARY(sub, Arith)
KILN_BINARY(mul, Arith)
KILN_BINARY(div, Float)
KILN_BINARY(pow, Float)
KILN_BINARY(maximum, Arith)
KILN_BINARY(minimum, Arith)
KILN_BINARY(eq, Compare)
KILN_BINARY(ne, Compare)
KILN_BINARY(lt, Compare)
KILN_BINARY(le, Compare)
KILN_BINARY(gt, Compare)
KILN_BINARY(ge, Compare)
KILN_BINARY(logical_and, Logical)
KILN_BINARY(logical_or, Logical)
#undef KILN_BINARY

Tensor pow(const Tensor& a, Scalar b) {
  return binary_scalar(OpId::pow, "pow", a, b, Kind::Float, false);
}

Tensor where(const Tensor& condition, const Tensor& a, const Tensor& b) {
  detail::check_same_device("where", {&condition, &a, &b});
  KILN_CHECK(condition.dtype() == DType::Bool, "where: the condition must be a bool tensor, got ",
             condition.dtype(), " (compare it, e.g. x > 0)");
  DType dtype = promote_types(a.dtype(), b.dtype());
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

Tensor where(const Tensor& condition, const Tensor& a, Scalar b) {
  detail::impl_of(a, "where");
  return where(condition, a, detail::scalar_on(a, b, b.result_type(a.dtype())));
}

Tensor where(const Tensor& condition, Scalar a, const Tensor& b) {
  detail::impl_of(b, "where");
  return where(condition, detail::scalar_on(b, a, a.result_type(b.dtype())), b);
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

#define KILN_SCALAR_OPERATOR(op, id, name, kind)                   \
  Tensor operator op(const Tensor& a, Scalar b) {                  \
    return binary_scalar(OpId::id, name, a, b, Kind::kind, false); \
  }
KILN_SCALAR_OPERATOR(+, add, "add", Arith)
KILN_SCALAR_OPERATOR(-, sub, "sub", Arith)
KILN_SCALAR_OPERATOR(*, mul, "mul", Arith)
KILN_SCALAR_OPERATOR(/, div, "div", Float)
KILN_SCALAR_OPERATOR(==, eq, "eq", Compare)
KILN_SCALAR_OPERATOR(!=, ne, "ne", Compare)
KILN_SCALAR_OPERATOR(<, lt, "lt", Compare)
KILN_SCALAR_OPERATOR(<=, le, "le", Compare)
KILN_SCALAR_OPERATOR(>, gt, "gt", Compare)
KILN_SCALAR_OPERATOR(>=, ge, "ge", Compare)
#undef KILN_SCALAR_OPERATOR

Tensor operator+(Scalar a, const Tensor& b) {
  return binary_scalar(OpId::add, "add", b, a, Kind::Arith, true);
}
Tensor operator-(Scalar a, const Tensor& b) {
  return binary_scalar(OpId::sub, "sub", b, a, Kind::Arith, true);
}
Tensor operator*(Scalar a, const Tensor& b) {
  return binary_scalar(OpId::mul, "mul", b, a, Kind::Arith, true);
}
Tensor operator/(Scalar a, const Tensor& b) {
  return binary_scalar(OpId::div, "div", b, a, Kind::Float, true);
}

// -- methods -----------------------------------------------------------------------------

Tensor Tensor::neg() const { return kiln::neg(*this); }
Tensor Tensor::abs() const { return kiln::abs(*this); }
Tensor Tensor::sign() const { return kiln::sign(*this); }
Tensor Tensor::exp() const { return kiln::exp(*this); }
Tensor Tensor::log() const { return kiln::log(*this); }
Tensor Tensor::sqrt() const { return kiln::sqrt(*this); }
Tensor Tensor::rsqrt() const { return kiln::rsqrt(*this); }
Tensor Tensor::sin() const { return kiln::sin(*this); }
Tensor Tensor::cos() const { return kiln::cos(*this); }
Tensor Tensor::tanh() const { return kiln::tanh(*this); }
Tensor Tensor::sigmoid() const { return kiln::sigmoid(*this); }
Tensor Tensor::relu() const { return kiln::relu(*this); }
Tensor Tensor::gelu(const std::string& approximate) const { return kiln::gelu(*this, approximate); }
Tensor Tensor::logical_not() const { return kiln::logical_not(*this); }
Tensor Tensor::pow(const Tensor& e) const { return kiln::pow(*this, e); }
Tensor Tensor::pow(Scalar e) const { return kiln::pow(*this, e); }
Tensor Tensor::clamp(std::optional<double> min, std::optional<double> max) const {
  return kiln::clamp(*this, min, max);
}

Tensor& Tensor::add_(const Tensor& o) {
  return binary_inplace(OpId::add, "add_", *this, o, Kind::Arith);
}
Tensor& Tensor::sub_(const Tensor& o) {
  return binary_inplace(OpId::sub, "sub_", *this, o, Kind::Arith);
}
Tensor& Tensor::mul_(const Tensor& o) {
  return binary_inplace(OpId::mul, "mul_", *this, o, Kind::Arith);
}
Tensor& Tensor::div_(const Tensor& o) {
  return binary_inplace(OpId::div, "div_", *this, o, Kind::Float);
}
Tensor& Tensor::add_(Scalar o) {
  return binary_inplace_scalar(OpId::add, "add_", *this, o, Kind::Arith);
}
Tensor& Tensor::sub_(Scalar o) {
  return binary_inplace_scalar(OpId::sub, "sub_", *this, o, Kind::Arith);
}
Tensor& Tensor::mul_(Scalar o) {
  return binary_inplace_scalar(OpId::mul, "mul_", *this, o, Kind::Arith);
}
Tensor& Tensor::div_(Scalar o) {
  return binary_inplace_scalar(OpId::div, "div_", *this, o, Kind::Float);
}

Tensor& Tensor::fill_(Scalar value) {
  const auto& impl = detail::impl_of(*this, "fill_");
  ag::check_inplace(*this, "fill_");
  detail::dispatch(OpId::fill, {}, {&impl}, {detail::float_attr("value", value.to_double())});
  return *this;
}

}  // namespace kiln
