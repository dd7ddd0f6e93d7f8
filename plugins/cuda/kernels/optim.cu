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
#include "kernels/registry.h"
#include "kiln/sdk/optim.h"

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

using sdk::SgdScalars;  // the formulas: kiln/sdk/optim.h

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
  const sdk::SgdStep step = sdk::sgd_step(args);
  if (step.param.numel() == 0) return;
  if (!dispatch_f32_f64(step.param.dtype, [&](auto tag) {
        using T = typename decltype(tag)::type;
        if (step.has_momentum()) {
          const Tensor* ops[3] = {&step.param, &step.buffer, &step.grad};
          launch_sgd<T, true>(ops, step.scalars<T>(), l);
        } else {
          const Tensor* ops[2] = {&step.param, &step.grad};
          launch_sgd<T, false>(ops, step.scalars<T>(), l);
        }
      })) {
    sdk::unsupported_dtype(step.param.dtype);
  }
}

// ---- Adam / AdamW --------------------------------------------------------------------------

using sdk::AdamScalars;  // the formulas: kiln/sdk/optim.h

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
  const sdk::AdamStep step = sdk::adam_step(args);
  const Tensor &param = step.param, &exp_avg = step.exp_avg, &exp_avg_sq = step.exp_avg_sq;
  if (param.numel() == 0) return;
  if (!dispatch_f32_f64(param.dtype, [&](auto tag) {
        using T = typename decltype(tag)::type;
        const AdamScalars<T> s = step.scalars<T>();
        const Tensor* ops[4] = {&param, &exp_avg, &exp_avg_sq, &step.grad};
        const StridedIndexer<4> ix = make_indexer(ops);
        const int64_t n = param.numel();
        if (is_linear(ix)) {
          adam_kernel<T, true><<<grid_for(n, l), kThreads, 0, l.stream()>>>(
              param.ptr<T>(), exp_avg.ptr<T>(), exp_avg_sq.ptr<T>(), step.grad.ptr<const T>(), ix,
              n, s);
        } else {
          adam_kernel<T, false><<<grid_for(n, l), kThreads, 0, l.stream()>>>(
              param.ptr<T>(), exp_avg.ptr<T>(), exp_avg_sq.ptr<T>(), step.grad.ptr<const T>(), ix,
              n, s);
        }
      })) {
    sdk::unsupported_dtype(param.dtype);
  }
  check_launch("adam_step");
}

}  // namespace

void add_optim_kernels(KernelList& list) {
  list.push_back(
      catalogue_entry<op::sgd_step>(&sgd_step_impl, &sdk::supports_optim, sdk::kStridedInOut));
  list.push_back(
      catalogue_entry<op::adam_step>(&adam_step_impl, &sdk::supports_optim, sdk::kStridedInOut));
}

}  // namespace kiln::cuda
