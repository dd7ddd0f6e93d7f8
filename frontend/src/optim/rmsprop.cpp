#include "kiln/optim/rmsprop.h"

#include <cmath>
#include <utility>

#include "kiln/autograd.h"
#include "kiln/error.h"
#include "kiln/ops.h"
#include "runtime/graph_capture.h"
#include "runtime/profiler_hooks.h"

namespace kiln::optim {

RMSprop::RMSprop(std::vector<Tensor> params, RMSpropOptions options)
    : RMSprop(single_group(std::move(params)), std::move(options)) {}

RMSprop::RMSprop(std::vector<ParamGroup> groups, RMSpropOptions defaults)
    : Optimizer(std::move(groups), defaults.clone(), "RMSprop") {
  check_options(*defaults_);
  for (auto& g : param_groups()) check_options(*g.options);
}

void RMSprop::check_options(const OptimizerOptions& options) const {
  Optimizer::check_options(options);
  const auto* o = dynamic_cast<const RMSpropOptions*>(&options);
  KILN_CHECK(o != nullptr, "RMSprop: a parameter group's options are not RMSpropOptions");
  // Above 1, (1 - alpha) is negative and so, soon, is the square average under the root.
  KILN_CHECK(o->alpha() >= 0 && o->alpha() <= 1, "RMSprop: alpha must be in [0, 1], got ",
             o->alpha());
  const std::pair<const char*, double> non_negative[] = {
      {"eps", o->eps()}, {"weight_decay", o->weight_decay()}, {"momentum", o->momentum()}};
  for (const auto& [option, value] : non_negative)
    KILN_CHECK(std::isfinite(value) && value >= 0, "RMSprop: ", option,
               " must be finite and non-negative, got ", value);
}

std::vector<Optimizer::StateKind> RMSprop::state_kinds() const {
  return {{"square_avg", /*non_negative=*/true}, {"grad_avg"}, {"momentum_buffer"}};
}

// Composed from elementwise ops: RMSprop is rarely the bottleneck, so it has no
// fused kernel in the catalogue.
void RMSprop::step() {
  detail::PhaseScope phase(profiler::Phase::Optimizer);
  NoGradGuard no_grad;
  // Its learning rate and step count are host values that a replay would not update.
  detail::graph::refuse_if_capturing("RMSprop.step()",
                                     "RMSprop cannot be captured yet (Adam and SGD can)");
  for (auto& group : param_groups()) {
    const auto& o = static_cast<const RMSpropOptions&>(*group.options);
    for (auto& param : group.params) {
      Tensor g = param.grad();
      if (!g.defined()) continue;
      // PyTorch's rule: a complex parameter steps as its real and imaginary parts, each
      // with its own averages (the state stays complex, seen through view_as_real).
      auto parts = [&](const Tensor& t) { return is_complex(t.dtype()) ? view_as_real(t) : t; };
      auto state_of = [&](const char* name) {
        Tensor& s = state(param, name);
        if (!s.defined()) s = zeros_like(param);
        return parts(s);
      };
      Tensor p = parts(param);  // sub_ below writes the parameter's memory
      g = parts(g.to(param.dtype()).contiguous());
      if (o.weight_decay() != 0) g = g + p * o.weight_decay();
      Tensor sq = state_of("square_avg");
      ++step_count(param);
      sq.mul_(o.alpha()).add_(g * g * (1 - o.alpha()));
      Tensor avg;
      if (o.centered()) {
        Tensor ga = state_of("grad_avg");
        ga.mul_(o.alpha()).add_(g * (1 - o.alpha()));
        avg = (sq - ga * ga).sqrt() + o.eps();
      } else {
        avg = sq.sqrt() + o.eps();
      }
      if (o.momentum() > 0) {
        Tensor buf = state_of("momentum_buffer");
        buf.mul_(o.momentum()).add_(g / avg);
        p.sub_(buf * o.lr());
      } else {
        p.sub_(g / avg * o.lr());
      }
    }
  }
}

}  // namespace kiln::optim
