// Fused optimizer updates: kiln.sgd_step and kiln.adam_step.
//
// One elementwise pass over the parameter and its state, strided in and out, with
// PyTorch's formulas in PyTorch's operation order (so results match torch.optim to
// the last bit in the same dtype). Scalars are computed in float64 and rounded to the
// parameter's dtype once, as PyTorch does for its `alpha`/`value` arguments.
#include <atomic>
#include <cmath>

#include "elementwise.h"
#include "kiln/sdk/optim.h"
#include "registry.h"
#include "widen.h"

namespace kiln::cpu {

namespace {

using OptimTypes = TypeList<float, double>;

// The formulas: kiln/sdk/optim.h.
template <class T, bool kMomentum>
struct SgdLoop : sdk::SgdScalars<T> {
  using Scalars = sdk::SgdScalars<T>;
  using Scalars::lr, Scalars::momentum, Scalars::dampening_complement, Scalars::weight_decay,
      Scalars::nesterov, Scalars::first_step;

  void operator()(char* const* p, const int64_t* s, int64_t n) const {
    T* param = reinterpret_cast<T*>(p[0]);
    T* buf = kMomentum ? reinterpret_cast<T*>(p[1]) : nullptr;
    const T* grad = reinterpret_cast<const T*>(p[kMomentum ? 2 : 1]);
    const int64_t sp = s[0], sb = kMomentum ? s[1] : 0, sg = s[kMomentum ? 2 : 1];
    if (sp == 1 && sg == 1 && (!kMomentum || sb == 1)) {
      // The usual case, with the per-step choices hoisted so the loop vectorizes;
      // the arithmetic is the same, element for element.
      if (weight_decay != T(0)) return contiguous<true>(param, buf, grad, n);
      return contiguous<false>(param, buf, grad, n);
    }
    for (int64_t i = 0; i < n; ++i) {
      T d = grad[i * sg];
      if (weight_decay != T(0)) d = d + weight_decay * param[i * sp];
      if constexpr (kMomentum) {
        T b = first_step ? d : buf[i * sb] * momentum + dampening_complement * d;
        buf[i * sb] = b;
        d = nesterov ? d + momentum * b : b;
      }
      param[i * sp] = param[i * sp] - lr * d;
    }
  }

  template <bool kDecay>
  void contiguous(T* __restrict param, T* __restrict buf, const T* __restrict grad,
                  int64_t n) const {
    if constexpr (kMomentum) {
      if (first_step) {
        if (nesterov) return contiguous_momentum<kDecay, true, true>(param, buf, grad, n);
        return contiguous_momentum<kDecay, true, false>(param, buf, grad, n);
      }
      if (nesterov) return contiguous_momentum<kDecay, false, true>(param, buf, grad, n);
      return contiguous_momentum<kDecay, false, false>(param, buf, grad, n);
    } else {
      for (int64_t i = 0; i < n; ++i) {
        T d = grad[i];
        if constexpr (kDecay) d = d + weight_decay * param[i];
        param[i] = param[i] - lr * d;
      }
    }
  }

  template <bool kDecay, bool kFirst, bool kNesterov>
  void contiguous_momentum(T* __restrict param, T* __restrict buf, const T* __restrict grad,
                           int64_t n) const {
    for (int64_t i = 0; i < n; ++i) {
      T d = grad[i];
      if constexpr (kDecay) d = d + weight_decay * param[i];
      const T b = kFirst ? d : buf[i] * momentum + dampening_complement * d;
      buf[i] = b;
      d = kNesterov ? d + momentum * b : b;
      param[i] = param[i] - lr * d;
    }
  }
};

void sgd_step_impl(const OpArgs& args) {
  const sdk::SgdStep step = sdk::sgd_step(args);
  if (!visit_dtype<OptimTypes>(step.param.dtype, [&](auto tag) {
        using T = typename decltype(tag)::type;
        if (step.has_momentum()) {
          const TensorView* ops[3] = {&step.param, &step.buffer, &step.grad};
          run_loop(make_loop_plan(ops), SgdLoop<T, true>{step.scalars<T>()});
        } else {
          const TensorView* ops[2] = {&step.param, &step.grad};
          run_loop(make_loop_plan(ops), SgdLoop<T, false>{step.scalars<T>()});
        }
      })) {
    unsupported_dtype(step.param.dtype);
  }
}

template <class T>
struct AdamLoop : sdk::AdamScalars<T> {
  using Scalars = sdk::AdamScalars<T>;
  using Scalars::weight_decay, Scalars::decay_factor, Scalars::lerp_weight, Scalars::beta2,
      Scalars::one_minus_beta2, Scalars::bias_correction2_sqrt, Scalars::eps, Scalars::step_size,
      Scalars::decoupled;

  // torch.lerp: two formulas, chosen by the weight, for accuracy at both ends.
  static T lerp(T start, T end, T weight) {
    return weight < T(0.5) ? start + weight * (end - start) : end - (end - start) * (T(1) - weight);
  }

