// kiln/sdk/optim.h — the fused optimizer steps (kiln.sgd_step, kiln.adam_step): their
// operand checks and the per-step scalars, written once for every plugin. Scalars are
// worked out on the host in float64 and rounded once to the parameter's dtype (as
// PyTorch does for its `alpha`/`value` arguments); the plugins' kernels apply the
// per-element formulas below in this order, each with its own loops.
#ifndef KILN_SDK_OPTIM_H
#define KILN_SDK_OPTIM_H

#include <cmath>
#include <cstddef>
#include <cstdint>

#include "kiln/sdk/op_args.h"
#include "kiln/sdk/op_attrs.h"

namespace kiln::sdk {

/// SGD, one element:
///   d = grad (+ weight_decay * param)
///   momentum != 0: buf = first_step ? d : momentum * buf + (1 - dampening) * d
///                  d = nesterov ? d + momentum * buf : buf
///   param = param - lr * d
/// (A plain aggregate: device code takes it by value.)
template <class T>
struct SgdScalars {
  T lr, momentum, dampening_complement, weight_decay;
  bool nesterov, first_step;
};

/// Adam / AdamW, one element (torch.optim.Adam, single-tensor path):
///   weight_decay: AdamW param *= decay_factor (1 - lr * wd); Adam grad += wd * param
///   exp_avg = lerp(exp_avg, grad, lerp_weight (1 - beta1))
///   exp_avg_sq = exp_avg_sq * beta2 + one_minus_beta2 * grad * grad
///   denom = sqrt(exp_avg_sq) / bias_correction2_sqrt (sqrt(1 - beta2^step)) + eps
///   param = param - step_size (lr / (1 - beta1^step)) * exp_avg / denom
template <class T>
struct AdamScalars {
  T weight_decay, decay_factor, lerp_weight, beta2, one_minus_beta2, bias_correction2_sqrt, eps,
      step_size;
  bool decoupled;
};

/// kiln.sgd_step's checked operands: grad in, param and (with momentum) the momentum
/// buffer updated in place.
struct SgdStep {
  TensorView grad, param, buffer;
  double lr, momentum, dampening, weight_decay;
  bool nesterov, first_step;

  /// Whether the momentum buffer is an operand (it exists only when momentum != 0).
  bool has_momentum() const { return momentum != 0; }
  template <class T>
  SgdScalars<T> scalars() const {
    if (!has_momentum()) return {T(lr), T(0), T(1), T(weight_decay), false, false};
    return {T(lr), T(momentum), T(1.0 - dampening), T(weight_decay), nesterov, first_step};
  }
};

inline SgdStep sgd_step(const OpArgs& args) {
  const auto a = attrs::sgd_step::read(args);
  SgdStep s{};
  s.lr = a.lr;
  s.momentum = a.momentum;
  s.dampening = a.dampening;
  s.weight_decay = a.weight_decay;
  s.nesterov = a.nesterov != 0;
  s.first_step = a.first_step != 0;
  args.expect_counts(1, 2);
  s.grad = args.input(0);
  s.param = args.output(0);
  s.buffer = args.output(1);
  expect_same_shape(s.grad, s.param, "grad");
  expect_dtype(s.grad, s.param.dtype, "grad");
  if (s.has_momentum()) {  // the buffer only exists (and is only checked) with momentum
    expect_same_shape(s.buffer, s.param, "momentum_buffer");
    expect_dtype(s.buffer, s.param.dtype, "momentum_buffer");
  }
  return s;
}

/// kiln.adam_step's checked operands: grad in; param, exp_avg and exp_avg_sq updated
/// in place.
struct AdamStep {
  TensorView grad, param, exp_avg, exp_avg_sq;
  double lr, beta1, beta2, eps, weight_decay;
  bool decoupled;
  int64_t step;  // 1-based

  template <class T>
  AdamScalars<T> scalars() const {
    const double bias_correction1 = 1.0 - std::pow(beta1, static_cast<double>(step));
    const double bias_correction2 = 1.0 - std::pow(beta2, static_cast<double>(step));
    return {
        T(weight_decay), T(1.0 - lr * weight_decay),     T(1.0 - beta1), T(beta2),
        T(1.0 - beta2),  T(std::sqrt(bias_correction2)), T(eps),         T(lr / bias_correction1),
        decoupled};
  }
};

inline AdamStep adam_step(const OpArgs& args) {
  const auto at = attrs::adam_step::read(args);
  AdamStep a{};
  a.lr = at.lr;
  a.beta1 = at.beta1;
  a.beta2 = at.beta2;
  a.eps = at.eps;
  a.weight_decay = at.weight_decay;
  a.decoupled = at.decoupled != 0;
  a.step = at.step;
  KILN_SDK_CHECK_ARG(a.step >= 1, "step is 1-based, got ", a.step);
  args.expect_counts(1, 3);
  a.grad = args.input(0);
  a.param = args.output(0);
  a.exp_avg = args.output(1);
  a.exp_avg_sq = args.output(2);
  for (const TensorView* t : {&a.grad, &a.exp_avg, &a.exp_avg_sq}) {
    expect_same_shape(*t, a.param, "optimizer state");
    expect_dtype(*t, a.param.dtype, "optimizer state");
  }
  return a;
}

/// kiln.non_finite_check_and_unscale's checked operands: inv_scale in, found_inf and 1
/// to 7 gradients updated in place. inv_scale and found_inf are float32 and hold one
/// element each (they may live in device memory: nothing here reads them); each
/// gradient's dtype is the plugin's to switch on (visit_dtype).
struct Unscale {
  static constexpr size_t kMaxGrads = 7;
  TensorView inv_scale, found_inf;
  TensorView grads[kMaxGrads];
  size_t num_grads;
};

inline Unscale non_finite_check_and_unscale_operands(const OpArgs& args) {
  const kiln_op_args& raw = args.raw();
  KILN_SDK_CHECK_ARG(
      raw.num_inputs == 1 && raw.num_outputs >= 2 && raw.num_outputs <= Unscale::kMaxGrads + 1,
      "expected inv_scale, found_inf and 1 to ", Unscale::kMaxGrads, " gradients, got ",
      raw.num_inputs, " inputs and ", raw.num_outputs, " outputs");
  Unscale u{};
  u.inv_scale = args.input(0);
  u.found_inf = args.output(0);
  for (const TensorView* t : {&u.inv_scale, &u.found_inf}) {
    const char* what = t == &u.inv_scale ? "inv_scale" : "found_inf";
    expect_dtype(*t, KILN_DTYPE_FLOAT32, what);
    KILN_SDK_CHECK_ARG(t->numel() == 1, what, " must hold one element, got shape ",
                       shape_string(*t));
  }
  u.num_grads = raw.num_outputs - 1;
  for (size_t i = 0; i < u.num_grads; ++i) u.grads[i] = args.output(i + 1);
  return u;
}

/// `supports` of both steps: float32 or float64 parameters, with grad of their dtype.
inline int32_t supports_optim(void*, const kiln_op_args* args) {
  const kiln_dtype d = output_dtype(args, 0);
  return (d == KILN_DTYPE_FLOAT32 || d == KILN_DTYPE_FLOAT64) && input_dtype(args, 0) == d;
}

}  // namespace kiln::sdk

#endif  // KILN_SDK_OPTIM_H
