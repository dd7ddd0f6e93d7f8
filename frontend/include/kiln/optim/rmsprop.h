#pragma once
/// @file rmsprop.h
/// RMSprop, as torch.optim.RMSprop. For each parameter p with gradient g:
///
///   g ← g + weight_decay · p
///   s ← α · s + (1 − α) · g²
///   centered:  a ← α · a + (1 − α) · g;   d ← √(s − a²) + ε
///   otherwise: d ← √s + ε
///   momentum > 0:  b ← momentum · b + g / d;   p ← p − lr · b
///   otherwise:     p ← p − lr · g / d

#include "kiln/optim/optimizer.h"

namespace kiln::optim {

struct RMSpropOptions : OptimizerOptions {
  explicit RMSpropOptions(double lr = 1e-2) : OptimizerOptions(lr) {}
  using OptimizerOptions::lr;
  RMSpropOptions& lr(double v) {
    lr_ = v;
    return *this;
  }
  RMSpropOptions& alpha(double v) {
    alpha_ = v;
    return *this;
  }
  RMSpropOptions& eps(double v) {
    eps_ = v;
    return *this;
  }
  RMSpropOptions& weight_decay(double v) {
    weight_decay_ = v;
    return *this;
  }
  RMSpropOptions& momentum(double v) {
    momentum_ = v;
    return *this;
  }
  RMSpropOptions& centered(bool v) {
    centered_ = v;
    return *this;
  }
  double alpha() const { return alpha_; }
  double eps() const { return eps_; }
  double weight_decay() const { return weight_decay_; }
  double momentum() const { return momentum_; }
  bool centered() const { return centered_; }
  std::unique_ptr<OptimizerOptions> clone() const override {
    return std::make_unique<RMSpropOptions>(*this);
  }

 private:
  double alpha_ = 0.99, eps_ = 1e-8, weight_decay_ = 0, momentum_ = 0;
  bool centered_ = false;
};

class RMSprop : public Optimizer {
 public:
  RMSprop(std::vector<Tensor> params, RMSpropOptions options = RMSpropOptions());
  RMSprop(std::vector<ParamGroup> groups, RMSpropOptions defaults);
  void step() override;
  /// "square_avg" (non-negative), "grad_avg" (centered), "momentum_buffer".
  std::vector<StateKind> state_kinds() const override;

 protected:
  /// Besides the lr: alpha in [0, 1], eps, weight_decay and momentum finite and
  /// non-negative.
  void check_options(const OptimizerOptions& options) const override;
};

}  // namespace kiln::optim
