#include "kiln/optim/optimizer.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>
#include <set>
#include <tuple>

#include "kiln/autograd.h"
#include "kiln/error.h"
#include "kiln/ops.h"

namespace kiln::optim {

std::vector<ParamGroup> single_group(std::vector<Tensor> params) {
  std::vector<ParamGroup> groups(1);
  groups[0].params = std::move(params);
  return groups;
}

namespace {
// The decimal index in key[begin, end), written as state_dict() writes it ("0", "12",
// not "00" or "+1"); anything else is reported through `fail`.
template <typename Fail>
size_t parse_index(const std::string& key, size_t begin, size_t end, const Fail& fail) {
  size_t value = 0;
  auto [ptr, ec] = std::from_chars(key.data() + begin, key.data() + end, value);
  if (begin == end || ec != std::errc() || ptr != key.data() + end ||
      (key[begin] == '0' && end - begin > 1))
    fail("malformed index");
  return value;
}
}  // namespace

Optimizer::Optimizer(std::vector<ParamGroup> groups, std::unique_ptr<OptimizerOptions> defaults,
                     const char* name)
    : defaults_(std::move(defaults)), name_(name) {
  // Virtual calls from here reach the base's check_options (the lr); each algorithm's
  // constructor then checks its own options in every group.
  check_options(*defaults_);
  for (auto& g : groups) add_param_group(std::move(g));
  size_t count = 0;
  for (const auto& g : groups_) count += g.params.size();
  KILN_CHECK(count > 0, name_,
             ": got an empty parameter list (did the model register its "
             "parameters?)");
}

void Optimizer::add_param_group(ParamGroup group) {
  std::set<const void*> seen;
  for (const auto& g : groups_)
    for (const auto& p : g.params) seen.insert(p.impl().get());
  for (const auto& p : group.params) {
    KILN_CHECK(p.defined(), name_, ": a parameter is undefined");
    KILN_CHECK(p.is_leaf() && p.requires_grad(), name_,
               ": can only optimize leaf tensors that "
               "require grad (shape ",
               p.shape(), ")");
    KILN_CHECK(seen.insert(p.impl().get()).second, name_,
               ": a parameter appears in more than one group");
  }
  if (!group.options) group.options = defaults_->clone();
  check_options(*group.options);
  groups_.push_back(std::move(group));
}

void Optimizer::check_options(const OptimizerOptions& options) const {
  KILN_CHECK(std::isfinite(options.lr()) && options.lr() >= 0, name_,
             ": the learning rate must be finite and non-negative, got ", options.lr());
}

void Optimizer::zero_grad(bool set_to_none) {
  NoGradGuard no_grad;
  for (auto& g : groups_)
    for (auto& p : g.params) {
      if (!p.grad().defined()) continue;
      if (set_to_none)
        p.set_grad(Tensor());
      else
        p.grad().zero_();
    }
}

Tensor& Optimizer::state(const Tensor& param, const std::string& name) {
  return state_[param.impl().get()][name];
}

bool Optimizer::has_state(const Tensor& param, const std::string& name) const {
  auto it = state_.find(param.impl().get());
  return it != state_.end() && it->second.count(name) && it->second.at(name).defined();
}

int64_t& Optimizer::step_count(const Tensor& param) { return steps_[param.impl().get()]; }

nn::StateDict Optimizer::state_dict() const {
  nn::StateDict out;
  size_t index = 0;
  for (size_t g = 0; g < groups_.size(); ++g) {
    out.emplace_back("param_groups." + std::to_string(g) + ".lr",
                     scalar_tensor(groups_[g].options->lr(), DType::Float64).to("cpu"));
    for (const auto& p : groups_[g].params) {
      std::string prefix = "state." + std::to_string(index++) + ".";
      auto steps = steps_.find(p.impl().get());
      if (steps != steps_.end())
        out.emplace_back(prefix + "step", scalar_tensor(steps->second, DType::Int64).to("cpu"));
      auto st = state_.find(p.impl().get());
      if (st == state_.end()) continue;
      for (const auto& [name, t] : st->second)
        if (t.defined()) out.emplace_back(prefix + name, t);
    }
  }
  return out;
}

namespace {
// What a valid state dict sets: learning rates by group, step counts and state tensors
// by parameter index (with `convert`: the tensors already the optimizer's own, on their
// parameter's device and dtype).
struct LoadPlan {
  std::vector<double> lrs;
  std::vector<std::pair<size_t, int64_t>> steps;
  std::vector<std::tuple<size_t, std::string, Tensor>> tensors;
};

// Every check of load_state_dict, and with `convert` every copy, changing nothing.
LoadPlan plan_load(const char* optimizer, const std::vector<ParamGroup>& groups,
                   const std::vector<Optimizer::StateKind>& kinds, const nn::StateDict& dict,
                   bool convert) {
  NoGradGuard no_grad;
  std::vector<Tensor> params;
  for (const auto& g : groups)
    for (const auto& p : g.params) params.push_back(p);
  LoadPlan plan;
  plan.lrs.assign(groups.size(), std::numeric_limits<double>::quiet_NaN());
  for (const auto& entry : dict) {
    // Not a structured binding: clang before 16 cannot capture one in the lambda.
    const std::string& key = entry.first;
    const Tensor& t = entry.second;
    auto fail = [&](const auto&... why) {
      KILN_FAIL(optimizer, "::load_state_dict: key '", key, "': ", why...);
    };
    if (!t.defined()) fail("the tensor is undefined");
    if (key.rfind("param_groups.", 0) == 0) {
      size_t dot = key.find('.', 13);
      if (dot == std::string::npos || key.substr(dot) != ".lr") fail("unknown group field");
      size_t g = parse_index(key, 13, dot, fail);
      if (g >= groups.size())
        fail("no group ", g, ": the optimizer has ", groups.size(), " parameter groups");
      if (!std::isnan(plan.lrs[g])) fail("the learning rate of the group is given twice");
      if (t.dim() != 0) fail("a learning rate must be a 0-d tensor, got shape ", t.shape());
      if (is_complex(t.dtype())) fail("a learning rate must be a real number, not ", t.dtype());
      const double lr = t.to(DType::Float64).item<double>();
      if (!(std::isfinite(lr) && lr >= 0))
        fail("a learning rate must be finite and non-negative, got ", lr);
      plan.lrs[g] = lr;
    } else if (key.rfind("state.", 0) == 0) {
      size_t dot = key.find('.', 6);
      if (dot == std::string::npos) fail("malformed state key");
      size_t i = parse_index(key, 6, dot, fail);
      if (i >= params.size())
        fail("no parameter ", i, ": the optimizer has ", params.size(), " parameters");
      std::string name = key.substr(dot + 1);
      if (name == "step") {
        // A count: one whole, non-negative number (a hostile file may hold 1e30 or NaN).
        if (t.dim() != 0) fail("the step count must be a 0-d tensor, got shape ", t.shape());
        if (is_complex(t.dtype())) fail("the step count must be a real number, not ", t.dtype());
        const double step = t.to(DType::Float64).item<double>();
        if (!(step >= 0 && step <= 9.0e15 && step == std::floor(step)))
          fail("the step count must be a whole number in [0, 9e15], got ", step);
        plan.steps.emplace_back(i, static_cast<int64_t>(step));
        continue;
      }
      const Tensor& p = params[i];
      auto kind = std::find_if(kinds.begin(), kinds.end(),
                               [&](const Optimizer::StateKind& k) { return k.name == name; });
      if (!kinds.empty() && kind == kinds.end()) {
        std::string known = "'step'";
        for (const auto& k : kinds) known += ", '" + k.name + "'";
        fail("not a state ", optimizer, " keeps (it keeps ", known, ")");
      }
      if (t.shape() != p.shape())
        fail("shape ", t.shape(), " does not match the parameter's ", p.shape());
      // Converted to the parameter's dtype on load, but never across kinds: an integer
      // or boolean tensor is no optimizer's state, and complex to real drops a part.
      if (!(is_complex(p.dtype()) ? is_complex(t.dtype()) : is_floating(t.dtype())))
        fail("dtype ", t.dtype(), " cannot hold the state of a ", p.dtype(), " parameter");
      // One NaN in a moment makes every later step of its parameter NaN.
      if (t.numel() > 0 && !t.isfinite().all().item<bool>())
        fail("holds a NaN or infinite value; an optimizer's state must be finite");
      if (kind != kinds.end() && kind->non_negative && t.numel() > 0) {
        const Tensor parts = is_complex(t.dtype()) ? view_as_real(t) : t;  // Adam's, per part
        const double least = parts.min().to(DType::Float64).item<double>();
        if (least < 0)
          fail("holds ", least, ", but it is a running mean of squares and cannot be negative");
      }
      if (convert) {
        Tensor own = t.to(params[i].device()).to(params[i].dtype());
        if (own.impl() == t.impl()) own = own.clone();  // not the caller's tensor
        plan.tensors.emplace_back(i, std::move(name), std::move(own));
      }
    } else {
      fail("not an optimizer key (expected 'state.*' or 'param_groups.*')");
    }
  }
  for (size_t g = 0; g < plan.lrs.size(); ++g)
    KILN_CHECK(!std::isnan(plan.lrs[g]), optimizer,
               "::load_state_dict: the dict lacks 'param_groups.", g,
               ".lr' (one learning rate for each of the optimizer's ", groups.size(),
               " parameter groups)");
  return plan;
}
}  // namespace

void Optimizer::check_state_dict(const nn::StateDict& dict) const {
  plan_load(name_, groups_, state_kinds(), dict, /*convert=*/false);
}

void Optimizer::load_state_dict(const nn::StateDict& dict) {
  // Validate and copy everything first, then only assign: a bad checkpoint (or a failed
  // copy) changes nothing.
  LoadPlan plan = plan_load(name_, groups_, state_kinds(), dict, /*convert=*/true);
  std::vector<Tensor> params;
  for (const auto& g : groups_)
    for (const auto& p : g.params) params.push_back(p);
  // The dict replaces the state: what it does not hold (a parameter that had not
  // stepped when it was saved) starts afresh, as in PyTorch.
  state_.clear();
  steps_.clear();
  for (size_t g = 0; g < groups_.size(); ++g) groups_[g].options->lr(plan.lrs[g]);
  for (const auto& [i, step] : plan.steps) step_count(params[i]) = step;
  for (auto& [i, name, t] : plan.tensors) state(params[i], name) = std::move(t);
}

Tensor clip_grad_norm_(const std::vector<Tensor>& parameters, double max_norm, double norm_type) {
  KILN_CHECK(max_norm >= 0, "clip_grad_norm_: max_norm must be non-negative, got ", max_norm);
  NoGradGuard no_grad;
  std::vector<Tensor> grads;
  for (const auto& p : parameters)
    if (p.grad().defined()) grads.push_back(p.grad());
  if (grads.empty()) return scalar_tensor(0.0);
  bool inf = std::isinf(norm_type);
  Tensor total;
  for (const auto& g : grads) {
    Tensor part = inf ? g.abs().max() : g.abs().pow(norm_type).sum();
    part = part.to(DType::Float64).to(grads[0].device());
    total = !total.defined() ? part : inf ? maximum(total, part) : total + part;
  }
  if (!inf) total = total.pow(1.0 / norm_type);
  Tensor coef = clamp(max_norm / (total + 1e-6), std::nullopt, 1.0);
  for (auto& g : grads) g.mul_(coef.to(g.dtype()).to(g.device()));
  return total;
}

}  // namespace kiln::optim
