#pragma once
/// @file optimizer.h
/// The optimizer base: parameter groups with their own options, per-parameter
/// state, zero_grad, and state dicts for checkpoints (as torch::optim::Optimizer).
///
/// @code
///   kiln::optim::Adam opt(model->parameters(), kiln::optim::AdamOptions(1e-3));
///   for (auto& batch : loader) {
///     opt.zero_grad();
///     auto loss = criterion(model->forward(batch.input), batch.target);
///     loss.backward();
///     opt.step();
///   }
/// @endcode
///
/// Steps run without recording (a NoGradGuard inside step()) and use the fused
/// update ops of the catalogue (kiln.sgd_step, kiln.adam_step) where they exist.

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "kiln/nn/module.h"
#include "kiln/tensor.h"

namespace kiln::optim {

/// Options shared by every algorithm; each derives its own. Like every options
/// struct in Kiln (and PyTorch's C++ API): `o.lr(0.1)` sets and returns the options,
/// `o.lr()` reads.
struct OptimizerOptions {
  explicit OptimizerOptions(double lr) : lr_(lr) {}
  virtual ~OptimizerOptions() = default;
  virtual std::unique_ptr<OptimizerOptions> clone() const = 0;
  double lr() const { return lr_; }
  OptimizerOptions& lr(double v) {
    lr_ = v;
    return *this;
  }

 protected:
  double lr_;
};

struct ParamGroup {
  std::vector<Tensor> params;
  /// Null: use the optimizer's defaults (filled in when the group is added).
  std::unique_ptr<OptimizerOptions> options;
};

/// One group holding `params`, using the optimizer's defaults.
std::vector<ParamGroup> single_group(std::vector<Tensor> params);

class Optimizer {
 public:
  virtual ~Optimizer() = default;
  Optimizer(const Optimizer&) = delete;
  Optimizer& operator=(const Optimizer&) = delete;

  /// Applies one update to every parameter that has a gradient.
  virtual void step() = 0;
  /// Clears (set_to_none) or zeroes every parameter's gradient.
  void zero_grad(bool set_to_none = true);

  void add_param_group(ParamGroup group);
  std::vector<ParamGroup>& param_groups() { return groups_; }
  const std::vector<ParamGroup>& param_groups() const { return groups_; }

  /// Per-parameter state ("exp_avg", "step", ...) and each group's learning rate,
  /// as named tensors: "state.<i>.<name>" (i counts parameters across groups in
  /// order) and "param_groups.<g>.lr" (0-d float64).
  nn::StateDict state_dict() const;
  /// Restores what state_dict() produced for an optimizer over parameters of the
  /// same shapes: the state is replaced (what the dict lacks is dropped, not kept),
  /// and the dict must hold one "param_groups.<g>.lr" per group. Throws naming the
  /// key on any mismatch, changing nothing.
  void load_state_dict(const nn::StateDict& dict);
  /// The checks of load_state_dict alone: throws the same kiln::Error for the same
  /// `dict`, and changes nothing either way.
  void check_state_dict(const nn::StateDict& dict) const;
  /// The algorithm's name ("Adam", "SGD", ...), as its errors spell it.
  const char* name() const { return name_; }

 protected:
  Optimizer(std::vector<ParamGroup> groups, std::unique_ptr<OptimizerOptions> defaults,
            const char* name);
  /// The state tensor `name` of `param`, created by `init` on first use.
  Tensor& state(const Tensor& param, const std::string& name);
  bool has_state(const Tensor& param, const std::string& name) const;
  /// Integer step counters live on the host.
  int64_t& step_count(const Tensor& param);
  /// Expires when the optimizer is destroyed: a graph that captured its step refuses to
  /// replay after that (kiln/graph.h).
  std::weak_ptr<void> lifetime() const { return alive_; }

  std::unique_ptr<OptimizerOptions> defaults_;
  const char* name_;

 private:
  std::vector<ParamGroup> groups_;
  // Keyed by the parameter's implementation, which is stable across set_data.
  std::map<const void*, std::map<std::string, Tensor>> state_;
  std::map<const void*, int64_t> steps_;
  std::shared_ptr<void> alive_ = std::make_shared<char>(0);
};

/// Scales all gradients together so their global norm is at most `max_norm`
/// (p-norm, p = norm_type, inf allowed); returns the norm before clipping as a
/// 0-d tensor. Runs on the parameters' device without reading back to the host.
Tensor clip_grad_norm_(const std::vector<Tensor>& parameters, double max_norm,
                       double norm_type = 2.0);

}  // namespace kiln::optim
