#include "kiln/optim/sgd.h"

#include <cmath>

#include "kiln/autograd.h"
#include "kiln/error.h"
#include "kiln/ops.h"
#include "op_attrs.h"
#include "ops/pointwise.h"
#include "runtime/graph_capture.h"
#include "runtime/profiler_hooks.h"

namespace kiln::optim {

SGD::SGD(std::vector<Tensor> params, SGDOptions options)
    : SGD(single_group(std::move(params)), std::move(options)) {}

SGD::SGD(std::vector<ParamGroup> groups, SGDOptions defaults)
    : Optimizer(std::move(groups), defaults.clone(), "SGD") {
  check_options(*defaults_);
  for (auto& g : param_groups()) check_options(*g.options);
}

void SGD::check_options(const OptimizerOptions& options) const {
  Optimizer::check_options(options);
  const auto* o = dynamic_cast<const SGDOptions*>(&options);
  KILN_CHECK(o != nullptr, "SGD: a parameter group's options are not SGDOptions");
  KILN_CHECK(std::isfinite(o->momentum()) && o->momentum() >= 0,
             "SGD: momentum must be finite and non-negative, got ", o->momentum());
  KILN_CHECK(std::isfinite(o->weight_decay()) && o->weight_decay() >= 0,
             "SGD: weight_decay must be finite and non-negative, got ", o->weight_decay());
  KILN_CHECK(std::isfinite(o->dampening()), "SGD: dampening must be finite, got ", o->dampening());
  KILN_CHECK(!o->nesterov() || (o->momentum() > 0 && o->dampening() == 0),
             "SGD: nesterov needs momentum > 0 and dampening 0, got momentum ", o->momentum(),
             " and dampening ", o->dampening());
}

std::vector<Optimizer::StateKind> SGD::state_kinds() const { return {{"momentum_buffer"}}; }

void SGD::step() {
  detail::PhaseScope phase(profiler::Phase::Optimizer);
  NoGradGuard no_grad;
  namespace graph = detail::graph;
  graph::Capture* capture = graph::active();
  for (size_t gi = 0; gi < param_groups().size(); ++gi) {
    auto& group = param_groups()[gi];
    const auto& o = static_cast<const SGDOptions&>(*group.options);
    // In a capture, each replay reads the group's learning rate (a scheduler's).
    auto lr_now = [this, gi] {
      return static_cast<const SGDOptions&>(*param_groups()[gi].options).lr();
    };
    for (auto& p : group.params) {
      Tensor g = p.grad();
      if (!g.defined()) continue;
      if (o.momentum() == 0) {
        // Plain SGD: two elementwise ops, no state.
        Tensor d = o.weight_decay() != 0 ? g + p * o.weight_decay() : g;
        if (capture)
          graph::patch_next(
              *capture, "kiln.fill",
              [lr_now](std::span<kiln_attr> attrs) { graph::set_attr(attrs, "value", lr_now()); },
              lifetime(), "the SGD optimizer");
        p.sub_(d * detail::scalar_operand(d, o.lr(), "SGD"));
        continue;
      }
      bool first = !has_state(p, "momentum_buffer");
      if (capture && first)
        graph::refuse(*capture, "SGD.step()",
                      "a parameter's momentum buffer is created on its first step; run a "
                      "warm-up step before capturing");
      Tensor& buf = state(p, "momentum_buffer");
      if (first) buf = empty_like(p);
      Tensor gc = g.to(p.dtype()), pv = p, bv = buf;
      if (is_complex(p.dtype())) {  // the kernel steps the real and imaginary parts
        gc = view_as_real(gc.contiguous());
        pv = view_as_real(p);
        bv = view_as_real(buf);
      }
      if (capture)
        graph::patch_next(
            *capture, "kiln.sgd_step",
            [lr_now](std::span<kiln_attr> attrs) { graph::set_attr(attrs, "lr", lr_now()); },
            lifetime(), "the SGD optimizer");
      detail::dispatch(detail::attrs::sgd_step{.lr = o.lr(),
                                               .momentum = o.momentum(),
                                               .dampening = o.dampening(),
                                               .weight_decay = o.weight_decay(),
                                               .nesterov = o.nesterov(),
                                               .first_step = first},
                       {gc.impl().get()}, {pv.impl().get(), bv.impl().get()});
      p.impl()->storage->version++;
    }
  }
}

}  // namespace kiln::optim
