// kiln::call_op: ops a plugin defines under its own prefix, called by name.
#include "kiln/custom_op.h"

#include <span>

#include "autograd/record.h"
#include "ops/common.h"
#include "runtime/registry.h"

namespace kiln {

namespace ag = detail::autograd_impl;

namespace {

// "acme.softplus": a non-empty prefix, a dot, a non-empty rest; never the catalogue's.
void check_name(const std::string& name) {
  const size_t dot = name.find('.');
  KILN_CHECK(dot != std::string::npos && dot > 0 && dot + 1 < name.size(), "call_op: '", name,
             "' is not an op name of the form '<prefix>.<op>' "
             "(a plugin's ops carry its prefix, e.g. 'acme.fused_gelu')");
  KILN_CHECK(name.compare(0, dot, "kiln") != 0, "call_op(", name,
             "): the 'kiln.' prefix is the catalogue's; call the op's own function (kiln::",
             name.substr(dot + 1),
             " or the Tensor method), which checks what its kernels "
             "rely on");
}

}  // namespace

void call_op(const std::string& name, const std::vector<Tensor>& inputs,
             const std::vector<Tensor>& outputs, const std::vector<OpAttribute>& attributes,
             int32_t version) {
  check_name(name);
  const std::string what = "call_op(" + name + ")";
  KILN_CHECK(version >= 1, what, ": version ", version, " (op versions start at 1)");
  KILN_CHECK(!inputs.empty() || !outputs.empty(), what, ": no operands");
  constexpr size_t kMax = 8;  // the dispatcher's operand limit
  KILN_CHECK(inputs.size() <= kMax && outputs.size() <= kMax, what, ": ", inputs.size(),
             " inputs and ", outputs.size(), " outputs; at most ", kMax, " of each");

  std::vector<const detail::TensorImpl*> in, out;
  detail::DeviceContext* device = nullptr;
  auto take = [&](const Tensor& t, const char* role, size_t i,
                  std::vector<const detail::TensorImpl*>& into) {
    KILN_CHECK(t.defined(), what, ": ", role, " ", i, " is an undefined tensor");
    const detail::TensorImpl* impl = t.impl().get();
    if (!device) device = impl->device();
    KILN_CHECK(impl->device() == device, what, ": expected all operands on one device, but ", role,
               " ", i, " is on ", impl->device()->name(), " and the first on ", device->name(),
               " (move one with .to(device))");
    into.push_back(impl);
  };
  for (size_t i = 0; i < inputs.size(); ++i) take(inputs[i], "input", i, in);
  for (size_t i = 0; i < outputs.size(); ++i) take(outputs[i], "output", i, out);

  if (is_grad_enabled()) {
    for (size_t i = 0; i < inputs.size(); ++i)
      KILN_CHECK(!ag::requires_grad(inputs[i]), what, ": input ", i, " requires grad, but ",
                 "autograd does not record a plugin-defined op; call it inside a "
                 "kiln::NoGradGuard, or make it differentiable with a "
                 "kiln::autograd::Function whose backward computes its gradient");
    for (size_t i = 0; i < outputs.size(); ++i)
      KILN_CHECK(!ag::requires_grad(outputs[i]), what, ": output ", i,
                 " requires grad, and "
                 "writing it in place would not be recorded; call it inside a "
                 "kiln::NoGradGuard (as optimizer steps do)");
  }
  for (size_t i = 0; i < outputs.size(); ++i)
    KILN_CHECK(!out[i]->has_internal_overlap(), what, ": output ", i,
               " has elements that overlap (an expanded view); call .contiguous() first");

  std::vector<kiln_attr> attrs;
  attrs.reserve(attributes.size());
  for (const OpAttribute& a : attributes) {
    KILN_CHECK(!a.name.empty(), what, ": an attribute without a name");
    if (auto* i = std::get_if<int64_t>(&a.value))
      attrs.push_back(detail::int_attr(a.name.c_str(), *i));
    else if (auto* f = std::get_if<double>(&a.value))
      attrs.push_back(detail::float_attr(a.name.c_str(), *f));
    else
      attrs.push_back(detail::string_attr(a.name.c_str(), std::get<std::string>(a.value).c_str()));
  }
  // Only a call that reaches a kernel counts as a write: the outputs' versions go up
  // once the op is known to exist (the kernel may still fail part-way).
  const detail::KernelSlot& slot = detail::named_kernel_or_throw(device, name, version);
  for (const Tensor& t : outputs) t.impl()->storage->version++;
  detail::dispatch_named(slot, name, in, out, attrs);
}

bool has_op(const std::string& name, const Device& device, int32_t version) {
  detail::DeviceContext* context = detail::Registry::get().resolve(device);
  return context->named_kernel(name, version).state.load(std::memory_order_acquire) ==
         detail::KernelSlot::State::Native;
}

}  // namespace kiln
