#pragma once
/// @file adam.h
/// Adam and AdamW, as torch.optim.Adam / AdamW. For each parameter p with
/// gradient g, at step t (1-based):
///
///   Adam:   g ← g + weight_decay · p
///   AdamW:  p ← p · (1 − lr · weight_decay)          (decoupled decay)
///   m ← β₁ · m + (1 − β₁) · g
///   v ← β₂ · v + (1 − β₂) · g²
///   p ← p − (lr / (1 − β₁ᵗ)) · m / (√v / √(1 − β₂ᵗ) + ε)

#include <utility>

#include "kiln/optim/optimizer.h"

namespace kiln::optim {

struct AdamOptions : OptimizerOptions {
  explicit AdamOptions(double lr = 1e-3) : OptimizerOptions(lr) {}
  using OptimizerOptions::lr;
  AdamOptions& lr(double v) {
    lr_ = v;
    return *this;
  }
  AdamOptions& betas(std::pair<double, double> b) {
    betas_ = b;
    return *this;
  }
  AdamOptions& eps(double v) {
    eps_ = v;
    return *this;
  }
  AdamOptions& weight_decay(double v) {
    weight_decay_ = v;
    return *this;
  }
  std::pair<double, double> betas() const { return betas_; }
  double eps() const { return eps_; }
  double weight_decay() const { return weight_decay_; }
  std::unique_ptr<OptimizerOptions> clone() const override {
    return std::make_unique<AdamOptions>(*this);
  }

 protected:
  std::pair<double, double> betas_{0.9, 0.999};
  double eps_ = 1e-8, weight_decay_ = 0;
};

/// AdamW's default weight decay is 0.01 (PyTorch's).
struct AdamWOptions : AdamOptions {
  explicit AdamWOptions(double lr = 1e-3) : AdamOptions(lr) { weight_decay_ = 1e-2; }
  using AdamOptions::betas;
  using AdamOptions::eps;
  using AdamOptions::lr;
  using AdamOptions::weight_decay;
  AdamWOptions& lr(double v) {
    lr_ = v;
    return *this;
  }
  AdamWOptions& betas(std::pair<double, double> b) {
    betas_ = b;
    return *this;
  }
  AdamWOptions& eps(double v) {
    eps_ = v;
    return *this;
  }
  AdamWOptions& weight_decay(double v) {
    weight_decay_ = v;
    return *this;
  }
  std::unique_ptr<OptimizerOptions> clone() const override {
    return std::make_unique<AdamWOptions>(*this);
  }
};

class Adam : public Optimizer {
 public:
  Adam(std::vector<Tensor> params, AdamOptions options = AdamOptions());
  Adam(std::vector<ParamGroup> groups, AdamOptions defaults);
  void step() override;
  /// "exp_avg" and "exp_avg_sq" (non-negative).
  std::vector<StateKind> state_kinds() const override;

 protected:
  /// Besides the lr: both betas in [0, 1), eps and weight_decay finite and non-negative.
  void check_options(const OptimizerOptions& options) const override;
  Adam(std::vector<ParamGroup> groups, std::unique_ptr<OptimizerOptions> defaults, const char* name,
       bool decoupled);

 private:
  bool decoupled_ = false;
};

class AdamW : public Adam {
 public:
  AdamW(std::vector<Tensor> params, AdamWOptions options = AdamWOptions());
  AdamW(std::vector<ParamGroup> groups, AdamWOptions defaults);
};

}  // namespace kiln::optim
