// Fused optimizer updates: kiln.sgd_step and kiln.adam_step.
//
// One elementwise pass over the parameter and its state, strided in and out, with
// the CPU plugin's formulas in its operation order (PyTorch's). Every operation is
// written with an explicitly rounded intrinsic (__fadd_rn, __dmul_rn, ...): nvcc
// would otherwise fuse a·b + c into one FMA, and the CPU plugin, built with
// -ffp-contract=off, rounds both steps. So the GPU's updates equal the CPU's bit for
// bit, and a run resumed on the other device continues on the same numbers. Scalars
// are computed on the host in float64 and rounded to the parameter's dtype once, as
// the CPU plugin does.
//
// Operands that are all contiguous (the usual case) are indexed linearly; otherwise a
// StridedIndexer maps the element index to each operand's offset.
#include <cmath>

#include "dnn_util.cuh"

namespace kiln::cuda {

namespace {

using namespace dnn;

// Correctly rounded, never-contracted arithmetic.
__device__ __forceinline__ float add_rn(float a, float b) { return __fadd_rn(a, b); }
__device__ __forceinline__ double add_rn(double a, double b) { return __dadd_rn(a, b); }
__device__ __forceinline__ float sub_rn(float a, float b) { return __fsub_rn(a, b); }
__device__ __forceinline__ double sub_rn(double a, double b) { return __dsub_rn(a, b); }
__device__ __forceinline__ float mul_rn(float a, float b) { return __fmul_rn(a, b); }
__device__ __forceinline__ double mul_rn(double a, double b) { return __dmul_rn(a, b); }
__device__ __forceinline__ float div_rn(float a, float b) { return __fdiv_rn(a, b); }
__device__ __forceinline__ double div_rn(double a, double b) { return __ddiv_rn(a, b); }
__device__ __forceinline__ float sqrt_rn(float a) { return __fsqrt_rn(a); }
__device__ __forceinline__ double sqrt_rn(double a) { return __dsqrt_rn(a); }

// Element offsets of N operands: linear, or through the indexer.
template <int N, bool kLinear>
__device__ __forceinline__ void element_offsets(const StridedIndexer<N>& ix, int64_t i,
                                                int64_t (&off)[N]) {
  if constexpr (kLinear) {
#pragma unroll
    for (int k = 0; k < N; ++k) off[k] = i;
  } else {
    ix.offsets(i, off);
  }
}

// ---- SGD -----------------------------------------------------------------------------------

// SGD, one element:
//   d = grad (+ weight_decay * param)
//   momentum != 0: buf = first_step ? d : momentum * buf + (1 - dampening) * d
//                  d = nesterov ? d + momentum * buf : buf
//   param = param - lr * d
template <class T>
struct SgdScalars {
  T lr, momentum, dampening_complement, weight_decay;
  bool nesterov, first_step;
};

// Operands: 0 param, 1 momentum buffer, 2 grad (kMomentum); else 0 param, 1 grad.
template <class T, bool kMomentum, bool kLinear>
__global__ void sgd_kernel(T* __restrict__ param, T* __restrict__ buffer,
                           const T* __restrict__ grad, StridedIndexer<kMomentum ? 3 : 2> ix,
                           int64_t n, SgdScalars<T> s) {
  constexpr int N = kMomentum ? 3 : 2;
  for (int64_t i = first_index(); i < n; i += grid_stride()) {
    int64_t off[N];
    element_offsets<N, kLinear>(ix, i, off);
    const T p = param[off[0]];
    T d = grad[off[N - 1]];
    if (s.weight_decay != T(0)) d = add_rn(d, mul_rn(s.weight_decay, p));
    if constexpr (kMomentum) {
      const T b = s.first_step ? d
                               : add_rn(mul_rn(buffer[off[1]], s.momentum),
                                        mul_rn(s.dampening_complement, d));
      buffer[off[1]] = b;
      d = s.nesterov ? add_rn(d, mul_rn(s.momentum, b)) : b;
    }
    param[off[0]] = sub_rn(p, mul_rn(s.lr, d));
  }
}

template <class T, bool kMomentum>
void launch_sgd(const Tensor* const (&ops)[kMomentum ? 3 : 2], const SgdScalars<T>& s,
                const Launch& l) {
  const StridedIndexer<kMomentum ? 3 : 2> ix = make_indexer(ops);
  const int64_t n = ops[0]->numel();
  T* param = ops[0]->template ptr<T>();
  T* buffer = kMomentum ? ops[1]->template ptr<T>() : nullptr;
  const T* grad = ops[kMomentum ? 2 : 1]->template ptr<const T>();
  if (is_linear(ix)) {
    sgd_kernel<T, kMomentum, true>
        <<<grid_for(n, l), kThreads, 0, l.stream()>>>(param, buffer, grad, ix, n, s);
  } else {
    sgd_kernel<T, kMomentum, false>
        <<<grid_for(n, l), kThreads, 0, l.stream()>>>(param, buffer, grad, ix, n, s);
  }
  check_launch("sgd_step");
}

void sgd_step_impl(const OpArgs& args, const Launch& l) {
  const double lr = args.attr_float("lr");
  const double momentum = args.attr_float("momentum");
  const double dampening = args.attr_float("dampening");
  const double weight_decay = args.attr_float("weight_decay");
  const bool nesterov = args.attr_int("nesterov") != 0;
  const bool first_step = args.attr_int("first_step") != 0;
  args.expect_counts(1, 2);
  const Tensor grad = args.input(0), param = args.output(0), buffer = args.output(1);
  sdk::expect_same_shape(grad, param, "grad");
  sdk::expect_dtype(grad, param.dtype, "grad");
  if (momentum != 0) {
    // The buffer only exists (and is only checked) when momentum is in use.
    sdk::expect_same_shape(buffer, param, "momentum_buffer");
    sdk::expect_dtype(buffer, param.dtype, "momentum_buffer");
  }
  if (param.numel() == 0) return;
  if (!dispatch_f32_f64(param.dtype, [&](auto tag) {
        using T = typename decltype(tag)::type;
        if (momentum != 0) {
          const Tensor* ops[3] = {&param, &buffer, &grad};
          launch_sgd<T, true>(
              ops, {T(lr), T(momentum), T(1.0 - dampening), T(weight_decay), nesterov, first_step},
              l);
        } else {
          const Tensor* ops[2] = {&param, &grad};
          launch_sgd<T, false>(ops, {T(lr), T(0), T(1), T(weight_decay), false, false}, l);
        }
      })) {
    sdk::unsupported_dtype(param.dtype);
  }
}

// ---- Adam / AdamW --------------------------------------------------------------------------

// Adam / AdamW, one element (torch.optim.Adam, single-tensor path):
//   weight_decay: AdamW param *= 1 - lr * wd; Adam grad += wd * param
//   exp_avg = lerp(exp_avg, grad, 1 - beta1)
//   exp_avg_sq = exp_avg_sq * beta2 + (1 - beta2) * grad * grad
//   denom = sqrt(exp_avg_sq) / sqrt(1 - beta2^step) + eps
//   param = param - (lr / (1 - beta1^step)) * exp_avg / denom
template <class T>
struct AdamScalars {
  T weight_decay, decay_factor, lerp_weight, beta2, one_minus_beta2, bias_correction2_sqrt, eps,
      step_size;
  bool decoupled;
};

// torch.lerp: two formulas, chosen by the weight, for accuracy at both ends.
template <class T>
__device__ __forceinline__ T lerp(T start, T end, T weight) {
  return weight < T(0.5) ? add_rn(start, mul_rn(weight, sub_rn(end, start)))
                         : sub_rn(end, mul_rn(sub_rn(end, start), sub_rn(T(1), weight)));
}

// Operands: 0 param, 1 exp_avg, 2 exp_avg_sq, 3 grad.
template <class T, bool kLinear>
__global__ void adam_kernel(T* __restrict__ param, T* __restrict__ exp_avg,
                            T* __restrict__ exp_avg_sq, const T* __restrict__ grad,
                            StridedIndexer<4> ix, int64_t n, AdamScalars<T> s) {
  for (int64_t i = first_index(); i < n; i += grid_stride()) {
    int64_t off[4];
    element_offsets<4, kLinear>(ix, i, off);
    T w = param[off[0]];
    T g = grad[off[3]];
    if (s.weight_decay != T(0)) {
      if (s.decoupled) {
        w = mul_rn(w, s.decay_factor);
      } else {
        g = add_rn(g, mul_rn(s.weight_decay, w));
      }
    }
    const T m_new = lerp(exp_avg[off[1]], g, s.lerp_weight);
    const T v_new =
        add_rn(mul_rn(exp_avg_sq[off[2]], s.beta2), mul_rn(s.one_minus_beta2, mul_rn(g, g)));
    const T denom = add_rn(div_rn(sqrt_rn(v_new), s.bias_correction2_sqrt), s.eps);
    exp_avg[off[1]] = m_new;
    exp_avg_sq[off[2]] = v_new;
    param[off[0]] = add_rn(w, mul_rn(-s.step_size, div_rn(m_new, denom)));
  }
}

void adam_step_impl(const OpArgs& args, const Launch& l) {
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
    sdk::expect_same_shape(*t, param, "optimizer state");
    sdk::expect_dtype(*t, param.dtype, "optimizer state");
  }
  if (param.numel() == 0) return;
  const double bias_correction1 = 1.0 - std::pow(beta1, static_cast<double>(step));
  const double bias_correction2 = 1.0 - std::pow(beta2, static_cast<double>(step));
  if (!dispatch_f32_f64(param.dtype, [&](auto tag) {
        using T = typename decltype(tag)::type;
        const AdamScalars<T> s{T(weight_decay), T(1.0 - lr * weight_decay),
                               T(1.0 - beta1),  T(beta2),
                               T(1.0 - beta2),  T(std::sqrt(bias_correction2)),
                               T(eps),          T(lr / bias_correction1),
                               decoupled};
        const Tensor* ops[4] = {&param, &exp_avg, &exp_avg_sq, &grad};
        const StridedIndexer<4> ix = make_indexer(ops);
        const int64_t n = param.numel();
        if (is_linear(ix)) {
          adam_kernel<T, true><<<grid_for(n, l), kThreads, 0, l.stream()>>>(
              param.ptr<T>(), exp_avg.ptr<T>(), exp_avg_sq.ptr<T>(), grad.ptr<const T>(), ix, n, s);
        } else {
          adam_kernel<T, false><<<grid_for(n, l), kThreads, 0, l.stream()>>>(
              param.ptr<T>(), exp_avg.ptr<T>(), exp_avg_sq.ptr<T>(), grad.ptr<const T>(), ix, n, s);
        }
      })) {
    sdk::unsupported_dtype(param.dtype);
  }
  check_launch("adam_step");
}

// float32 and float64, with grad of the parameter's dtype.
int32_t supports_optim(void*, const kiln_op_args* args) {
  const kiln_dtype d = sdk::output_dtype(args, 0);
  return (d == KILN_DTYPE_FLOAT32 || d == KILN_DTYPE_FLOAT64) && sdk::input_dtype(args, 0) == d;
}

}  // namespace

void add_optim_kernels(KernelList& list) {
  list.push_back({"kiln.sgd_step", &sgd_step_impl, &supports_optim, sdk::kStridedInOut});
  list.push_back({"kiln.adam_step", &adam_step_impl, &supports_optim, sdk::kStridedInOut});
}

}  // namespace kiln::cuda
