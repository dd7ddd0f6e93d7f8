#pragma once
/// @file sgd.h
/// Stochastic gradient descent with momentum, as torch.optim.SGD. For each
/// parameter p with gradient g, at step t:
///
///   g ← g + weight_decay · p
///   if momentum ≠ 0:
///     b ← g                                   (t = 1)
///     b ← momentum · b + (1 − dampening) · g  (t > 1)
///     g ← g + momentum · b   if nesterov, else   g ← b
///   p ← p − lr · g

#include "kiln/optim/optimizer.h"

namespace kiln::optim {

struct SGDOptions : OptimizerOptions {
  explicit SGDOptions(double lr) : OptimizerOptions(lr) {}
  using OptimizerOptions::lr;
  SGDOptions& lr(double v) {
    lr_ = v;
    return *this;
  }
  SGDOptions& momentum(double v) {
    momentum_ = v;
    return *this;
  }
  SGDOptions& dampening(double v) {
    dampening_ = v;
    return *this;
  }
  SGDOptions& weight_decay(double v) {
    weight_decay_ = v;
    return *this;
  }
  SGDOptions& nesterov(bool v) {
    nesterov_ = v;
    return *this;
  }
  double momentum() const { return momentum_; }
  double dampening() const { return dampening_; }
  double weight_decay() const { return weight_decay_; }
  bool nesterov() const { return nesterov_; }
  std::unique_ptr<OptimizerOptions> clone() const override {
    return std::make_unique<SGDOptions>(*this);
  }

 private:
  double momentum_ = 0, dampening_ = 0, weight_decay_ = 0;
  bool nesterov_ = false;
};

class SGD : public Optimizer {
 public:
  SGD(std::vector<Tensor> params, SGDOptions options);
  SGD(std::vector<ParamGroup> groups, SGDOptions defaults);
  void step() override;
  /// "momentum_buffer".
  std::vector<StateKind> state_kinds() const override;

 protected:
  /// Besides the lr: momentum and weight_decay finite and non-negative, dampening
  /// finite, and nesterov only with momentum > 0 and dampening 0.
  void check_options(const OptimizerOptions& options) const override;
};

}  // namespace kiln::optim
