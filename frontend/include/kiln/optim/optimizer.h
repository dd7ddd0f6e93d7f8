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

  /// Adds `group`; null options take a copy of the defaults. Throws kiln::Error (and
  /// adds nothing) for a parameter that is undefined, not a leaf requiring grad or
  /// already optimized, or for options check_options() refuses.
  void add_param_group(ParamGroup group);
  std::vector<ParamGroup>& param_groups() { return groups_; }
  const std::vector<ParamGroup>& param_groups() const { return groups_; }

  /// Per-parameter state ("exp_avg", "step", ...) and each group's learning rate,
  /// as named tensors: "state.<i>.<name>" (i counts parameters across groups in
  /// order) and "param_groups.<g>.lr" (0-d float64).
  nn::StateDict state_dict() const;
  /// Restores what state_dict() produced for an optimizer over parameters of the
  /// same shapes: the state is replaced (what the dict lacks is dropped, not kept),
  /// and the dict must hold one "param_groups.<g>.lr" per group. A dict may come from
  /// an untrusted file, so every value is checked as the options are: a learning rate
  /// must be finite and non-negative, a step count a whole number in [0, 9e15], a
  /// state tensor one of the algorithm's names (state_kinds()), of its parameter's
  /// shape and kind of dtype (real or complex floating point), finite, and
  /// non-negative where it is a mean of squares. Throws kiln::Error naming the key and
  /// the value on any mismatch, changing nothing.
  void load_state_dict(const nn::StateDict& dict);
  /// The checks of load_state_dict alone: throws the same kiln::Error for the same
  /// `dict`, and changes nothing either way.
  void check_state_dict(const nn::StateDict& dict) const;
  /// The algorithm's name ("Adam", "SGD", ...), as its errors spell it.
  const char* name() const { return name_; }
  /// One kind of per-parameter state tensor an algorithm keeps.
  struct StateKind {
    std::string name;           ///< as state_dict() names it: "exp_avg", "momentum_buffer", ...
    bool non_negative = false;  ///< a running mean of squares: negative values are refused
  };
  /// The state tensors step() may keep per parameter; load_state_dict refuses other
  /// names. Empty (the default, for an algorithm that does not say) accepts any name.
  virtual std::vector<StateKind> state_kinds() const { return {}; }

 protected:
  Optimizer(std::vector<ParamGroup> groups, std::unique_ptr<OptimizerOptions> defaults,
            const char* name);
  /// Throws kiln::Error naming the algorithm, the option and its value if `options`
  /// are not valid for it. Called for the defaults and for every group, also those
  /// added later by add_param_group. The base checks the learning rate (finite,
  /// non-negative); an algorithm with more options overrides it and calls the base.
  virtual void check_options(const OptimizerOptions& options) const;
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
