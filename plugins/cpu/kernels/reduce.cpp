// Reductions: sum, prod, mean, amax, amin, argmax, argmin, var.
//
// Accumulators (OPS.md): float32/float64 sums in float64, half types in float32,
// integers in 64 bits (wrapping, via unsigned arithmetic so overflow is defined).
#include <cmath>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif
#include <limits>

#include "binary_common.h"
#include "reduce_engine.h"
#include "registry.h"

namespace kiln::cpu {

namespace {

template <class T>
using sum_acc_t = std::conditional_t<std::is_integral_v<T>, uint64_t,
                                     std::conditional_t<is_half_v<T>, float, double>>;

template <class Acc, class C>
inline Acc widen(C x) {
  if constexpr (std::is_same_v<Acc, uint64_t>)
    return static_cast<uint64_t>(static_cast<int64_t>(x));
  else
    return static_cast<Acc>(x);
}

// Stores an accumulator as the output type; integer accumulators wrap.
template <class Out, class Acc>
inline Out narrow(Acc acc) {
  if constexpr (std::is_integral_v<Out>)
    return static_cast<Out>(acc);
  else
    return convert<Out>(acc);
}

template <class T>
struct SumPolicy {
  using In = T;
  using Acc = sum_acc_t<T>;
  using Out = T;
  static constexpr bool kLanes = true;
  Acc init(int64_t) const { return Acc(0); }
  Acc lane_identity(const Acc&) const { return Acc(0); }
  void step(Acc& acc, compute_t<T> x, int64_t) const { acc += widen<Acc>(x); }
  void merge(Acc& a, const Acc& b) const { a += b; }
  Out finish(const Acc& acc, int64_t, int64_t) const { return narrow<Out>(acc); }
};

template <class T>
struct ProdPolicy {
  using In = T;
  using Acc = sum_acc_t<T>;
  using Out = T;
  static constexpr bool kLanes = true;
  Acc init(int64_t) const { return Acc(1); }
  Acc lane_identity(const Acc&) const { return Acc(1); }
  void step(Acc& acc, compute_t<T> x, int64_t) const { acc *= widen<Acc>(x); }
  void merge(Acc& a, const Acc& b) const { a *= b; }
  Out finish(const Acc& acc, int64_t, int64_t) const { return narrow<Out>(acc); }
};

// Mean; OutT is T for kiln.mean and the accumulator type for var's first pass.
template <class T, class OutT = T>
struct MeanPolicy : SumPolicy<T> {
  using Acc = sum_acc_t<T>;
  using Out = OutT;
  Out finish(const Acc& acc, int64_t n, int64_t) const {
    if (n == 0) return convert<Out>(std::numeric_limits<Acc>::quiet_NaN());
    return convert<Out>(acc / static_cast<Acc>(n));
  }
};

template <class T>
struct VarPolicy {
  using In = T;
  using Real = sum_acc_t<T>;
  struct Acc {
    Real mean;
    Real m2;
  };
  using Out = T;
  static constexpr bool kLanes = true;
  const Real* means;
  int64_t correction;
  Acc init(int64_t out) const { return {means[out], Real(0)}; }
  Acc lane_identity(const Acc& a) const { return {a.mean, Real(0)}; }
  void step(Acc& acc, compute_t<T> x, int64_t) const {
    const Real d = static_cast<Real>(x) - acc.mean;
    acc.m2 += d * d;
  }
  void merge(Acc& a, const Acc& b) const { a.m2 += b.m2; }
  Out finish(const Acc& acc, int64_t n, int64_t) const {
    if (n - correction <= 0) return convert<Out>(std::numeric_limits<Real>::quiet_NaN());
    return convert<Out>(acc.m2 / static_cast<Real>(n - correction));
  }
};

#if defined(__SSE2__)
// max (kMax) or min of p[0..n) ignoring NaNs, and whether there were any.
template <bool kMax, class T>
T simd_extremum(const T* p, int64_t n, bool& nan) {
  constexpr T start =
      kMax ? -std::numeric_limits<T>::infinity() : std::numeric_limits<T>::infinity();
  int64_t i = 0;
  T result = start;
  if constexpr (std::is_same_v<T, float>) {
    __m128 m0 = _mm_set1_ps(start), m1 = m0, bad = _mm_setzero_ps();
    for (; i + 8 <= n; i += 8) {
      const __m128 x0 = _mm_loadu_ps(p + i), x1 = _mm_loadu_ps(p + i + 4);
      bad = _mm_or_ps(bad, _mm_or_ps(_mm_cmpunord_ps(x0, x0), _mm_cmpunord_ps(x1, x1)));
      m0 = kMax ? _mm_max_ps(m0, x0) : _mm_min_ps(m0, x0);
      m1 = kMax ? _mm_max_ps(m1, x1) : _mm_min_ps(m1, x1);
    }
    alignas(16) float lanes[8];
    _mm_store_ps(lanes, m0);
    _mm_store_ps(lanes + 4, m1);
    for (float v : lanes) result = (kMax ? v > result : v < result) ? v : result;
    nan = _mm_movemask_ps(bad) != 0;
  } else {
    __m128d m0 = _mm_set1_pd(start), m1 = m0, bad = _mm_setzero_pd();
    for (; i + 4 <= n; i += 4) {
      const __m128d x0 = _mm_loadu_pd(p + i), x1 = _mm_loadu_pd(p + i + 2);
      bad = _mm_or_pd(bad, _mm_or_pd(_mm_cmpunord_pd(x0, x0), _mm_cmpunord_pd(x1, x1)));
      m0 = kMax ? _mm_max_pd(m0, x0) : _mm_min_pd(m0, x0);
      m1 = kMax ? _mm_max_pd(m1, x1) : _mm_min_pd(m1, x1);
    }
    alignas(16) double lanes[4];
    _mm_store_pd(lanes, m0);
    _mm_store_pd(lanes + 2, m1);
    for (double v : lanes) result = (kMax ? v > result : v < result) ? v : result;
    nan = _mm_movemask_pd(bad) != 0;
  }
  for (; i < n; ++i) {
    result = (kMax ? p[i] > result : p[i] < result) ? p[i] : result;
    nan |= p[i] != p[i];
  }
  return result;
}
#endif

// max/min that propagate NaN: once the accumulator is NaN it stays NaN.
template <class T, bool kMax>
struct ExtremumPolicy {
  using In = T;
  using Acc = compute_t<T>;
  using Out = T;
  static constexpr bool kLanes = true;
  static Acc identity() {
    if constexpr (std::numeric_limits<Acc>::has_infinity) {
      return kMax ? -std::numeric_limits<Acc>::infinity() : std::numeric_limits<Acc>::infinity();
    } else {
      return kMax ? std::numeric_limits<Acc>::lowest() : std::numeric_limits<Acc>::max();
    }
  }
  Acc init(int64_t) const { return identity(); }
  Acc lane_identity(const Acc&) const { return identity(); }
  void step(Acc& acc, Acc x, int64_t) const {
    const bool better = kMax ? x > acc : x < acc;
    acc = (better || is_nan(x)) ? x : acc;
  }
  void merge(Acc& a, const Acc& b) const { step(a, b, 0); }
  Out finish(const Acc& acc, int64_t, int64_t) const { return convert<Out>(acc); }
  // Contiguous runs of float/double use SSE2 max/min (part of every x86-64): GCC will
  // not vectorize a NaN-aware max reduction by itself. NaNs are tracked on the side.
  void reduce_contiguous(Acc& acc, const T* p, int64_t count) const {
    bool nan = false;
    Acc m = identity();
#if defined(__SSE2__)
    if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
      m = simd_extremum<kMax>(p, count, nan);
    } else
#endif
    {
      for (int64_t i = 0; i < count; ++i) {
        const Acc x = load(p[i]);
        m = (kMax ? x > m : x < m) ? x : m;
        nan |= is_nan(x);
      }
    }
    step(acc, nan ? std::numeric_limits<Acc>::quiet_NaN() : m, 0);
  }
};

// Index of the first max/min; NaN counts as both the maximum and the minimum.
template <class T, bool kMax>
struct ArgPolicy {
  using In = T;
  struct Acc {
    compute_t<T> value;
    int64_t index;  // -1: nothing seen yet
  };
  using Out = int64_t;
  static constexpr bool kLanes = false;
  static bool better(compute_t<T> x, compute_t<T> current) {
    if (is_nan(x)) return !is_nan(current);
    return kMax ? x > current : x < current;
  }
  Acc init(int64_t) const { return {compute_t<T>(0), -1}; }
  Acc lane_identity(const Acc&) const { return init(0); }
  void step(Acc& acc, compute_t<T> x, int64_t r) const {
    if (acc.index < 0 || better(x, acc.value)) acc = {x, r};
  }
  void merge(Acc& a, const Acc& b) const {
    if (b.index >= 0 && (a.index < 0 || better(b.value, a.value))) a = b;
  }
  Out finish(const Acc& acc, int64_t, int64_t) const { return acc.index < 0 ? 0 : acc.index; }
};

using sdk::ReduceOperands;  // x -> y and the plan, checked (kiln/sdk/reduce_plan.h)

template <template <class> class Policy, class... Lists>
void simple_impl(const OpArgs& args) {
  const ReduceOperands o(args);
  expect_dtype(o.y, o.x.dtype, "y");
  if (!visit_dtype<Lists...>(o.x.dtype, [&](auto tag) {
        using T = typename decltype(tag)::type;
        run_reduce(o.plan, o.x.ptr<const T>(), o.y.ptr<T>(), Policy<T>{});
      })) {
    unsupported_dtype(o.x.dtype);
  }
}

template <class T>
using Mean = MeanPolicy<T>;
template <class T>
using Amax = ExtremumPolicy<T, true>;
template <class T>
using Amin = ExtremumPolicy<T, false>;

template <bool kMax>
void arg_impl(const OpArgs& args) {
  const ReduceOperands o(args);
  expect_dtype(o.y, KILN_DTYPE_INT64, "y");
  KILN_SDK_CHECK_ARG(o.plan.reduced_dims <= 1, "exactly one dimension may be reduced, got ",
                     o.plan.reduced_dims);
  if (!visit_dtype<FloatTypes, IntTypes>(o.x.dtype, [&](auto tag) {
        using T = typename decltype(tag)::type;
        run_reduce(o.plan, o.x.ptr<const T>(), o.y.ptr<int64_t>(), ArgPolicy<T, kMax>{});
      })) {
    unsupported_dtype(o.x.dtype);
  }
}

void var_impl(const OpArgs& args) {
  const int64_t correction = sdk::attrs::var::read(args).correction;
  const ReduceOperands o(args);
  expect_dtype(o.y, o.x.dtype, "y");
  if (!visit_dtype<FloatTypes>(o.x.dtype, [&](auto tag) {
        using T = typename decltype(tag)::type;
        using Real = sum_acc_t<T>;
        // Two passes, as OPS.md specifies: the means first, then squared deviations.
        std::vector<Real> means(static_cast<size_t>(o.plan.outputs));
        run_reduce(o.plan, o.x.ptr<const T>(), means.data(), MeanPolicy<T, Real>{});
        run_reduce(o.plan, o.x.ptr<const T>(), o.y.ptr<T>(),
                   VarPolicy<T>{means.data(), correction});
      })) {
    unsupported_dtype(o.x.dtype);
  }
}

// Beyond the catalogue's rule for argmax/argmin: the output is int64.
int32_t supports_arg(void*, const kiln_op_args* args) {
  const kiln_dtype d = input_dtype(args, 0);
  return (is_float_dtype(d) || is_int_dtype(d)) && output_dtype(args, 0) == KILN_DTYPE_INT64;
}

constexpr uint32_t kStridedIn = KILN_KERNEL_STRIDED_INPUTS;

}  // namespace

