#include "kiln/optim/adam.h"

#include "kiln/autograd.h"
#include "kiln/error.h"
#include "op_attrs.h"
#include "profiler/profiler_hooks.h"

namespace kiln::optim {

Adam::Adam(std::vector<Tensor> params, AdamOptions options)
    : Adam(single_group(std::move(params)), std::move(options)) {}

Adam::Adam(std::vector<ParamGroup> groups, AdamOptions defaults)
    : Adam(std::move(groups), defaults.clone(), "Adam", false) {}

Adam::Adam(std::vector<ParamGroup> groups, std::unique_ptr<OptimizerOptions> defaults,
           const char* name, bool decoupled)
    : Optimizer(std::move(groups), std::move(defaults), name), decoupled_(decoupled) {
  for (auto& g : param_groups()) {
    const auto& o = static_cast<const AdamOptions&>(*g.options);
    KILN_CHECK(o.betas().first >= 0 && o.betas().first < 1 && o.betas().second >= 0 &&
                   o.betas().second < 1,
               name_, ": betas must be in [0, 1), got (", o.betas().first, ", ", o.betas().second,
               ")");
    KILN_CHECK(o.eps() >= 0 && o.weight_decay() >= 0, name_,
               ": eps and weight_decay must be "
               "non-negative");
  }
}

void Adam::step() {
  detail::PhaseScope phase(profiler::Phase::Optimizer);
  NoGradGuard no_grad;
  for (auto& group : param_groups()) {
    const auto& o = static_cast<const AdamOptions&>(*group.options);
    for (auto& p : group.params) {
      Tensor g = p.grad();
      if (!g.defined()) continue;
      Tensor& m = state(p, "exp_avg");
      Tensor& v = state(p, "exp_avg_sq");
      if (!m.defined()) m = zeros_like(p);
      if (!v.defined()) v = zeros_like(p);
      int64_t t = ++step_count(p);
      Tensor gc = g.to(p.dtype());
      detail::dispatch(detail::attrs::adam_step{.lr = o.lr(),
                                                .beta1 = o.betas().first,
                                                .beta2 = o.betas().second,
                                                .eps = o.eps(),
                                                .weight_decay = o.weight_decay(),
                                                .decoupled = decoupled_,
                                                .step = t},
                       {gc.impl().get()}, {p.impl().get(), m.impl().get(), v.impl().get()});
      p.impl()->storage->version++;
    }
  }
}

AdamW::AdamW(std::vector<Tensor> params, AdamWOptions options)
    : AdamW(single_group(std::move(params)), std::move(options)) {}

AdamW::AdamW(std::vector<ParamGroup> groups, AdamWOptions defaults)
    : Adam(std::move(groups), defaults.clone(), "AdamW", true) {}

}  // namespace kiln::optim
