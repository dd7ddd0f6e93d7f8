// Fused optimizer updates: kiln.sgd_step and kiln.adam_step.
//
// One elementwise pass over the parameter and its state, strided in and out, with
// PyTorch's formulas in PyTorch's operation order (so results match torch.optim to
// the last bit in the same dtype). Scalars are computed in float64 and rounded to the
// parameter's dtype once, as PyTorch does for its `alpha`/`value` arguments.
#include <cmath>

#include "elementwise.h"
#include "registry.h"

namespace kiln::cpu {

namespace {

using OptimTypes = TypeList<float, double>;

// SGD, one element:
//   d = grad (+ weight_decay * param)
//   momentum != 0: buf = first_step ? d : momentum * buf + (1 - dampening) * d
//                  d = nesterov ? d + momentum * buf : buf
//   param = param - lr * d
template <class T, bool kMomentum>
struct SgdLoop {
  T lr, momentum, dampening_complement, weight_decay;
  bool nesterov, first_step;

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
  const double lr = args.attr_float("lr");
  const double momentum = args.attr_float("momentum");
  const double dampening = args.attr_float("dampening");
  const double weight_decay = args.attr_float("weight_decay");
  const bool nesterov = args.attr_int("nesterov") != 0;
  const bool first_step = args.attr_int("first_step") != 0;
  args.expect_counts(1, 2);
  const Tensor grad = args.input(0), param = args.output(0), buffer = args.output(1);
  expect_same_shape(grad, param, "grad");
  expect_dtype(grad, param.dtype, "grad");
  if (!dispatch<OptimTypes>(param.dtype, [&](auto tag) {
        using T = typename decltype(tag)::type;
        if (momentum != 0) {
          // The buffer only exists (and is only checked) when momentum is in use.
          expect_same_shape(buffer, param, "momentum_buffer");
          expect_dtype(buffer, param.dtype, "momentum_buffer");
          const Tensor* ops[3] = {&param, &buffer, &grad};
          run_loop(make_loop_plan(ops), SgdLoop<T, true>{T(lr), T(momentum), T(1.0 - dampening),
                                                         T(weight_decay), nesterov, first_step});
        } else {
          const Tensor* ops[2] = {&param, &grad};
          run_loop(make_loop_plan(ops),
                   SgdLoop<T, false>{T(lr), T(0), T(1), T(weight_decay), false, false});
        }
      })) {
    unsupported_dtype(param.dtype);
  }
}

// Adam / AdamW, one element (torch.optim.Adam, single-tensor path):
//   weight_decay: AdamW param *= 1 - lr * wd; Adam grad += wd * param
//   exp_avg = lerp(exp_avg, grad, 1 - beta1)
//   exp_avg_sq = exp_avg_sq * beta2 + (1 - beta2) * grad * grad
//   denom = sqrt(exp_avg_sq) / sqrt(1 - beta2^step) + eps
//   param = param - (lr / (1 - beta1^step)) * exp_avg / denom
template <class T>
struct AdamLoop {
  T weight_decay, decay_factor, lerp_weight, beta2, one_minus_beta2, bias_correction2_sqrt, eps,
      step_size;
  bool decoupled;

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
  const double lr = args.attr_float("lr");
  const double beta1 = args.attr_float("beta1");
  const double beta2 = args.attr_float("beta2");
  const double eps = args.attr_float("eps");
  const double weight_decay = args.attr_float("weight_decay");
  const bool decoupled = args.attr_int("decoupled") != 0;
  const int64_t step = args.attr_int("step");
  KILN_SDK_CHECK_ARG(step >= 1, "step is 1-based, got ", step);
  args.expect_counts(1, 3);
  const Tensor grad = args.input(0);
  const Tensor param = args.output(0), exp_avg = args.output(1), exp_avg_sq = args.output(2);
  for (const Tensor* t : {&grad, &exp_avg, &exp_avg_sq}) {
    expect_same_shape(*t, param, "optimizer state");
    expect_dtype(*t, param.dtype, "optimizer state");
  }
  const double bias_correction1 = 1.0 - std::pow(beta1, static_cast<double>(step));
  const double bias_correction2 = 1.0 - std::pow(beta2, static_cast<double>(step));
  if (!dispatch<OptimTypes>(param.dtype, [&](auto tag) {
        using T = typename decltype(tag)::type;
        const Tensor* ops[4] = {&param, &exp_avg, &exp_avg_sq, &grad};
        run_loop(make_loop_plan(ops),
                 AdamLoop<T>{T(weight_decay), T(1.0 - lr * weight_decay), T(1.0 - beta1), T(beta2),
                             T(1.0 - beta2), T(std::sqrt(bias_correction2)), T(eps),
                             T(lr / bias_correction1), decoupled});
      })) {
    unsupported_dtype(param.dtype);
  }
}

int32_t supports_optim(void*, const kiln_op_args* args) {
  const kiln_dtype d = output_dtype(args, 0);
  return (d == KILN_DTYPE_FLOAT32 || d == KILN_DTYPE_FLOAT64) && input_dtype(args, 0) == d;
}

}  // namespace

void add_optim_kernels(KernelList& list) {
  list.push_back({"kiln.sgd_step", &run_kernel<sgd_step_impl>, &supports_optim, kStridedInOut});
  list.push_back({"kiln.adam_step", &run_kernel<adam_step_impl>, &supports_optim, kStridedInOut});
}

}  // namespace kiln::cpu
