#include "kiln/optim/scheduler.h"

#include <cmath>
#include <numbers>
#include <optional>

#include "kiln/error.h"
#include "kiln/tensor.h"

namespace kiln::optim {

LRScheduler::LRScheduler(Optimizer& optimizer) : optimizer_(optimizer) {
  for (const auto& g : optimizer.param_groups()) base_lrs_.push_back(g.options->lr());
}

void LRScheduler::step() {
  ++step_;
  apply();
}

void LRScheduler::set_step(int64_t t) {
  KILN_CHECK(t >= 0, "LRScheduler::set_step: t must be non-negative, got ", t);
  step_ = t;
  apply();
}

nn::StateDict LRScheduler::state_dict() const {
  return {{"last_step", scalar_tensor(step_, DType::Int64)},
          {"base_lrs", from_vector<double>(base_lrs_)}};
}

namespace {
struct SchedulerState {
  int64_t step = 0;
  std::vector<double> base_lrs;
};

// Every check of load_state_dict, for an optimizer with `groups` parameter groups.
SchedulerState parse_state(const nn::StateDict& dict, size_t groups) {
  std::optional<int64_t> step;
  std::optional<std::vector<double>> base_lrs;
  for (const auto& [key, t] : dict) {
    auto where = [&key = key] {
      return detail::concat("LRScheduler::load_state_dict: key '", key, "'");
    };
    KILN_CHECK(t.defined(), where(), ": the tensor is undefined");
    KILN_CHECK(!is_complex(t.dtype()), where(), ": expected real numbers, got ", t.dtype());
    const std::vector<double> values = t.to(DType::Float64).to_vector<double>();
    if (key == "last_step") {
      KILN_CHECK(t.dim() == 0, where(), ": expected a 0-d tensor, got shape ", t.shape());
      const double v = values[0];
      KILN_CHECK(v >= 0 && v <= 9.0e15 && v == std::floor(v), where(),
                 ": the step must be a whole number in [0, 9e15], got ", v);
      step = static_cast<int64_t>(v);
    } else if (key == "base_lrs") {
      KILN_CHECK(values.size() == groups, where(), ": ", values.size(),
                 " base rates for an optimizer with ", groups, " parameter groups");
      for (double lr : values)
        KILN_CHECK(std::isfinite(lr) && lr >= 0, where(),
                   ": a base learning rate must be finite and non-negative, got ", lr);
      base_lrs = values;
    } else {
      KILN_FAIL("LRScheduler::load_state_dict: unknown key '", key,
                "' (expected 'last_step' and 'base_lrs')");
    }
  }
  KILN_CHECK(step && base_lrs, "LRScheduler::load_state_dict: the dict lacks '",
             step ? "base_lrs" : "last_step", "'");
  return {*step, *base_lrs};
}
}  // namespace

void LRScheduler::check_state_dict(const nn::StateDict& dict) const {
  parse_state(dict, base_lrs_.size());
}

void LRScheduler::load_state_dict(const nn::StateDict& dict) {
  SchedulerState state = parse_state(dict, base_lrs_.size());
  base_lrs_ = std::move(state.base_lrs);
  set_step(state.step);
}

void LRScheduler::apply() {
  auto& groups = optimizer_.param_groups();
  for (size_t i = 0; i < groups.size() && i < base_lrs_.size(); ++i)
    groups[i].options->lr(lr_at(base_lrs_[i], step_));
}

std::vector<double> LRScheduler::get_last_lr() const {
  std::vector<double> out;
  for (const auto& g : optimizer_.param_groups()) out.push_back(g.options->lr());
  return out;
}

StepLR::StepLR(Optimizer& optimizer, int64_t step_size, double gamma)
    : LRScheduler(optimizer), step_size_(step_size), gamma_(gamma) {
  KILN_CHECK(step_size > 0, "StepLR: step_size must be positive, got ", step_size);
  KILN_CHECK(std::isfinite(gamma) && gamma >= 0,
             "StepLR: gamma must be finite and non-negative, got ", gamma);
}
double StepLR::lr_at(double base, int64_t t) const {
  return base * std::pow(gamma_, static_cast<double>(t / step_size_));
}

CosineAnnealingLR::CosineAnnealingLR(Optimizer& optimizer, int64_t t_max, double eta_min)
    : LRScheduler(optimizer), t_max_(t_max), eta_min_(eta_min) {
  KILN_CHECK(t_max > 0, "CosineAnnealingLR: T_max must be positive, got ", t_max);
  KILN_CHECK(std::isfinite(eta_min) && eta_min >= 0,
             "CosineAnnealingLR: eta_min must be finite and non-negative, got ", eta_min);
}
double CosineAnnealingLR::lr_at(double base, int64_t t) const {
  double c = std::cos(std::numbers::pi * static_cast<double>(std::min(t, t_max_)) /
                      static_cast<double>(t_max_));
  return eta_min_ + (base - eta_min_) * (1 + c) / 2;
}

LinearLR::LinearLR(Optimizer& optimizer, double start_factor, double end_factor,
                   int64_t total_iters)
    : LRScheduler(optimizer), start_(start_factor), end_(end_factor), total_(total_iters) {
  KILN_CHECK(start_factor > 0 && start_factor <= 1 && end_factor >= 0 && end_factor <= 1 &&
                 total_iters > 0,
             "LinearLR: need 0 < start_factor <= 1, 0 <= end_factor <= 1, total_iters > 0");
  apply();
}
double LinearLR::lr_at(double base, int64_t t) const {
  double f = static_cast<double>(std::min(t, total_)) / static_cast<double>(total_);
  return base * (start_ + (end_ - start_) * f);
}

OneCycleLR::OneCycleLR(Optimizer& optimizer, double max_lr, int64_t total_steps, double pct_start,
                       double div_factor, double final_div_factor)
    : LRScheduler(optimizer),
      max_lr_(max_lr),
      total_(total_steps),
      pct_start_(pct_start),
      div_(div_factor),
      final_div_(final_div_factor) {
  KILN_CHECK(
      total_steps > 1 && pct_start > 0 && pct_start < 1 && std::isfinite(max_lr) && max_lr > 0,
      "OneCycleLR: need total_steps > 1, 0 < pct_start < 1 and a finite max_lr > 0, got ",
      total_steps, ", ", pct_start, " and ", max_lr);
  KILN_CHECK(std::isfinite(div_factor) && div_factor > 0 && std::isfinite(final_div_factor) &&
                 final_div_factor > 0,
             "OneCycleLR: div_factor and final_div_factor must be finite and positive, got ",
             div_factor, " and ", final_div_factor);
  apply();
}
double OneCycleLR::lr_at(double, int64_t t) const {
  double initial = max_lr_ / div_, final_lr = initial / final_div_;
  double warm_end = pct_start_ * static_cast<double>(total_) - 1;
  double step = static_cast<double>(std::min(t, total_ - 1));
  auto cos_anneal = [](double from, double to, double frac) {
    return to + (from - to) * (1 + std::cos(std::numbers::pi * frac)) / 2;
  };
  if (step <= warm_end) return cos_anneal(initial, max_lr_, step / warm_end);
  return cos_anneal(max_lr_, final_lr,
                    (step - warm_end) / (static_cast<double>(total_ - 1) - warm_end));
}

}  // namespace kiln::optim
