// Module: registration, traversal, device/dtype moves, state dicts, printing.

#include "kiln/nn/module.h"

#include <functional>
#include <map>
#include <ostream>
#include <set>
#include <sstream>

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
  auto copy_all = [&](const StateDict& from, const StateDict& to, const char* what) {
    KILN_CHECK(from.size() == to.size(), type_name_, "::clone: the copy has ", to.size(), " ", what,
               ", the original ", from.size());
    for (size_t i = 0; i < from.size(); ++i) {
      const auto& [name, src] = from[i];
      Tensor dst = to[i].second;
      KILN_CHECK(name == to[i].first && src.defined() == dst.defined() &&
                     (!src.defined() || src.shape() == dst.shape()),
                 type_name_, "::clone: ", what, " '", name, "' differs in the copy ('", to[i].first,
                 "')");
      if (!src.defined()) continue;
      NoGradGuard no_grad;
      dst.set_data(src.detach().clone());
      if (src.requires_grad() != dst.requires_grad()) dst.requires_grad_(src.requires_grad());
    }
  };
  copy_all(named_parameters(), fresh->named_parameters(), "parameters");
  copy_all(named_buffers(), fresh->named_buffers(), "buffers");
  fresh->train(is_training());
  return fresh;
}

Tensor Module::register_parameter(const std::string& name, Tensor tensor, bool requires_grad) {
  check_name(name, "parameter");
  for (auto& [n, t] : parameters_)
    KILN_CHECK(n != name, "register_parameter: '", name, "' is already registered in ", type_name_);
  if (tensor.defined() && requires_grad && !tensor.requires_grad()) tensor.requires_grad_();
  parameters_.emplace_back(name, tensor);
  return tensor;
}

Tensor Module::register_buffer(const std::string& name, Tensor tensor) {
  check_name(name, "buffer");
  for (auto& [n, t] : buffers_)
    KILN_CHECK(n != name, "register_buffer: '", name, "' is already registered in ", type_name_);
  buffers_.emplace_back(name, tensor);
  return tensor;
}

void Module::add_child(const std::string& name, std::shared_ptr<Module> module) {
  check_name(name, "module");
  KILN_CHECK(module != nullptr, "register_module: '", name, "' is null");
  for (auto& [n, m] : children_)
    KILN_CHECK(n != name, "register_module: '", name, "' is already registered in ", type_name_);
  children_.emplace_back(name, std::move(module));
}

void Module::collect(const std::string& prefix, bool recurse, bool params, bool buffers,
                     StateDict& out) const {
  if (params)
    for (const auto& [n, t] : parameters_)
      if (t.defined()) out.emplace_back(prefix + n, t);
  if (buffers)
    for (const auto& [n, t] : buffers_)
      if (t.defined()) out.emplace_back(prefix + n, t);
  if (recurse)
    for (const auto& [n, m] : children_) m->collect(prefix + n + ".", true, params, buffers, out);
}

std::vector<Tensor> Module::parameters(bool recurse) const {
  std::vector<Tensor> out;
  for (auto& [n, t] : named_parameters(recurse)) out.push_back(t);
  return out;
}

StateDict Module::named_parameters(bool recurse) const {
  StateDict out;
  collect("", recurse, true, false, out);
  return out;
}

StateDict Module::named_buffers(bool recurse) const {
  StateDict out;
  collect("", recurse, false, true, out);
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
    m.collect(prefix, false, true, true, out);
    for (const auto& [n, c] : m.children_) walk(*c, prefix + n + ".");
  };
  walk(*this, "");
  return out;
}

void Module::to(const Device& device) {
  NoGradGuard no_grad;
  for (auto& [name, t] : state_dict()) {
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
  for (auto& [name, t] : state_dict()) {
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
  std::vector<std::string> missing, unexpected, mismatched;
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
