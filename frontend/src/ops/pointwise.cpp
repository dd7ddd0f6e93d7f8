// The pointwise ops' shared implementation (ops/pointwise.h): type promotion,
// broadcasting and the in-place rules. The ops themselves, with their gradients, are
// generated from api/ops.json (pointwise_ops.cpp in the build tree).

#include "ops/pointwise.h"

#include <string_view>

#include "autograd/record.h"
#include "kiln/ops.h"
#include "ops/common.h"
#include "ops/complex.h"

namespace kiln::detail {

namespace {

DType compute_dtype(Promote promote, DType promoted) {
  if (promote == Promote::Float && !is_floating(promoted)) return DType::Float32;
  return promoted;
}

DType result_dtype(Promote promote, DType computed) {
  return promote == Promote::Compare || promote == Promote::Logical ? DType::Bool : computed;
}

// Reached only by ops without a complex spelling (comparisons, max, relu, exp, ...).
void check_not_complex(const char* op, DType a, DType b) {
  KILN_CHECK(!is_complex(a) && !is_complex(b), op, ": not supported for complex tensors (",
             is_complex(a) ? a : b, ")");
}

// PyTorch's canCast: a result may be stored into a dtype of the same or a higher
// category (bool < integer < floating < complex), never into a lower one.
bool can_store(DType result, DType into) {
  auto category = [](DType d) {
    return d == DType::Bool ? 0 : is_integral(d) ? 1 : is_complex(d) ? 3 : 2;
  };
  return category(result) <= category(into);
}

// PyTorch refuses subtraction with any bool operand (a bool scalar included).
void check_sub_operands(OpId op, const char* name, DType a, DType b) {
  KILN_CHECK(op != OpId::sub || (a != DType::Bool && b != DType::Bool), name,
             ": subtraction with a bool operand is not supported (use logical_xor, or "
             "convert with .to(kiln::int64))");
}

void check_not_bool(const char* op, DType dtype) {
  KILN_CHECK(dtype != DType::Bool, op,
             ": not supported for bool tensors (convert with "
             ".to(kiln::int64) or use logical_and/logical_or)");
}

}  // namespace

Tensor pointwise_unary(OpId op, const char* name, const Tensor& x, Promote promote,
                       std::span<const kiln_attr> attrs) {
  const auto& impl = impl_of(x, name);
  check_not_complex(name, impl.dtype, impl.dtype);
  if (impl.dtype == DType::UInt8) [[unlikely]] {
    // The catalogue's sign-taking ops have no uint8 kernels; PyTorch's answers for an
    // unsigned tensor: abs and relu are the identity, sign is 0 or 1, neg wraps.
    if (op == OpId::abs || op == OpId::relu) return x.clone();
    if (op == OpId::sign) return (x != int64_t{0}).to(DType::UInt8);
    if (op == OpId::neg) return zeros_like(x) - x;
  }
  if (impl.dtype == DType::Bool && op == OpId::sign) [[unlikely]] {
    return x.clone();  // PyTorch: the sign of a bool is itself
  }
  DType dtype = compute_dtype(promote, impl.dtype);
  if (promote == Promote::Arith) check_not_bool(name, dtype);
  Tensor in = cast(x, dtype);
  Tensor out = empty_on(x, x.shape(), result_dtype(promote, dtype));
  dispatch(op, {in.impl().get()}, {out.impl().get()}, attrs);
  return out;
}

Tensor pointwise_binary(OpId op, const char* name, const Tensor& a, const Tensor& b,
                        Promote promote) {
  check_same_device(name, {&a, &b});
  check_not_complex(name, a.dtype(), b.dtype());
  check_sub_operands(op, name, a.dtype(), b.dtype());
  DType dtype = compute_dtype(promote, result_type(a, b));
  if (dtype == DType::Bool && promote == Promote::Arith) {
    // PyTorch's bool arithmetic: + and maximum are a logical or, * and minimum an and.
    if (op == OpId::add || op == OpId::maximum) return logical_or(a, b);
    if (op == OpId::mul || op == OpId::minimum) return logical_and(a, b);
  }
  if (promote == Promote::Arith) check_not_bool(name, dtype);
  Tensor ca = cast(a, dtype), cb = cast(b, dtype);
  DType out_dtype = result_dtype(promote, dtype);
  Tensor out;
  if (a.shape() == b.shape()) [[likely]] {
    out = empty_on(a, a.shape(), out_dtype);
  } else {
    auto shape = broadcast_shapes(a.shape(), b.shape(), name);
    out = empty_on(a, shape, out_dtype);
    ca = expand_to(ca, shape);
    cb = expand_to(cb, shape);
  }
  dispatch(op, {ca.impl().get(), cb.impl().get()}, {out.impl().get()});
  return out;
}

Tensor& pointwise_inplace(OpId op, const char* name, Tensor& self, const Tensor& other,
                          Promote promote) {
  check_same_device(name, {&self, &other});
  if (any_complex({&self, &other})) [[unlikely]]
    return complex_pointwise_inplace(op, name, self, other);
  autograd_impl::check_inplace(self, name, &other);
  check_sub_operands(op, name, self.dtype(), other.dtype());
  const auto& impl = *self.impl();
  DType dtype = impl.dtype;
  DType promoted = compute_dtype(promote, result_type(self, other));
  KILN_CHECK(can_store(promoted, dtype), name, ": the result type ", promoted,
             " cannot be stored in place in a ", dtype, " tensor");
  check_not_bool(name, promoted);
  KILN_CHECK(!impl.has_internal_overlap(), name,
             ": cannot write in place into a tensor whose elements overlap (an expanded "
             "view); call .contiguous() first");
  Tensor b = cast(other, promoted);
  if (b.shape() != self.shape()) {
    auto shape = broadcast_shapes(self.shape(), other.shape(), name);
    KILN_CHECK(IntArrayRef(shape) == self.shape(), name, ": the operand of shape ", other.shape(),
               " does not broadcast to the in-place shape ", self.shape());
    b = b.expand(self.shape());
  }
  if (promoted == dtype) [[likely]] {
    dispatch(op, {&impl, b.impl().get()}, {&impl});
    return self;
  }
  // A wider operand of a kind self can hold (f32.add_(f64), i32.add_(i64)): computed in
  // the wider dtype and converted into self, as PyTorch does.
  Tensor a = cast(self, promoted);
  Tensor out = empty_on(self, self.shape(), promoted);
  dispatch(op, {a.impl().get(), b.impl().get()}, {out.impl().get()});
  dispatch(OpId::copy, {out.impl().get()}, {&impl});
  return self;
}

Tensor& pointwise_unary_inplace(OpId op, const char* name, Tensor& self, Promote promote,
                                std::span<const kiln_attr> attrs) {
  const auto& impl = impl_of(self, name);
  check_not_complex(name, impl.dtype, impl.dtype);
  autograd_impl::check_inplace(self, name);
  const DType dtype = compute_dtype(promote, impl.dtype);
  KILN_CHECK(dtype == impl.dtype, name, ": the result type ", dtype,
             " cannot be stored in place in a ", impl.dtype, " tensor");
  if (promote == Promote::Arith) check_not_bool(name, dtype);
  KILN_CHECK(!impl.has_internal_overlap(), name,
             ": cannot write in place into a tensor whose elements overlap (an expanded "
             "view); call .contiguous() first");
  dispatch(op, {&impl}, {&impl}, attrs);
  return self;
}

Tensor scalar_operand(const Tensor& like, Scalar s, const char* name, Promote promote) {
  const auto& impl = impl_of(like, name);
  DType dtype = s.result_type(impl.dtype);
  if (promote == Promote::Float && (is_integral(dtype) || dtype == DType::Bool))
    return scalar_on(like, s, DType::Float32);
  // An integer operand of a dimensioned integer tensor stays an exact int64 0-d tensor:
  // result_type still gives the tensor's dtype, and the op converts the operand (by
  // wrapping) into the dtype it computes in, which for true division is float32
  // (uint8 / -3 is -1.67, not 1 / 253).
  if (s.kind() == Scalar::Kind::Integral && is_integral(dtype) && impl.dim() > 0)
    dtype = DType::Int64;
  if (s.kind() == Scalar::Kind::Bool && std::string_view(name).starts_with("sub"))
    check_sub_operands(OpId::sub, name, DType::Bool, impl.dtype);
  return scalar_on(like, s, dtype);
}

}  // namespace kiln::detail
