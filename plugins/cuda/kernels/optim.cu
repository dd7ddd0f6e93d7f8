// Fused optimizer updates: kiln.sgd_step and kiln.adam_step, and loss scaling's
// kiln.non_finite_check_and_unscale.
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
// float16 and bfloat16 parameters (staged, staged.h: optim.half) keep their state in
// their own dtype, as the catalogue says: each element widens exactly to float32, the
// float32 formulas run, and the parameter and state round once — what the CPU plugin's
// widened kernel does, so the bits agree there too.
//
// Operands that are all contiguous (the usual case) are indexed linearly; otherwise a
// StridedIndexer maps the element index to each operand's offset.
#include <cmath>

#include "dnn_util.cuh"
#include "kernels/registry.h"
#include "kiln/sdk/optim.h"
#include "staged.h"

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

// float16 and bfloat16 only while staged code is on (supports_optim_staged declines
// them otherwise, so this is a second lock).
template <class F>
bool visit_optim(kiln_dtype dtype, F&& fn) {
  static const bool half_on = staged_on(kStagedHalfOptim);
  return half_on ? visit_float(dtype, fn) : visit_f32_f64(dtype, fn);
}

int32_t supports_optim_staged(void* context, const kiln_op_args* args) noexcept {
  if (sdk::supports_optim(context, args)) return 1;
  const kiln_dtype d = sdk::output_dtype(args, 0);
  if ((d != KILN_DTYPE_FLOAT16 && d != KILN_DTYPE_BFLOAT16) || sdk::input_dtype(args, 0) != d)
    return 0;
  static const bool half_on = staged_on(kStagedHalfOptim);
  return half_on ? 1 : 0;
}

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
// T: the stored dtype; C: the one computed in (float32 for the half types).
template <class T, bool kMomentum, bool kLinear, class C = compute_t<T>>
__global__ void sgd_kernel(T* __restrict__ param, T* __restrict__ buffer,
                           const T* __restrict__ grad, StridedIndexer<kMomentum ? 3 : 2> ix,
                           int64_t n, SgdScalars<C> s) {
  constexpr int N = kMomentum ? 3 : 2;
  for (int64_t i = first_index(); i < n; i += grid_stride()) {
    int64_t off[N];
    element_offsets<N, kLinear>(ix, i, off);
    const C p = load(param[off[0]]);
    C d = load(grad[off[N - 1]]);
    if (s.weight_decay != C(0)) d = add_rn(d, mul_rn(s.weight_decay, p));
    if constexpr (kMomentum) {
      const C b = s.first_step ? d
                               : add_rn(mul_rn(load(buffer[off[1]]), s.momentum),
                                        mul_rn(s.dampening_complement, d));
      buffer[off[1]] = store<T>(b);
      d = s.nesterov ? add_rn(d, mul_rn(s.momentum, b)) : b;
    }
    param[off[0]] = store<T>(sub_rn(p, mul_rn(s.lr, d)));
  }
}

