// Complex tensors (ops/complex.h): the views between complex and real pairs, and the
// complex spellings of copy, fill, the arithmetic, sum/mean and matmul, all made of real
// ops on the pairs' components.

#include "ops/complex.h"

#include <algorithm>

#include "autograd/record.h"
#include "kiln/autograd.h"
#include "kiln/ops.h"
#include "ops/common.h"

namespace kiln {

namespace ag = detail::autograd_impl;
using Grads = std::vector<Tensor>;
using Saved = std::vector<Tensor>;

namespace detail {

bool any_complex(std::initializer_list<const Tensor*> operands) {
  return std::any_of(operands.begin(), operands.end(),
                     [](const Tensor* t) { return t->defined() && is_complex(t->dtype()); });
}

namespace {

DType complex_result(const char* name, const Tensor& a, const Tensor& b) {
  check_same_device(name, {&a, &b});
  const DType d = result_type(a, b);
  KILN_CHECK(is_complex(d), name, ": expected a complex operand, got ", a.dtype(), " and ",
             b.dtype());
  return d;
}

// |x| of complex x, in float64 for complex64 (so that re² + im² cannot overflow float32's
// range); its gradient is g·x/|x|, 0 at 0 (PyTorch's sgn).
Tensor complex_abs(const Tensor& x) {
  Tensor out;
  {
    NoGradGuard no_grad;
    const DType wide = x.dtype() == DType::Complex64 ? DType::Float64 : real_dtype(x.dtype());
    Tensor re = real(x).to(wide), im = imag(x).to(wide);
    out = sqrt(re * re + im * im).to(real_dtype(x.dtype()));
  }
  if (ag::needs_grad({&x}))
    ag::record("AbsBackward", out, {&x}, {x, out}, [](const Saved& s, const Tensor& g) -> Grads {
      Tensor r = where(s[1] == 0.0, 1.0, s[1]);
      return {complex(g * real(s[0]) / r, g * imag(s[0]) / r)};
    });
  return out;
}

}  // namespace

Tensor complex_pointwise(OpId op, const char* name, const Tensor& x) {
  impl_of(x, name);
  switch (op) {
    case OpId::neg:
      return view_as_complex(neg(view_as_real(x)));
    case OpId::abs:
      return complex_abs(x);
    default:
      KILN_FAIL(name, ": not supported for complex tensors (", x.dtype(), ")");
  }
}

Tensor complex_pointwise(OpId op, const char* name, const Tensor& a, const Tensor& b) {
  impl_of(a, name);
  impl_of(b, name);
  const DType d = complex_result(name, a, b);
  const DType r = real_dtype(d);
  const bool real_a = !is_complex(a.dtype()), real_b = !is_complex(b.dtype());
  switch (op) {
    case OpId::add:
    case OpId::sub: {
      // Componentwise on the pairs; a real operand only moves the real parts.
      const auto shape = broadcast_shapes(a.shape(), b.shape(), name);
      Tensor pa = view_as_real(a.to(d).expand(shape));
      Tensor pb = view_as_real(b.to(d).expand(shape));
      return view_as_complex(op == OpId::add ? pa + pb : pa - pb);
    }
    case OpId::mul:
      if (real_b) return complex(real(a) * b.to(r), imag(a) * b.to(r));
      if (real_a) return complex(a.to(r) * real(b), a.to(r) * imag(b));
      return complex(real(a) * real(b) - imag(a) * imag(b), real(a) * imag(b) + imag(a) * real(b));
    case OpId::div: {
      if (real_b) return complex(real(a) / b.to(r), imag(a) / b.to(r));
      // a / b = a·conj(b) / |b|² (not scaled: |b|² overflows past sqrt of the dtype's max).
      Tensor br = real(b), bi = imag(b);
      Tensor den = br * br + bi * bi;
      if (real_a) return complex(a.to(r) * br / den, -(a.to(r) * bi) / den);
      Tensor ar = real(a), ai = imag(a);
      return complex((ar * br + ai * bi) / den, (ai * br - ar * bi) / den);
    }
    default:
      KILN_FAIL(name, ": not supported for complex tensors (", a.dtype(), " and ", b.dtype(), ")");
  }
}

Tensor& complex_pointwise_inplace(OpId op, const char* name, Tensor& self, const Tensor& other) {
  ag::check_inplace(self, name, &other);
  Tensor result;
  {
    NoGradGuard no_grad;
    result = complex_pointwise(op, name, self, other);
  }
  KILN_CHECK(result.dtype() == self.dtype(), name, ": the result type ", result.dtype(),
             " cannot be stored in place in a ", self.dtype(), " tensor");
  KILN_CHECK(IntArrayRef(result.shape()) == self.shape(), name, ": the operand of shape ",
             other.shape(), " does not broadcast to the in-place shape ", self.shape());
  dispatch(OpId::copy, {result.impl().get()}, {self.impl().get()});
  return self;
}

Tensor complex_reduce(OpId op, const Tensor& x, IntArrayRef dims, bool keepdim) {
  const char* name = op == OpId::sum ? "sum" : "mean";
  if (x.dim() == 0) return x.clone();  // one element: its sum and its mean
  std::vector<int64_t> wrapped;
  for (int64_t d : dims) wrapped.push_back(wrap_dim(d, x.dim(), name));
  if (dims.empty())
    for (int64_t d = 0; d < x.dim(); ++d) wrapped.push_back(d);
  Tensor pairs = view_as_real(x);
  Tensor r = op == OpId::sum ? sum(pairs, wrapped, keepdim) : mean(pairs, wrapped, keepdim);
  return view_as_complex(r.contiguous());
}

Tensor complex_matmul(const Tensor& a, const Tensor& b) {
  const DType d = complex_result("matmul", a, b);
  const DType r = real_dtype(d);
  if (!is_complex(a.dtype())) return complex(matmul(a.to(r), real(b)), matmul(a.to(r), imag(b)));
  if (!is_complex(b.dtype())) return complex(matmul(real(a), b.to(r)), matmul(imag(a), b.to(r)));
  Tensor ar = real(a.to(d)), ai = imag(a.to(d)), br = real(b.to(d)), bi = imag(b.to(d));
  return complex(matmul(ar, br) - matmul(ai, bi), matmul(ar, bi) + matmul(ai, br));
}

}  // namespace detail

// -- the public functions ---------------------------------------------------------------

Tensor view_as_real(const Tensor& x) {
  const auto& impl = detail::impl_of(x, "view_as_real");
  KILN_CHECK(is_complex(impl.dtype), "view_as_real: expected a complex tensor, got ", impl.dtype);
  Tensor out(detail::pairs_impl(impl));
  if (ag::needs_grad({&x}))
    ag::record("ViewAsRealBackward", out, {&x}, {}, [](const Saved&, const Tensor& g) -> Grads {
      return {view_as_complex(g.contiguous())};
    });
  return out;
}

Tensor view_as_complex(const Tensor& x) {
  const auto& impl = detail::impl_of(x, "view_as_complex");
  KILN_CHECK(impl.dtype == DType::Float32 || impl.dtype == DType::Float64,
             "view_as_complex: expected a float32 or float64 tensor, got ", impl.dtype);
  KILN_CHECK(impl.dim() >= 1 && impl.shape.back() == 2,
             "view_as_complex: the last dimension must have size 2 (real, imaginary), got shape ",
             x.shape());
  KILN_CHECK(impl.strides.back() == 1,
             "view_as_complex: the last dimension must have stride 1, got strides ",
             IntArrayRef(impl.strides));
  const bool even =
      impl.offset % 2 == 0 && std::all_of(impl.strides.begin(), impl.strides.end() - 1,
                                          [](int64_t s) { return s % 2 == 0; });
  KILN_CHECK(even,
             "view_as_complex: every stride but the last, and the storage offset, must be "
             "even (a pair may not straddle two elements); call .contiguous() first (strides ",
             IntArrayRef(impl.strides), ", offset ", impl.offset, ")");
  auto out_impl = std::make_shared<detail::TensorImpl>();
  out_impl->storage = impl.storage;
  out_impl->shape.assign(impl.shape.begin(), impl.shape.end() - 1);
  for (size_t d = 0; d + 1 < impl.strides.size(); ++d)
    out_impl->strides.push_back(impl.strides[d] / 2);
  out_impl->offset = impl.offset / 2;
  out_impl->numel = impl.numel / 2;
  out_impl->dtype = complex_dtype(impl.dtype);
  Tensor out(std::move(out_impl));
  if (ag::needs_grad({&x}))
    ag::record("ViewAsComplexBackward", out, {&x}, {},
               [](const Saved&, const Tensor& g) -> Grads { return {view_as_real(g)}; });
  return out;
}

Tensor real(const Tensor& x) {
  detail::impl_of(x, "real");
  return is_complex(x.dtype()) ? view_as_real(x).select(-1, 0) : x;
}

Tensor imag(const Tensor& x) {
  detail::impl_of(x, "imag");
  KILN_CHECK(is_complex(x.dtype()), "imag: expected a complex tensor, got ", x.dtype());
  return view_as_real(x).select(-1, 1);
}

Tensor complex(const Tensor& re, const Tensor& im) {
  detail::check_same_device("complex", {&re, &im});
  KILN_CHECK(
      re.dtype() == im.dtype() && (re.dtype() == DType::Float32 || re.dtype() == DType::Float64),
      "complex: expected real and imag of one dtype, float32 or float64, got ", re.dtype(), " and ",
      im.dtype());
  const auto shape = detail::broadcast_shapes(re.shape(), im.shape(), "complex");
  return view_as_complex(stack({re.expand(shape), im.expand(shape)}, -1));
}

Tensor polar(const Tensor& abs, const Tensor& angle) {
  return complex(abs * cos(angle), abs * sin(angle));
}

Tensor conj(const Tensor& x) {
  detail::impl_of(x, "conj");
  return is_complex(x.dtype()) ? complex(real(x), -imag(x)) : x;
}

Tensor angle(const Tensor& x) {
  detail::impl_of(x, "angle");
  if (is_complex(x.dtype())) return atan2(imag(x), real(x));
  // A real number's angle is 0, or π when it is negative (NaN stays NaN).
  Tensor xf = is_floating(x.dtype()) ? x : x.to(DType::Float32);
  return atan2(zeros_like(xf), xf);
}

}  // namespace kiln