void add_reduce_kernels(KernelList& list) {
  list.push_back(catalogue_kernel<op::sum>(
      &run_kernel<simple_impl<SumPolicy, FloatTypes, SignedIntTypes>>, kStridedIn));
  list.push_back(catalogue_kernel<op::prod>(
      &run_kernel<simple_impl<ProdPolicy, FloatTypes, SignedIntTypes>>, kStridedIn));
  list.push_back(
      catalogue_kernel<op::mean>(&run_kernel<simple_impl<Mean, FloatTypes>>, kStridedIn));
  list.push_back(
      catalogue_kernel<op::amax>(&run_kernel<simple_impl<Amax, FloatTypes, IntTypes>>, kStridedIn));
  list.push_back(
      catalogue_kernel<op::amin>(&run_kernel<simple_impl<Amin, FloatTypes, IntTypes>>, kStridedIn));
  list.push_back(
      catalogue_entry<op::argmax>(&run_kernel<arg_impl<true>>, &supports_arg, kStridedIn));
  list.push_back(
      catalogue_entry<op::argmin>(&run_kernel<arg_impl<false>>, &supports_arg, kStridedIn));
  list.push_back(catalogue_kernel<op::var>(&run_kernel<var_impl>, kStridedIn));
}

}  // namespace kiln::cpu