template <class T, bool kMomentum>
void launch_sgd(const TensorView* const (&ops)[kMomentum ? 3 : 2],
                const SgdScalars<compute_t<T>>& s, const Launch& l) {
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
  if (!visit_optim(step.param.dtype, [&](auto tag) {
        using T = typename decltype(tag)::type;
        if (step.has_momentum()) {
          const TensorView* ops[3] = {&step.param, &step.buffer, &step.grad};
          launch_sgd<T, true>(ops, step.scalars<compute_t<T>>(), l);
        } else {
          const TensorView* ops[2] = {&step.param, &step.grad};
          launch_sgd<T, false>(ops, step.scalars<compute_t<T>>(), l);
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
template <class T, bool kLinear, class C = compute_t<T>>
__global__ void adam_kernel(T* __restrict__ param, T* __restrict__ exp_avg,
                            T* __restrict__ exp_avg_sq, const T* __restrict__ grad,
                            StridedIndexer<4> ix, int64_t n, AdamScalars<C> s) {
  for (int64_t i = first_index(); i < n; i += grid_stride()) {
    int64_t off[4];
    element_offsets<4, kLinear>(ix, i, off);
    C w = load(param[off[0]]);
    C g = load(grad[off[3]]);
    if (s.weight_decay != C(0)) {
      if (s.decoupled) {
        w = mul_rn(w, s.decay_factor);
      } else {
        g = add_rn(g, mul_rn(s.weight_decay, w));
      }
    }
    const C m_new = lerp(load(exp_avg[off[1]]), g, s.lerp_weight);
    const C v_new =
        add_rn(mul_rn(load(exp_avg_sq[off[2]]), s.beta2), mul_rn(s.one_minus_beta2, mul_rn(g, g)));
    const C denom = add_rn(div_rn(sqrt_rn(v_new), s.bias_correction2_sqrt), s.eps);
    exp_avg[off[1]] = store<T>(m_new);
    exp_avg_sq[off[2]] = store<T>(v_new);
    param[off[0]] = store<T>(add_rn(w, mul_rn(-s.step_size, div_rn(m_new, denom))));
  }
}

void adam_step_impl(const OpArgs& args, const Launch& l) {
  const sdk::AdamStep step = sdk::adam_step(args);
  const TensorView &param = step.param, &exp_avg = step.exp_avg, &exp_avg_sq = step.exp_avg_sq;
  if (param.numel() == 0) return;
  if (!visit_optim(param.dtype, [&](auto tag) {
        using T = typename decltype(tag)::type;
        const AdamScalars<compute_t<T>> s = step.scalars<compute_t<T>>();
        const TensorView* ops[4] = {&param, &exp_avg, &exp_avg_sq, &step.grad};
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

// ---- loss scaling's check and unscale -------------------------------------------------------

// grad *= inv_scale in the gradient's compute type (as the CPU plugin), noting any inf
// or NaN the result holds. inv_scale is read from device memory, so a captured step
// replays with the scale of the moment; found_inf is only ever set (to 1), never
// cleared, so the threads that set it race harmlessly.
template <class T, bool kLinear>
__global__ void unscale_kernel(T* __restrict__ grad, StridedIndexer<1> ix, int64_t n,
                               const float* __restrict__ inv_scale, float* __restrict__ found_inf) {
  using C = compute_t<T>;
  const C inv = static_cast<C>(*inv_scale);
  bool bad = false;
  for (int64_t i = first_index(); i < n; i += grid_stride()) {
    int64_t off[1];
    element_offsets<1, kLinear>(ix, i, off);
    const T out = store<T>(mul_rn(load(grad[off[0]]), inv));
    bad = bad || !isfinite(load(out));
    grad[off[0]] = out;
  }
  if (bad) *found_inf = 1.0f;
}

void non_finite_check_and_unscale_impl(const OpArgs& args, const Launch& l) {
  const sdk::Unscale u = sdk::non_finite_check_and_unscale_operands(args);
  KILN_SDK_CHECK(
      staged_on(kStagedUnscale), KILN_STATUS_UNSUPPORTED,
      "non_finite_check_and_unscale is staged on CUDA (KILN_CUDA_STAGED=", kStagedUnscale, ")");
  const float* inv_scale = u.inv_scale.ptr<const float>();
  float* found_inf = u.found_inf.ptr<float>();
  for (size_t i = 0; i < u.num_grads; ++i) {
    const TensorView& grad = u.grads[i];
    const int64_t n = grad.numel();
    if (n == 0) continue;
    if (!visit_float(grad.dtype, [&](auto tag) {
          using T = typename decltype(tag)::type;
          const TensorView* ops[1] = {&grad};
          const StridedIndexer<1> ix = make_indexer(ops);
          if (is_linear(ix)) {
            unscale_kernel<T, true><<<grid_for(n, l), kThreads, 0, l.stream()>>>(
                grad.ptr<T>(), ix, n, inv_scale, found_inf);
          } else {
            unscale_kernel<T, false><<<grid_for(n, l), kThreads, 0, l.stream()>>>(
                grad.ptr<T>(), ix, n, inv_scale, found_inf);
          }
        })) {
      sdk::unsupported_dtype(grad.dtype);
    }
    check_launch("non_finite_check_and_unscale");
  }
}

// Staged (staged.h: amp.unscale): declined, so the op takes the counted CPU fallback,
// unless KILN_CUDA_STAGED turns it on.
int32_t supports_unscale(void* context, const kiln_op_args* args) noexcept {
  static const bool on = staged_on(kStagedUnscale);
  if (!on || !sdk::supports_catalogue_dtypes<op::non_finite_check_and_unscale>(context, args))
    return 0;
  for (size_t i = 1; i < args->num_outputs; ++i)
    if (!sdk::is_float_dtype(sdk::output_dtype(args, i))) return 0;
  return 1;
}

}  // namespace

void add_optim_kernels(KernelList& list) {
  list.push_back(
      catalogue_entry<op::sgd_step>(&sgd_step_impl, &supports_optim_staged, sdk::kStridedInOut));
  list.push_back(
      catalogue_entry<op::adam_step>(&adam_step_impl, &supports_optim_staged, sdk::kStridedInOut));
  list.push_back(catalogue_entry<op::non_finite_check_and_unscale>(
      &non_finite_check_and_unscale_impl, &supports_unscale, sdk::kStridedInOut));
}

}  // namespace kiln::cuda
