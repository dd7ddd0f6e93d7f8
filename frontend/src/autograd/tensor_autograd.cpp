// Tensor's autograd methods: requires_grad, grad, is_leaf, retain_grad, detach,
// backward (the engine itself is engine.cpp).

#include "autograd/record.h"
#include "kiln/error.h"
#include "kiln/ops.h"

namespace kiln {

namespace ag = detail::autograd_impl;

bool Tensor::requires_grad() const { return ag::requires_grad(*this); }

Tensor& Tensor::requires_grad_(bool requires_grad) {
  const auto& impl = detail::impl_of(*this, "requires_grad_");
  KILN_CHECK(is_leaf(),
             "requires_grad_: only leaf tensors can change requires_grad; use "
             "detach() to get a leaf");
  KILN_CHECK(!requires_grad || is_floating(impl.dtype) || is_complex(impl.dtype),
             "requires_grad_: only floating-point and complex tensors can require gradients, "
             "got ",
             impl.dtype);
  ag::meta_of(*this).requires_grad = requires_grad;
  return *this;
}

Tensor Tensor::grad() const {
  const auto& impl = detail::impl_of(*this, "grad");
  return impl.autograd ? impl.autograd->grad : Tensor();
}

void Tensor::set_grad(const Tensor& grad) {
  detail::impl_of(*this, "set_grad");
  if (grad.defined())
    KILN_CHECK(grad.shape() == shape() && grad.dtype() == dtype() && grad.device() == device(),
               "set_grad: the gradient must match the tensor's shape, dtype and device (", shape(),
               " ", dtype(), " on ", device(), "), got ", grad.shape(), " ", grad.dtype(), " on ",
               grad.device());
  ag::meta_of(*this).grad = grad;
}

bool Tensor::is_leaf() const {
  const auto& impl = detail::impl_of(*this, "is_leaf");
  return !impl.autograd || !impl.autograd->grad_fn;
}

void Tensor::retain_grad() const {
  KILN_CHECK(requires_grad(), "retain_grad: the tensor does not require grad");
  if (is_leaf()) return;  // leaves keep their gradient anyway
  auto& meta = *impl()->autograd;
  if (meta.retains_grad) return;
  meta.retains_grad = true;
  std::weak_ptr<detail::TensorImpl> weak = impl();
  uint32_t output_nr = meta.output_nr;
  meta.grad_fn->pre_hooks.push_back([weak, output_nr](const std::vector<Tensor>& grads) {
    auto target = weak.lock();
    if (!target || !grads[output_nr].defined()) return;
    Tensor& g = target->autograd->grad;
    g = g.defined() ? g + grads[output_nr] : grads[output_nr].clone();
  });
}

std::shared_ptr<autograd::Node> Tensor::grad_fn() const {
  const auto& impl = detail::impl_of(*this, "grad_fn");
  return impl.autograd ? impl.autograd->grad_fn : nullptr;
}

Tensor Tensor::detach() const {
  const auto& impl = detail::impl_of(*this, "detach");
  auto out = std::make_shared<detail::TensorImpl>();
  out->storage = impl.storage;
  out->shape = impl.shape;
  out->strides = impl.strides;
  out->offset = impl.offset;
  out->numel = impl.numel;
  out->dtype = impl.dtype;
  return Tensor(std::move(out));
}

void Tensor::backward(const Tensor& gradient, bool retain_graph) const {
  kiln::backward({*this},
                 gradient.defined() ? std::vector<Tensor>{gradient} : std::vector<Tensor>{},
                 retain_graph);
}

}  // namespace kiln
