#pragma once
/// @file scheduler.h
/// Learning-rate schedules, as torch.optim.lr_scheduler. Each sets every group's lr
/// from its base lr (the lr when the scheduler was made) and a step counter t;
/// call step() once per epoch (or per batch, for OneCycleLR and warm-up).
///
///   StepLR:            lr = base · γ^⌊t / step_size⌋
///   CosineAnnealingLR: lr = η_min + (base − η_min) · (1 + cos(π · t / T_max)) / 2
///   LinearLR (warm-up): lr = base · (s + (e − s) · min(t, T) / T)
///   OneCycleLR:        warm-up from max_lr/div to max_lr over pct_start of the steps
///                      (cosine), then cosine annealing to max_lr/(div·final_div).
///
/// Each constructor throws kiln::Error, naming the argument and its value, for settings
/// that would make a rate negative or not finite: γ or η_min negative, NaN or infinite;
/// a max_lr, div or final_div that is not finite and positive; ...

#include <vector>

#include "kiln/optim/optimizer.h"

namespace kiln::optim {

class LRScheduler {
 public:
  explicit LRScheduler(Optimizer& optimizer);
  virtual ~LRScheduler() = default;
  /// Advances t by one and sets the new learning rates.
  void step();
  /// The rates of the current step, one per group.
  std::vector<double> get_last_lr() const;
  int64_t last_step() const { return step_; }
  /// For resuming: sets t and the rates for it.
  void set_step(int64_t t);

  /// "last_step" (0-d int64) and "base_lrs" (float64, one per parameter group), as
  /// PyTorch's last_epoch and base_lrs; the schedule's own settings come from its
  /// constructor.
  nn::StateDict state_dict() const;
  /// Restores what state_dict() produced and sets the rates of that step. A missing or
  /// unknown key, a step that is not a whole number in [0, 9e15], or a base rate that
  /// is negative or not finite (or a count other than the optimizer's groups) throws
  /// kiln::Error naming the key, and changes nothing.
  void load_state_dict(const nn::StateDict& dict);
  /// The checks of load_state_dict alone: throws the same kiln::Error for the same
  /// `dict`, and changes nothing either way.
  void check_state_dict(const nn::StateDict& dict) const;

 protected:
  /// The lr of a group with `base` lr at step t.
  virtual double lr_at(double base, int64_t t) const = 0;
  void apply();

  Optimizer& optimizer_;
  std::vector<double> base_lrs_;
  int64_t step_ = 0;
};

class StepLR : public LRScheduler {
 public:
  StepLR(Optimizer& optimizer, int64_t step_size, double gamma = 0.1);

 protected:
  double lr_at(double base, int64_t t) const override;

 private:
  int64_t step_size_;
  double gamma_;
};

class CosineAnnealingLR : public LRScheduler {
 public:
  CosineAnnealingLR(Optimizer& optimizer, int64_t t_max, double eta_min = 0.0);

 protected:
  double lr_at(double base, int64_t t) const override;

 private:
  int64_t t_max_;
  double eta_min_;
};

class LinearLR : public LRScheduler {
 public:
  LinearLR(Optimizer& optimizer, double start_factor = 1.0 / 3, double end_factor = 1.0,
           int64_t total_iters = 5);

 protected:
  double lr_at(double base, int64_t t) const override;

 private:
  double start_, end_;
  int64_t total_;
};

class OneCycleLR : public LRScheduler {
 public:
  OneCycleLR(Optimizer& optimizer, double max_lr, int64_t total_steps, double pct_start = 0.3,
             double div_factor = 25.0, double final_div_factor = 1e4);

 protected:
  double lr_at(double base, int64_t t) const override;

 private:
  double max_lr_;
  int64_t total_;
  double pct_start_, div_, final_div_;
};

}  // namespace kiln::optim
