#include "kiln/optim/adam.h"

#include <cmath>

#include "kiln/autograd.h"
#include "kiln/error.h"
#include "kiln/ops.h"
#include "op_attrs.h"
#include "runtime/graph_capture.h"
#include "runtime/profiler_hooks.h"

namespace kiln::optim {

Adam::Adam(std::vector<Tensor> params, AdamOptions options)
    : Adam(single_group(std::move(params)), std::move(options)) {}

Adam::Adam(std::vector<ParamGroup> groups, AdamOptions defaults)
    : Adam(std::move(groups), defaults.clone(), "Adam", false) {}

Adam::Adam(std::vector<ParamGroup> groups, std::unique_ptr<OptimizerOptions> defaults,
           const char* name, bool decoupled)
    : Optimizer(std::move(groups), std::move(defaults), name), decoupled_(decoupled) {
  check_options(*defaults_);
  for (auto& g : param_groups()) check_options(*g.options);
}

void Adam::check_options(const OptimizerOptions& options) const {
  Optimizer::check_options(options);
  const auto* o = dynamic_cast<const AdamOptions*>(&options);
  KILN_CHECK(o != nullptr, name_, ": a parameter group's options are not AdamOptions");
  const auto [beta1, beta2] = o->betas();
  KILN_CHECK(beta1 >= 0 && beta1 < 1 && beta2 >= 0 && beta2 < 1, name_,
             ": betas must be in [0, 1), got (", beta1, ", ", beta2, ")");
  KILN_CHECK(std::isfinite(o->eps()) && o->eps() >= 0, name_,
             ": eps must be finite and non-negative, got ", o->eps());
  KILN_CHECK(std::isfinite(o->weight_decay()) && o->weight_decay() >= 0, name_,
             ": weight_decay must be finite and non-negative, got ", o->weight_decay());
}

std::vector<Optimizer::StateKind> Adam::state_kinds() const {
  return {{"exp_avg"}, {"exp_avg_sq", /*non_negative=*/true}};
}

void Adam::step() {
  detail::PhaseScope phase(profiler::Phase::Optimizer);
  NoGradGuard no_grad;
  detail::graph::Capture* capture = detail::graph::active();
  for (size_t gi = 0; gi < param_groups().size(); ++gi) {
    auto& group = param_groups()[gi];
    const auto& o = static_cast<const AdamOptions&>(*group.options);
    for (auto& p : group.params) {
      Tensor g = p.grad();
      if (!g.defined()) continue;
      if (capture && !has_state(p, "exp_avg"))
        detail::graph::refuse(*capture, detail::concat(name_, ".step()"),
                              "a parameter's moments are created on its first step; run a "
                              "warm-up step before capturing");
      Tensor& m = state(p, "exp_avg");
      Tensor& v = state(p, "exp_avg_sq");
      if (!m.defined()) m = zeros_like(p);
      if (!v.defined()) v = zeros_like(p);
      int64_t t = step_count(p) + 1;
      if (capture) {
        // Each replay is a step: it counts, and it reads the group's options then.
        detail::graph::patch_next(
            *capture, "kiln.adam_step",
            [this, gi, p](std::span<kiln_attr> attrs) {
              const auto& now = static_cast<const AdamOptions&>(*param_groups()[gi].options);
              namespace g = detail::graph;
              g::set_attr(attrs, "lr", now.lr());
              g::set_attr(attrs, "beta1", now.betas().first);
              g::set_attr(attrs, "beta2", now.betas().second);
              g::set_attr(attrs, "eps", now.eps());
              g::set_attr(attrs, "weight_decay", now.weight_decay());
              g::set_attr(attrs, "step", ++step_count(p));
            },
            lifetime(), detail::concat("the ", name_, " optimizer"));
      } else {
        step_count(p) = t;
      }
      Tensor gc = g.to(p.dtype()), pv = p, mv = m, vv = v;
      if (is_complex(p.dtype())) {
        // PyTorch's rule: a complex parameter steps as its real and imaginary parts,
        // each with its own moments (the kernel sees the view_as_real views).
        gc = view_as_real(gc.contiguous());
        pv = view_as_real(p);
        mv = view_as_real(m);
        vv = view_as_real(v);
      }
      detail::dispatch(detail::attrs::adam_step{.lr = o.lr(),
                                                .beta1 = o.betas().first,
                                                .beta2 = o.betas().second,
                                                .eps = o.eps(),
                                                .weight_decay = o.weight_decay(),
                                                .decoupled = decoupled_,
                                                .step = t},
                       {gc.impl().get()}, {pv.impl().get(), mv.impl().get(), vv.impl().get()});
      p.impl()->storage->version++;
    }
  }
}

AdamW::AdamW(std::vector<Tensor> params, AdamWOptions options)
    : AdamW(single_group(std::move(params)), std::move(options)) {}

AdamW::AdamW(std::vector<ParamGroup> groups, AdamWOptions defaults)
    : Adam(std::move(groups), defaults.clone(), "AdamW", true) {}

}  // namespace kiln::optim
