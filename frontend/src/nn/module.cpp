// Module: registration, traversal, device/dtype moves, state dicts, printing.

#include "kiln/nn/module.h"

#include <algorithm>
#include <functional>
#include <map>
#include <ostream>
#include <set>
#include <sstream>

#include "core/tensor_impl.h"
#include "kiln/autograd.h"
#include "kiln/error.h"
#include "kiln/ops.h"

namespace kiln::nn {

namespace {
void check_name(const std::string& name, const char* what) {
  KILN_CHECK(!name.empty() && name.find('.') == std::string::npos, "register_", what,
             ": invalid name '", name, "' (must be non-empty and contain no '.')");
}
}  // namespace

Tensor Module::forward(const Tensor&) {
  KILN_FAIL(type_name_, " has no single-tensor forward(); call its own forward method");
}

std::shared_ptr<Module> Module::clone() const {
  KILN_FAIL(type_name_,
            " does not implement clone(), which nn::DataParallel needs to replicate "
            "it: override clone() (see kiln/nn/module.h)");
}

std::shared_ptr<Module> Module::copy_state_into(std::shared_ptr<Module> fresh) const {
  KILN_CHECK(fresh, type_name_, "::clone: no module to copy into");
  struct Entry {
    Module* owner;
    std::string prefix, name;
    Tensor t;
    bool buffer;
  };
  auto entries = [](const Module& m) {
    std::vector<Entry> out;
    m.visit_state("", [&](Module& owner, const std::string& prefix, const std::string& name,
                          Tensor& t, bool buffer) {
      out.push_back({&owner, prefix, name, t, buffer});
    });
    return out;
  };
  const std::vector<Entry> from = entries(*this), to = entries(*fresh);
  KILN_CHECK(from.size() == to.size(), type_name_, "::clone: the copy has ", to.size(),
             " parameters and buffers, the original ", from.size());
  // Sharing is copied too: the original's k-th distinct tensor becomes one new tensor
  // in the copy, under every name that held it.
  std::map<const void*, Tensor> copies;  // original tensor -> its copy
  std::set<const void*> used;            // copy tensors already written
  NoGradGuard no_grad;
  for (size_t i = 0; i < from.size(); ++i) {
    const Entry& src = from[i];
    const Entry& dst = to[i];
    const std::string full = src.prefix + src.name;
    KILN_CHECK(full == dst.prefix + dst.name && src.buffer == dst.buffer &&
                   src.t.defined() == dst.t.defined() &&
                   (!src.t.defined() || src.t.shape() == dst.t.shape()),
               type_name_, "::clone: ", src.buffer ? "buffer" : "parameter", " '", full,
               "' differs in the copy ('", dst.prefix + dst.name, "')");
    if (!src.t.defined()) continue;
    auto rebind = [&](const Tensor& t) {
      if (dst.buffer)
        dst.owner->register_buffer(dst.name, t);
      else
        dst.owner->register_parameter(dst.name, t, t.requires_grad());
    };
    auto seen = copies.find(src.t.impl().get());
    if (seen != copies.end()) {
      if (seen->second.impl() != dst.t.impl()) rebind(seen->second);
      continue;
    }
    Tensor value = src.t.detach().clone();
    if (used.count(dst.t.impl().get())) {
      // The copy's constructor tied what the original has untied since.
      value.requires_grad_(src.t.requires_grad());
      rebind(value);
      copies.emplace(src.t.impl().get(), value);
      used.insert(value.impl().get());
      continue;
    }
    Tensor t = dst.t;
    t.set_data(value);
    if (src.t.requires_grad() != t.requires_grad()) t.requires_grad_(src.t.requires_grad());
    copies.emplace(src.t.impl().get(), t);
    used.insert(t.impl().get());
  }
  fresh->train(is_training());
  return fresh;
}

namespace {
// Where `name` is registered in a module, for the errors of register_*.
template <typename List>
bool holds(const List& list, const std::string& name) {
  for (const auto& [n, x] : list)
    if (n == name) return true;
  return false;
}
}  // namespace

Tensor Module::register_parameter(const std::string& name, Tensor tensor, bool requires_grad) {
  check_name(name, "parameter");
  KILN_CHECK(!holds(buffers_, name), "register_parameter: '", name, "' is already a buffer of ",
             type_name_);
  KILN_CHECK(!holds(children_, name), "register_parameter: '", name, "' is already a submodule of ",
             type_name_);
  if (tensor.defined() && requires_grad && !tensor.requires_grad()) tensor.requires_grad_();
  bool replaced = false;
  for (auto& [n, t] : parameters_)
    if (n == name) {
      t = tensor;  // PyTorch's module.weight = other_param: same position, new tensor
      replaced = true;
    }
  if (!replaced) parameters_.emplace_back(name, tensor);
  for (const TensorField& f : tensor_fields())
    if (f.name == name && !f.buffer) *f.field = tensor;
  return tensor;
}

Tensor Module::register_buffer(const std::string& name, Tensor tensor) {
  check_name(name, "buffer");
  KILN_CHECK(!holds(parameters_, name), "register_buffer: '", name, "' is already a parameter of ",
             type_name_);
  KILN_CHECK(!holds(children_, name), "register_buffer: '", name, "' is already a submodule of ",
             type_name_);
  bool replaced = false;
  for (auto& [n, t] : buffers_)
    if (n == name) {
      t = tensor;
      replaced = true;
    }
  if (!replaced) buffers_.emplace_back(name, tensor);
  for (const TensorField& f : tensor_fields())
    if (f.name == name && f.buffer) *f.field = tensor;
  return tensor;
}

void Module::add_child(const std::string& name, std::shared_ptr<Module> module) {
  check_name(name, "module");
  KILN_CHECK(module != nullptr, "register_module: '", name, "' is null");
  KILN_CHECK(!holds(children_, name), "register_module: '", name, "' is already registered in ",
             type_name_);
  KILN_CHECK(!holds(parameters_, name), "register_module: '", name, "' is already a parameter of ",
             type_name_);
  KILN_CHECK(!holds(buffers_, name), "register_module: '", name, "' is already a buffer of ",
             type_name_);
  children_.emplace_back(name, std::move(module));
}

void Module::set_child(const std::string& name, std::shared_ptr<Module> module) {
  KILN_CHECK(module != nullptr, "register_module: '", name, "' is null");
  for (auto& [n, m] : children_)
    if (n == name) {
      m = std::move(module);
      return;
    }
  add_child(name, std::move(module));
}

void Module::remove_child(const std::string& name) {
  for (auto it = children_.begin(); it != children_.end(); ++it)
    if (it->first == name) {
      children_.erase(it);
      return;
    }
  KILN_FAIL(type_name_, " has no submodule '", name, "'");
}

void Module::sync_fields() const {
  // The fields are the user's view; register_* keep them current, so a field that
  // differs from its registered tensor was assigned by the user: adopt it.
  for (const TensorField& f : const_cast<Module*>(this)->tensor_fields()) {
    StateDict& list = f.buffer ? buffers_ : parameters_;
    auto it = list.begin();
    while (it != list.end() && it->first != f.name) ++it;
    const Tensor& field = *f.field;
    if (it == list.end() ? !field.defined() : it->second.impl() == field.impl()) continue;
    if (f.buffer) {
      const_cast<Module*>(this)->register_buffer(f.name, field);
      continue;
    }
    KILN_CHECK(!field.defined() || field.is_leaf(), type_name_, "::", f.name,
               " was assigned the result of an autograd op; a parameter must be a leaf "
               "tensor: assign another module's parameter (weight tying) or a fresh tensor, "
               "or detach() it");
    const bool requires_grad = it == list.end() || !it->second.defined() ||
                               it->second.requires_grad() || field.requires_grad();
    const_cast<Module*>(this)->register_parameter(f.name, field, requires_grad);
  }
}

void Module::collect(const std::string& prefix, bool recurse, bool params, bool buffers,
                     std::vector<const void*>* seen, StateDict& out) const {
  sync_fields();
  auto add = [&](const StateDict& list) {
    for (const auto& [n, t] : list) {
      if (!t.defined()) continue;
      if (seen) {
        const void* id = t.impl().get();
        if (std::find(seen->begin(), seen->end(), id) != seen->end()) continue;
        seen->push_back(id);
      }
      out.emplace_back(prefix + n, t);
    }
  };
  if (params) add(parameters_);
  if (buffers) add(buffers_);
  if (recurse)
    for (const auto& [n, m] : children_)
      m->collect(prefix + n + ".", true, params, buffers, seen, out);
}

void Module::visit_state(const std::string& prefix, const StateVisitor& visit) const {
  sync_fields();
  auto* self = const_cast<Module*>(this);
  // Copies of the lists: a visitor may re-register (copy_state_into).
  StateDict params = parameters_, buffers = buffers_;
  for (auto& [n, t] : params) visit(*self, prefix, n, t, false);
  for (auto& [n, t] : buffers) visit(*self, prefix, n, t, true);
  for (const auto& [n, m] : children_) m->visit_state(prefix + n + ".", visit);
}

std::vector<Tensor> Module::unique_state() const {
  std::vector<const void*> seen;
  StateDict named;
  collect("", true, true, true, &seen, named);
  std::vector<Tensor> out;
  for (auto& [n, t] : named) out.push_back(t);
  return out;
}

Module& Module::apply(const std::function<void(Module&)>& fn) {
  for (const auto& [n, m] : children_) m->apply(fn);
  fn(*this);
  return *this;
}

std::vector<Tensor> Module::parameters(bool recurse) const {
  std::vector<Tensor> out;
  for (auto& [n, t] : named_parameters(recurse)) out.push_back(t);
  return out;
}

StateDict Module::named_parameters(bool recurse) const {
  StateDict out;
  std::vector<const void*> seen;
  collect("", recurse, true, false, &seen, out);
  return out;
}

StateDict Module::named_buffers(bool recurse) const {
  StateDict out;
  std::vector<const void*> seen;
  collect("", recurse, false, true, &seen, out);
  return out;
}

std::vector<std::pair<std::string, std::shared_ptr<Module>>> Module::named_children() const {
  return children_;
}

StateDict Module::state_dict() const {
  // Parameters and buffers of each module together, as PyTorch orders them.
  StateDict out;
  std::function<void(const Module&, const std::string&)> walk = [&](const Module& m,
                                                                    const std::string& prefix) {
    m.collect(prefix, false, true, true, nullptr, out);
    for (const auto& [n, c] : m.children_) walk(*c, prefix + n + ".");
  };
  walk(*this, "");
  return out;
}

void Module::to(const Device& device) {
  NoGradGuard no_grad;
  for (Tensor& t : unique_state()) {
    if (t.device() == device) continue;
    Tensor moved = t.to(device);
    Tensor grad = t.grad();
    t.set_data(moved);
    if (grad.defined()) t.set_grad(grad.to(device));
  }
}

void Module::to(DType dtype) {
  KILN_CHECK(is_floating(dtype), "Module::to: expected a floating dtype, got ", dtype);
  NoGradGuard no_grad;
  for (Tensor& t : unique_state()) {
    if (!is_floating(t.dtype()) || t.dtype() == dtype) continue;
    Tensor grad = t.grad();
    t.set_data(t.to(dtype));
    if (grad.defined()) t.set_grad(grad.to(dtype));
  }
}

void Module::train(bool on) {
  training_ = on;
  for (auto& [n, m] : children_) m->train(on);
}

void Module::zero_grad(bool set_to_none) {
  NoGradGuard no_grad;
  for (auto& t : parameters()) {
    if (!t.grad().defined()) continue;
    if (set_to_none)
      t.set_grad(Tensor());
    else
      t.grad().zero_();
  }
}

void Module::check_state_dict(const StateDict& state, bool strict) const {
  StateDict own = state_dict();
  std::map<std::string, Tensor> given;
  for (const auto& [n, t] : state) {
    KILN_CHECK(given.emplace(n, t).second, "load_state_dict: key '", n, "' appears twice");
  }
  std::vector<std::string> missing, unexpected, mismatched, unwritable;
  std::set<std::string> own_names;
  for (const auto& [n, t] : own) {
    own_names.insert(n);
    auto it = given.find(n);
    if (it == given.end()) {
      missing.push_back(n);
    } else if (it->second.shape() != t.shape()) {
      std::ostringstream m;
      m << n << " (checkpoint " << it->second.shape() << ", model " << t.shape() << ")";
      mismatched.push_back(m.str());
    } else if (t.defined() && t.impl()->has_internal_overlap()) {
      unwritable.push_back(n);  // copy_ would refuse it after others were set
    }
  }
  for (const auto& [n, t] : state)
    if (!own_names.count(n)) unexpected.push_back(n);
  auto join = [](const std::vector<std::string>& v) {
    std::string s;
    for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + v[i];
    return s;
  };
  std::string problems;
  if (!mismatched.empty()) problems += " size mismatch for: " + join(mismatched) + ".";
  if (strict && !missing.empty()) problems += " missing keys: " + join(missing) + ".";
  if (strict && !unexpected.empty()) problems += " unexpected keys: " + join(unexpected) + ".";
  if (!unwritable.empty())
    problems +=
        " cannot write into (their elements overlap, an expanded view): " + join(unwritable) + ".";
  KILN_CHECK(problems.empty(), "load_state_dict into ", type_name_, ":", problems);
}

void Module::load_state_dict(const StateDict& state, bool strict) {
  check_state_dict(state, strict);
  std::map<std::string, Tensor> given(state.begin(), state.end());
  NoGradGuard no_grad;
  for (auto& [n, t] : state_dict()) {
    auto it = given.find(n);
    if (it != given.end()) t.copy_(it->second);
  }
}

void Module::print_tree(std::ostream& out, int indent) const {
  out << type_name_ << "(" << extra_repr();
  if (children_.empty()) {
    out << ")";
    return;
  }
  out << "\n";
  for (const auto& [n, m] : children_) {
    out << std::string(static_cast<size_t>(indent + 2), ' ') << "(" << n << "): ";
    m->print_tree(out, indent + 2);
    out << "\n";
  }
  out << std::string(static_cast<size_t>(indent), ' ') << ")";
}

void Module::pretty_print(std::ostream& out) const { print_tree(out, 0); }

std::ostream& operator<<(std::ostream& out, const Module& module) {
  module.pretty_print(out);
  return out;
}

}  // namespace kiln::nn
