// kiln::amp::GradScaler: loss scaling with PyTorch's defaults and update rule.
#include <algorithm>
#include <cmath>
#include <iterator>
#include <limits>
#include <string>
#include <vector>

#include "kiln/amp.h"
#include "kiln/autograd.h"
#include "kiln/error.h"
#include "kiln/optim/optimizer.h"
#include "ops/common.h"
#include "runtime/graph_capture.h"

namespace kiln::amp {

namespace {

// The most gradients one kiln.non_finite_check_and_unscale call takes: the ABI's 8
// outputs, less found_inf.
constexpr size_t kGradsPerCall = 7;

// The scale multiplies the loss and 1/scale the gradients as float32 values: both
// must be finite and the scale a normal float32 (a scale of 1e-300 would be 0 there,
// its inverse inf, and every unscaled gradient NaN).
bool usable_scale(double scale) {
  const auto f = static_cast<float>(scale);
  return std::isfinite(f) && f >= std::numeric_limits<float>::min() && std::isfinite(1.0f / f);
}

void check_options(const GradScalerOptions& o) {
  KILN_CHECK(usable_scale(o.init_scale),
             "GradScaler: init_scale must be a positive normal float32 value, got ", o.init_scale);
  KILN_CHECK(std::isfinite(o.growth_factor) && o.growth_factor > 1,
             "GradScaler: growth_factor must be finite and > 1, got ", o.growth_factor);
  KILN_CHECK(o.backoff_factor > 0 && o.backoff_factor < 1,
             "GradScaler: backoff_factor must be in (0, 1), got ", o.backoff_factor);
  KILN_CHECK(o.growth_interval >= 1, "GradScaler: growth_interval must be >= 1, got ",
             o.growth_interval);
}

}  // namespace

GradScaler::GradScaler(GradScalerOptions options) : options_(options), scale_(options.init_scale) {
  check_options(options_);
}

Tensor GradScaler::scale(const Tensor& loss) {
  detail::impl_of(loss, "GradScaler::scale");
  if (!options_.enabled) return loss;
  // The scale changes between steps on the host: a replay would keep the captured one.
  detail::graph::refuse_if_capturing(
      "GradScaler::scale",
      "the loss scale changes between steps, and a replay would keep the "
      "captured one (capture a step without loss scaling, or in bfloat16)");
  KILN_CHECK(is_floating(loss.dtype()), "GradScaler::scale: expected a floating-point loss, got ",
             loss.dtype());
  return loss * scalar_tensor(scale_, TensorOptions(DType::Float32).device(loss.device()));
}

void GradScaler::unscale_(optim::Optimizer& optimizer) {
  if (!options_.enabled) return;
  KILN_CHECK(!found_inf_.count(&optimizer),
             "GradScaler::unscale_: already called for this optimizer since the last update()");
  NoGradGuard no_grad;
  // The gradients per device, unscaled in calls of up to kGradsPerCall.
  std::map<std::string, std::vector<Tensor>> by_device;
  for (auto& group : optimizer.param_groups()) {
    for (auto& p : group.params) {
      Tensor g = p.grad();
      if (!g.defined()) continue;
      KILN_CHECK(is_floating(g.dtype()), "GradScaler::unscale_: a gradient is ", g.dtype());
      // PyTorch's rule: a float16 gradient divided in place may underflow to 0.
      // Keep float32 parameters (autocast) and only the forward pass in float16.
      KILN_CHECK(g.dtype() != DType::Float16,
                 "GradScaler::unscale_: refusing to unscale float16 gradients (of a float16 "
                 "parameter); train float32 parameters under kiln::autocast instead");
      by_device[g.device().str()].push_back(g);
    }
  }
  // Recorded only once every call succeeded: after a failure, step() must not take
  // the gradients (still scaled) for unscaled ones.
  std::map<std::string, Tensor> flags;
  for (auto& [device, grads] : by_device) {
    const auto on = TensorOptions(DType::Float32).device(grads[0].device());
    Tensor inv = full({1}, 1.0 / scale_, on);
    Tensor found = zeros({1}, on);
    for (size_t i = 0; i < grads.size(); i += kGradsPerCall) {
      std::vector<const detail::TensorImpl*> outputs = {found.impl().get()};
      for (size_t j = i; j < std::min(grads.size(), i + kGradsPerCall); ++j) {
        detail::impl_of(grads[j], "GradScaler::unscale_");
        outputs.push_back(grads[j].impl().get());
      }
      const detail::TensorImpl* inputs[] = {inv.impl().get()};
      detail::dispatch(detail::OpId::non_finite_check_and_unscale, inputs, outputs);
      for (size_t j = i; j < std::min(grads.size(), i + kGradsPerCall); ++j)
        grads[j].impl()->storage->version++;
    }
    flags[device] = found;
  }
  found_inf_[&optimizer] = std::move(flags);
}

bool GradScaler::step(optim::Optimizer& optimizer) {
  if (!options_.enabled) {
    optimizer.step();
    return true;
  }
  KILN_CHECK(!stepped_.count(&optimizer),
             "GradScaler::step: already called for this optimizer since the last update()");
  if (!found_inf_.count(&optimizer)) unscale_(optimizer);
  KILN_CHECK(!found_inf_[&optimizer].empty(),
             "GradScaler::step: no inf checks were recorded for this optimizer (none of its "
             "parameters has a gradient)");
  double found = 0;
  for (const auto& [device, flag] : found_inf_[&optimizer]) found += flag.item<float>();
  stepped_[&optimizer] = found != 0;
  if (found != 0) return false;
  optimizer.step();
  return true;
}

void GradScaler::update(std::optional<double> new_scale) {
  if (!options_.enabled) return;
  if (new_scale) {
    KILN_CHECK(usable_scale(*new_scale),
               "GradScaler::update: the new scale must be a positive normal float32 value, got ",
               *new_scale);
    scale_ = *new_scale;  // the growth tracker stays, as in PyTorch
  } else {
    KILN_CHECK(!found_inf_.empty(),
               "GradScaler::update: no unscale_() or step() ran since the last update()");
    bool found = false;
    for (const auto& [optimizer, flags] : found_inf_) {
      auto it = stepped_.find(optimizer);
      if (it != stepped_.end()) {
        found = found || it->second;
      } else {
        for (const auto& [device, flag] : flags) found = found || flag.item<float>() != 0;
      }
    }
    // A scale that would leave float32's normal range stays where it is (PyTorch
    // keeps one that would overflow).
    if (found) {
      if (usable_scale(scale_ * options_.backoff_factor)) scale_ *= options_.backoff_factor;
      growth_tracker_ = 0;
    } else if (++growth_tracker_ >= options_.growth_interval) {
      if (usable_scale(scale_ * options_.growth_factor)) scale_ *= options_.growth_factor;
      growth_tracker_ = 0;
    }
  }
  found_inf_.clear();
  stepped_.clear();
}

nn::StateDict GradScaler::state_dict() const {
  auto f64 = [](double v) { return scalar_tensor(v, TensorOptions(DType::Float64)); };
  return {{"scale", f64(scale_)},
          {"growth_factor", f64(options_.growth_factor)},
          {"backoff_factor", f64(options_.backoff_factor)},
          {"growth_interval", f64(static_cast<double>(options_.growth_interval))},
          {"growth_tracker", f64(static_cast<double>(growth_tracker_))}};
}

namespace {
struct ScalerState {
  GradScalerOptions options;
  double scale;
  int64_t growth_tracker;
};

// Every check of load_state_dict; `options` supplies what the state does not hold.
ScalerState parse_state(const nn::StateDict& dict, GradScalerOptions o) {
  static constexpr const char* kKeys[] = {"scale", "growth_factor", "backoff_factor",
                                          "growth_interval", "growth_tracker"};
  for (const auto& [name, t] : dict)
    KILN_CHECK(std::find(std::begin(kKeys), std::end(kKeys), name) != std::end(kKeys),
               "GradScaler::load_state_dict: unknown key '", name,
               "' (expected scale, growth_factor, backoff_factor, growth_interval and "
               "growth_tracker)");
  auto value = [&](const char* key) {
    for (const auto& [name, t] : dict) {
      if (name != key) continue;
      KILN_CHECK(t.defined() && t.dim() == 0 && is_floating(t.dtype()),
                 "GradScaler::load_state_dict: '", key,
                 "' must be a 0-d floating-point tensor (as state_dict() writes it)");
      return t.to(DType::Float64).item<double>();
    }
    KILN_FAIL("GradScaler::load_state_dict: the state has no '", key, "'");
  };
  const double scale = value("scale");
  o.growth_factor = value("growth_factor");
  o.backoff_factor = value("backoff_factor");
  const double interval = value("growth_interval"), tracker = value("growth_tracker");
  KILN_CHECK(usable_scale(scale),
             "GradScaler::load_state_dict: 'scale' must be a positive normal float32 value, got ",
             scale);
  KILN_CHECK(interval >= 1 && interval <= 9e15 && interval == std::floor(interval),
             "GradScaler::load_state_dict: 'growth_interval' must be a whole number >= 1, got ",
             interval);
  KILN_CHECK(tracker >= 0 && tracker < interval && tracker == std::floor(tracker),
             "GradScaler::load_state_dict: 'growth_tracker' must be a whole number in [0, "
             "growth_interval), got ",
             tracker);
  o.growth_interval = static_cast<int64_t>(interval);
  check_options(o);
  return {o, scale, static_cast<int64_t>(tracker)};
}
}  // namespace

void GradScaler::check_state_dict(const nn::StateDict& dict) const { parse_state(dict, options_); }

void GradScaler::load_state_dict(const nn::StateDict& dict) {
  const ScalerState state = parse_state(dict, options_);
  options_ = state.options;
  scale_ = state.scale;
  growth_tracker_ = state.growth_tracker;
  found_inf_.clear();
  stepped_.clear();
}

}  // namespace kiln::amp