  void operator()(char* const* p, const int64_t* s, int64_t n) const {
    T* param = reinterpret_cast<T*>(p[0]);
    T* m = reinterpret_cast<T*>(p[1]);
    T* v = reinterpret_cast<T*>(p[2]);
    const T* grad = reinterpret_cast<const T*>(p[3]);
    if (s[0] == 1 && s[1] == 1 && s[2] == 1 && s[3] == 1) {
      // The usual case, with the per-step choices hoisted so the loop vectorizes
      // (sqrt and division included); the arithmetic is the same, element for element.
      const bool decay = weight_decay != T(0);
      const bool low = lerp_weight < T(0.5);
      if (!decay) {
        return low ? contiguous<false, false, true>(param, m, v, grad, n)
                   : contiguous<false, false, false>(param, m, v, grad, n);
      }
      if (decoupled) {
        return low ? contiguous<true, true, true>(param, m, v, grad, n)
                   : contiguous<true, true, false>(param, m, v, grad, n);
      }
      return low ? contiguous<true, false, true>(param, m, v, grad, n)
                 : contiguous<true, false, false>(param, m, v, grad, n);
    }
    for (int64_t i = 0; i < n; ++i) {
      T w = param[i * s[0]];
      T g = grad[i * s[3]];
      if (weight_decay != T(0)) {
        if (decoupled) {
          w = w * decay_factor;
        } else {
          g = g + weight_decay * w;
        }
      }
      const T m_new = lerp(m[i * s[1]], g, lerp_weight);
      const T v_new = v[i * s[2]] * beta2 + one_minus_beta2 * (g * g);
      const T denom = std::sqrt(v_new) / bias_correction2_sqrt + eps;
      m[i * s[1]] = m_new;
      v[i * s[2]] = v_new;
      param[i * s[0]] = w + (-step_size) * (m_new / denom);
    }
  }

  template <bool kDecay, bool kDecoupled, bool kLerpLow>
  void contiguous(T* __restrict param, T* __restrict m, T* __restrict v, const T* __restrict grad,
                  int64_t n) const {
    const T one_minus_weight = T(1) - lerp_weight;
    for (int64_t i = 0; i < n; ++i) {
      T w = param[i];
      T g = grad[i];
      if constexpr (kDecay) {
        if constexpr (kDecoupled) {
          w = w * decay_factor;
        } else {
          g = g + weight_decay * w;
        }
      }
      const T start = m[i];
      // lerp(start, g, lerp_weight), the branch lerp() takes for this weight.
      const T m_new =
          kLerpLow ? start + lerp_weight * (g - start) : g - (g - start) * one_minus_weight;
      const T v_new = v[i] * beta2 + one_minus_beta2 * (g * g);
      const T denom = std::sqrt(v_new) / bias_correction2_sqrt + eps;
      m[i] = m_new;
      v[i] = v_new;
      param[i] = w + (-step_size) * (m_new / denom);
    }
  }
};

void adam_step_impl(const OpArgs& args) {
  const sdk::AdamStep step = sdk::adam_step(args);
  if (!visit_dtype<OptimTypes>(step.param.dtype, [&](auto tag) {
        using T = typename decltype(tag)::type;
        const TensorView* ops[4] = {&step.param, &step.exp_avg, &step.exp_avg_sq, &step.grad};
        run_loop(make_loop_plan(ops), AdamLoop<T>{step.scalars<T>()});
      })) {
    unsupported_dtype(step.param.dtype);
  }
}

// grad *= inv_scale in the gradient's compute type, noting any inf or NaN the result
// holds (one in the gradient, or one the multiply or the rounding made).
template <class T>
struct UnscaleLoop {
  compute_t<T> inv_scale;
  std::atomic<bool>* non_finite;

  void operator()(char* const* p, const int64_t* s, int64_t n) const {
    T* g = reinterpret_cast<T*>(p[0]);
    bool bad = false;
    for (int64_t i = 0; i < n; ++i) {
      const T out = store<T>(load(g[i * s[0]]) * inv_scale);
      bad |= !std::isfinite(load(out));
      g[i * s[0]] = out;
    }
    if (bad) non_finite->store(true, std::memory_order_relaxed);
  }
};

void non_finite_check_and_unscale_impl(const OpArgs& args) {
  const sdk::Unscale u = sdk::non_finite_check_and_unscale_operands(args);
  const float inv = *u.inv_scale.ptr<const float>();
  std::atomic<bool> non_finite{false};
  for (size_t i = 0; i < u.num_grads; ++i) {
    const TensorView* ops[1] = {&u.grads[i]};
    if (!visit_dtype<FloatTypes>(u.grads[i].dtype, [&](auto tag) {
          using T = typename decltype(tag)::type;
          run_loop(make_loop_plan(ops), UnscaleLoop<T>{compute_t<T>(inv), &non_finite});
        })) {
      unsupported_dtype(u.grads[i].dtype);
    }
  }
  if (non_finite.load()) *u.found_inf.ptr<float>() = 1.0f;
}

}  // namespace

// float16 and bfloat16 parameters and state through the float32 loops (widen.h): each
// step computes in float32 and rounds the parameter and its state once.
void add_optim_kernels(KernelList& list) {
  constexpr auto supports = &supports_widened<sdk::supports_optim>;
  list.push_back(
      catalogue_entry<op::sgd_step>(&run_kernel<widened<sgd_step_impl>>, supports, kStridedInOut));
  list.push_back(catalogue_entry<op::adam_step>(&run_kernel<widened<adam_step_impl>>, supports,
                                                kStridedInOut));
  list.push_back(catalogue_kernel<op::non_finite_check_and_unscale>(
      &run_kernel<non_finite_check_and_unscale_impl>, kStridedInOut));
}

}  // namespace kiln::cpu
