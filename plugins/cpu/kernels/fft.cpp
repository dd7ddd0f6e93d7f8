// kiln.fft_c2c, kiln.fft_r2c and kiln.fft_c2r on kissfft (BSD-3-Clause, Debian's
// libkissfft-dev; the header-only template, for float and double).
//
// A transform over the last k dims runs one dim at a time: the last dim reads x (any
// strides) and writes the contiguous output, then each earlier signal dim is transformed
// in place in the output. Lines run in parallel on the plugin's pool, each thread with its
// own buffers (its scratch slot, kept between calls). A 1-D plan (Plan1D: kissfft, the
// four-step algorithm for long signals, or Bluestein for lengths with a prime factor above
// 5, so that a prime length is O(n log n) too; kissfft's own generic radix is O(n·p) and
// writes a shared scratch buffer, so it is never used) is cached per (length, direction,
// precision): a plan depends on nothing else, strides included.
#include <kissfft/kissfft.hh>

#include <cmath>
#include <complex>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <numbers>
#include <tuple>
#include <vector>

#include "elementwise.h"
#include "registry.h"
#include "scratch.h"

namespace kiln::cpu {

namespace {

template <class T>
using cpx = std::complex<T>;

bool smooth(int64_t n) {  // only prime factors 2, 3 and 5
  for (int64_t p : {2, 3, 5})
    while (n % p == 0) n /= p;
  return n == 1;
}

// Smooth lengths above this run the four-step algorithm instead of kissfft alone: kissfft's
// recursion strides through the whole signal at every stage, which leaves the cache for
// large n (2^20 points took 100 ms; see bench/README.md).
constexpr int64_t kFourStepAbove = int64_t{1} << 14;

// exp(sign·2πi·t/n) for t in [0, n), computed in double from t mod n.
template <class T>
cpx<T> root_of_unity(int64_t t, int64_t n, double sign) {
  const double angle =
      sign * 2 * std::numbers::pi * static_cast<double>(t % n) / static_cast<double>(n);
  return cpx<T>(static_cast<T>(std::cos(angle)), static_cast<T>(std::sin(angle)));
}

// One 1-D transform of a fixed length and direction: exp(-2πi·jk/n) forward, exp(+...)
// inverse, unnormalized. run() is const and thread-safe; `work` (work_size() elements) is
// the caller's. Three kinds:
// - kissfft directly, for smooth lengths (prime factors 2, 3, 5) up to kFourStepAbove;
// - the four-step algorithm for longer smooth ones: n = n1·n2, n2 transforms of n1 points
//   (the strided columns), a twiddle, n1 transforms of n2 points, in parallel;
// - Bluestein for the rest: jk = (j² + k² - (k - j)²) / 2, so X_k = c_k Σ_j (x_j c_j)
//   conj(c_{k-j}) with the chirp c_t = exp(∓πi·t²/n), a convolution done by transforms of
//   a power of two m ≥ 2n - 1 points (themselves planned by this class).
template <class T>
class Plan1D {
 public:
  Plan1D(int64_t n, bool inverse) : n_(n) {
    const double sign = inverse ? 1.0 : -1.0;
    if (n == 1) {
      // The identity; kissfft would run it through its generic radix (a radix-1 stage),
      // whose shared scratch buffer races between threads.
    } else if (smooth(n) && n <= kFourStepAbove) {
      direct_ = std::make_unique<kissfft<T>>(static_cast<size_t>(n), inverse);
    } else if (smooth(n)) {
      n1_ = 1;  // the largest divisor of n up to sqrt(n)
      for (int64_t d = 1; d * d <= n; ++d)
        if (n % d == 0) n1_ = d;
      n2_ = n / n1_;
      first_ = std::make_unique<Plan1D>(n1_, inverse);
      second_ = std::make_unique<Plan1D>(n2_, inverse);
      twiddle_.resize(static_cast<size_t>(n));
      for (int64_t j2 = 0; j2 < n2_; ++j2)
        for (int64_t k1 = 0; k1 < n1_; ++k1)
          twiddle_[static_cast<size_t>(j2 * n1_ + k1)] = root_of_unity<T>(j2 * k1, n, sign);
    } else {
      m_ = 1;
      while (m_ < 2 * n - 1) m_ *= 2;
      forward_ = std::make_unique<Plan1D>(m_, false);
      backward_ = std::make_unique<Plan1D>(m_, true);
      chirp_.resize(static_cast<size_t>(n));
      for (int64_t t = 0; t < n; ++t)  // t² mod 2n keeps the angle exact to a few ulps
        chirp_[static_cast<size_t>(t)] = root_of_unity<T>(
            static_cast<int64_t>((static_cast<uint64_t>(t) * t) % (2 * n)), 2 * n, sign);
      // The kernel conj(c_t) at t and m - t, transformed once; the inverse's 1/m folded in.
      std::vector<cpx<T>> b(static_cast<size_t>(m_)), spectrum(static_cast<size_t>(m_));
      std::vector<cpx<T>> work(static_cast<size_t>(forward_->work_size()));
      for (int64_t t = 0; t < n; ++t) {
        const cpx<T> v = std::conj(chirp_[static_cast<size_t>(t)]) / static_cast<T>(m_);
        b[static_cast<size_t>(t)] = v;
        if (t > 0) b[static_cast<size_t>(m_ - t)] = v;
      }
      forward_->run(b.data(), spectrum.data(), work.data());
      kernel_ = std::move(spectrum);
    }
  }

  int64_t work_size() const {
    if (n_ == 1 || direct_) return 0;
    if (first_) return n_;
    return 2 * m_ + forward_->work_size();
  }

  void run(const cpx<T>* in, cpx<T>* out, cpx<T>* work) const {
    if (n_ == 1) {
      out[0] = in[0];
      return;
    }
    if (direct_) return direct_->transform(in, out);
    if (first_) return four_step(in, out, work);
    cpx<T>* a = work;
    cpx<T>* spectrum = work + m_;
    cpx<T>* inner = work + 2 * m_;
    for (int64_t t = 0; t < n_; ++t) a[t] = in[t] * chirp_[static_cast<size_t>(t)];
    for (int64_t t = n_; t < m_; ++t) a[t] = 0;
    forward_->run(a, spectrum, inner);
    for (int64_t t = 0; t < m_; ++t) spectrum[t] *= kernel_[static_cast<size_t>(t)];
    backward_->run(spectrum, a, inner);
    for (int64_t k = 0; k < n_; ++k) out[k] = a[k] * chirp_[static_cast<size_t>(k)];
  }

 private:
  // X[k1 + n1·k2] = Σ_j2 ω_n2^(j2·k2) · ω_n^(j2·k1) · Σ_j1 x[j1·n2 + j2] ω_n1^(j1·k1).
  void four_step(const cpx<T>* in, cpx<T>* out, cpx<T>* rows) const {
    // rows[j2·n1 + k1]: the n1-point transform of column j2, twiddled.
    pool().parallel_for(0, n2_, 1, [&](int64_t begin, int64_t end) {
      std::vector<cpx<T>> line(static_cast<size_t>(n1_)),
          work(static_cast<size_t>(first_->work_size()));
      for (int64_t j2 = begin; j2 < end; ++j2) {
        for (int64_t j1 = 0; j1 < n1_; ++j1) line[static_cast<size_t>(j1)] = in[j1 * n2_ + j2];
        cpx<T>* row = rows + j2 * n1_;
        first_->run(line.data(), row, work.data());
        const cpx<T>* w = twiddle_.data() + j2 * n1_;
        for (int64_t k1 = 0; k1 < n1_; ++k1) row[k1] *= w[k1];
      }
    });
    pool().parallel_for(0, n1_, 1, [&](int64_t begin, int64_t end) {
      std::vector<cpx<T>> line(static_cast<size_t>(n2_)), result(static_cast<size_t>(n2_));
      std::vector<cpx<T>> work(static_cast<size_t>(second_->work_size()));
      for (int64_t k1 = begin; k1 < end; ++k1) {
        for (int64_t j2 = 0; j2 < n2_; ++j2) line[static_cast<size_t>(j2)] = rows[j2 * n1_ + k1];
        second_->run(line.data(), result.data(), work.data());
        for (int64_t k2 = 0; k2 < n2_; ++k2) out[k1 + n1_ * k2] = result[static_cast<size_t>(k2)];
      }
    });
  }

  int64_t n_;
  std::unique_ptr<kissfft<T>> direct_;
  int64_t n1_ = 0, n2_ = 0;
  std::unique_ptr<Plan1D> first_, second_;
  std::vector<cpx<T>> twiddle_;
  int64_t m_ = 0;
  std::unique_ptr<Plan1D> forward_, backward_;
  std::vector<cpx<T>> chirp_, kernel_;
};

// The plan cache: at most kCachedPlans plans, the least recently used dropped first (a
// running transform keeps its plan alive through the shared_ptr).
constexpr size_t kCachedPlans = 64;

template <class T>
std::shared_ptr<const Plan1D<T>> plan_for(int64_t n, bool inverse) {
  static std::mutex mutex;
  static std::map<std::pair<int64_t, bool>, std::shared_ptr<const Plan1D<T>>> plans;
  static std::vector<std::pair<int64_t, bool>> order;
  const std::pair<int64_t, bool> key{n, inverse};
  {
    std::lock_guard lock(mutex);
    if (auto it = plans.find(key); it != plans.end()) {
      const auto used = std::find(order.begin(), order.end(), key);
      std::rotate(used, used + 1, order.end());  // now the most recently used
      return it->second;
    }
  }
  auto plan = std::make_shared<const Plan1D<T>>(n, inverse);  // built outside the lock
  std::lock_guard lock(mutex);
  auto [it, inserted] = plans.emplace(key, plan);
  if (inserted) {
    order.push_back(key);
    if (order.size() > kCachedPlans) {
      plans.erase(order.front());
      order.erase(order.begin());
    }
  }
  return it->second;
}

// A strided view: shape and strides in elements of its own type.
struct View {
  std::vector<int64_t> shape, strides;
};

View view_of(const TensorView& t) {
  return {std::vector<int64_t>(t.shape, t.shape + t.ndim),
          std::vector<int64_t>(t.strides, t.strides + t.ndim)};
}

View contiguous_view(std::vector<int64_t> shape) {
  std::vector<int64_t> strides(shape.size());
  int64_t s = 1;
  for (size_t d = shape.size(); d-- > 0;) {
    strides[d] = s;
    s *= shape[d];
  }
  return {std::move(shape), std::move(strides)};
}

// The offset of line `line` along dim d: the other dims' indices in row-major order.
int64_t line_offset(const std::vector<int64_t>& shape, const std::vector<int64_t>& strides,
                    size_t d, int64_t line) {
  int64_t offset = 0;
  for (size_t k = shape.size(); k-- > 0;) {
    if (k == d) continue;
    offset += (line % shape[k]) * strides[k];
    line /= shape[k];
  }
  return offset;
}

// For every line along dim d of `lines` (the shape whose other dims both sides share):
// body(in offset, out offset, buffers) in parallel; each thread gets `length` + the plan's
// work of complex buffer, twice.
template <class T, class Body>
void each_line(const std::vector<int64_t>& lines, size_t d, const View& in, const View& out,
               int64_t length, const Plan1D<T>& plan, const Body& body) {
  int64_t count = 1;
  for (size_t k = 0; k < lines.size(); ++k)
    if (k != d) count *= lines[k];
  if (count == 0 || length == 0) return;
  const int64_t grain = std::max<int64_t>(1, kParallelGrain / (4 * length));
  pool().parallel_for(0, count, grain, [&](int64_t begin, int64_t end) {
    // The thread's scratch, kept between calls: fresh buffers of a long line cost page
    // faults on every call (a third of a 2^20-point transform's time).
    cpx<T>* buffers =
        scratch<cpx<T>>(ScratchSlot::Columns, static_cast<size_t>(2 * length + plan.work_size()));
    for (int64_t line = begin; line < end; ++line)
      body(line_offset(lines, in.strides, d, line), line_offset(lines, out.strides, d, line),
           buffers, buffers + length, buffers + 2 * length);
  });
}

// In place along each dim in [first, last) of contiguous complex `y`, the signal dims
// before the last one; returns the product of their sizes (for `norm`).
template <class T>
int64_t transform_in_place(cpx<T>* y, const View& y_view, size_t first, size_t last, bool inverse) {
  int64_t points = 1;
  for (size_t d = first; d < last; ++d) {
    const int64_t n = y_view.shape[d], stride = y_view.strides[d];
    const auto plan = plan_for<T>(n, inverse);
    each_line<T>(y_view.shape, d, y_view, y_view, n, *plan,
                 [&](int64_t, int64_t at, cpx<T>* a, cpx<T>* b, cpx<T>* work) {
                   for (int64_t i = 0; i < n; ++i) a[i] = y[at + i * stride];
                   plan->run(a, b, work);
                   for (int64_t i = 0; i < n; ++i) y[at + i * stride] = b[i];
                 });
    points *= n;
  }
  return points;
}

template <class V>
void scale(V* y, int64_t count, double factor) {
  if (factor == 1.0) return;
  using R = decltype(std::abs(y[0]));
  const R f = static_cast<R>(factor);
  pool().parallel_for(0, count, kParallelGrain, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) y[i] *= f;
  });
}

// The factor `norm` gives for n points: 0 none, 1 1/sqrt(n), 2 1/n.
double norm_factor(int64_t norm, int64_t n) {
  if (norm == 0 || n == 0) return 1.0;
  if (norm == 1) return 1.0 / std::sqrt(static_cast<double>(n));
  if (norm == 2) return 1.0 / static_cast<double>(n);
  throw sdk::Error(
      KILN_STATUS_INVALID_ARGUMENT,
      "fft: norm must be 0 (none), 1 (1/sqrt(n)) or 2 (1/n), got " + std::to_string(norm));
}

// The signal dims [rank - k, rank) of a tensor of rank `rank`.
size_t first_signal_dim(int64_t signal_ndim, int32_t rank, const char* op) {
  if (signal_ndim < 1 || signal_ndim > rank)
    throw sdk::Error(KILN_STATUS_INVALID_ARGUMENT,
                     std::string(op) + ": signal_ndim must be in [1, " + std::to_string(rank) +
                         "] for a tensor of rank " + std::to_string(rank) + ", got " +
                         std::to_string(signal_ndim));
  return static_cast<size_t>(rank - signal_ndim);
}

template <class T>
void c2c(const TensorView& x, const TensorView& y, size_t first, bool inverse, int64_t norm) {
  const View xv = view_of(x), yv = contiguous_view(xv.shape);
  const auto* in = x.ptr<const cpx<T>>();
  auto* out = y.ptr<cpx<T>>();
  const size_t last = xv.shape.size() - 1;
  const int64_t n = xv.shape[last];
  const auto plan = plan_for<T>(n, inverse);
  each_line<T>(xv.shape, last, xv, yv, n, *plan,
               [&](int64_t from, int64_t to, cpx<T>* a, cpx<T>*, cpx<T>* work) {
                 for (int64_t i = 0; i < n; ++i) a[i] = in[from + i * xv.strides[last]];
                 plan->run(a, out + to, work);
               });
  const int64_t points = n * transform_in_place(out, yv, first, last, inverse);
  scale(out, y.numel(), norm_factor(norm, points));
}

template <class T>
void r2c(const TensorView& x, const TensorView& y, size_t first, int64_t norm) {
  const View xv = view_of(x);
  const size_t last = xv.shape.size() - 1;
  const int64_t n = xv.shape[last], kept = n / 2 + 1;
  std::vector<int64_t> out_shape = xv.shape;
  out_shape[last] = kept;
  const View yv = contiguous_view(out_shape);
  const auto* in = x.ptr<const T>();
  auto* out = y.ptr<cpx<T>>();
  // An even-length real line is one complex transform of h = n/2 points: with
  // z_j = x_2j + i·x_2j+1 and Z its transform, E_k = (Z_k + conj(Z_{h-k}))/2 and
  // O_k = (Z_k - conj(Z_{h-k}))/2i transform the even and the odd samples, and
  // X_k = E_k + exp(-2πik/n)·O_k. Each line stays on its own (pairing two lines in one
  // transform would let one line's rounding reach the other). Odd n: the line as complex.
  const bool packed = n % 2 == 0;
  const int64_t h = n / 2, length = packed ? h : n, stride = xv.strides[last];
  const auto plan = plan_for<T>(length, false);
  std::vector<cpx<T>> twiddle;
  if (packed)
    for (int64_t k = 0; k <= h; ++k) twiddle.push_back(root_of_unity<T>(k, n, -1.0));
  each_line<T>(xv.shape, last, xv, yv, length, *plan,
               [&](int64_t from, int64_t to, cpx<T>* a, cpx<T>* b, cpx<T>* work) {
                 if (!packed) {
                   for (int64_t i = 0; i < n; ++i) a[i] = cpx<T>(in[from + i * stride], T(0));
                   plan->run(a, b, work);
                   for (int64_t k = 0; k < kept; ++k) out[to + k] = b[k];
                   return;
                 }
                 for (int64_t j = 0; j < h; ++j)
                   a[j] = cpx<T>(in[from + 2 * j * stride], in[from + (2 * j + 1) * stride]);
                 plan->run(a, b, work);
                 // k = 0 and k = h both pair Z_0 with itself (indices mod h).
                 const cpx<T> dc = b[0], dc_mirror = std::conj(b[0]);
                 const cpx<T> dc_even = (dc + dc_mirror) * T(0.5);
                 const cpx<T> dc_odd = (dc - dc_mirror) * cpx<T>(0, T(-0.5));
                 out[to] = dc_even + dc_odd;
                 out[to + h] = dc_even - dc_odd;
                 for (int64_t k = 1; k < h; ++k) {
                   const cpx<T> zk = b[k], mirror = std::conj(b[h - k]);
                   const cpx<T> even = (zk + mirror) * T(0.5);
                   const cpx<T> odd = (zk - mirror) * cpx<T>(0, T(-0.5));
                   out[to + k] = even + twiddle[static_cast<size_t>(k)] * odd;
                 }
               });
  const int64_t points = n * transform_in_place(out, yv, first, last, false);
  scale(out, y.numel(), norm_factor(norm, points));
}

template <class T>
void c2r(const TensorView& x, const TensorView& y, size_t first, int64_t n, int64_t norm) {
  View xv = view_of(x);
  const size_t last = xv.shape.size() - 1;
  const int64_t half = n / 2 + 1;
  xv.shape[last] = half;  // the entries past n/2 + 1 are ignored
  const auto* in = x.ptr<const cpx<T>>();
  // The earlier signal dims first, on a contiguous copy of the half spectrum.
  std::vector<cpx<T>> spectrum;
  const cpx<T>* source = in;
  View source_view = xv;
  int64_t points = n;
  if (first < last) {
    const View sv = contiguous_view(xv.shape);
    int64_t total = 1;
    for (int64_t s : sv.shape) total *= s;
    spectrum.resize(static_cast<size_t>(total));
    // One line offset per line, not per element.
    pool().parallel_for(0, total / half, std::max<int64_t>(1, kParallelGrain / half),
                        [&](int64_t begin, int64_t end) {
                          for (int64_t line = begin; line < end; ++line) {
                            const int64_t from = line_offset(xv.shape, xv.strides, last, line);
                            cpx<T>* to = spectrum.data() + line * half;
                            for (int64_t k = 0; k < half; ++k)
                              to[k] = in[from + k * xv.strides[last]];
                          }
                        });
    points *= transform_in_place(spectrum.data(), sv, first, last, true);
    source = spectrum.data();
    source_view = sv;
  }
  std::vector<int64_t> out_shape = xv.shape;
  out_shape[last] = n;
  const View yv = contiguous_view(out_shape);
  auto* out = y.ptr<T>();
  const auto plan = plan_for<T>(n, true);
  const int64_t stride = source_view.strides[last];
  each_line<T>(out_shape, last, source_view, yv, n, *plan,
               [&](int64_t from, int64_t to, cpx<T>* a, cpx<T>* b, cpx<T>* work) {
                 // The full Hermitian line: entry k > n/2 is conj(entry n - k).
                 for (int64_t k = 0; k < half; ++k) a[k] = source[from + k * stride];
                 for (int64_t k = half; k < n; ++k) a[k] = std::conj(a[n - k]);
                 plan->run(a, b, work);
                 for (int64_t k = 0; k < n; ++k) out[to + k] = b[k].real();
               });
  scale(out, y.numel(), norm_factor(norm, points));
}

void expect_shape_except_last(const TensorView& y, const TensorView& x, int64_t last_size) {
  bool same = y.ndim == x.ndim && y.shape[y.ndim - 1] == last_size;
  for (int32_t d = 0; same && d + 1 < x.ndim; ++d) same = y.shape[d] == x.shape[d];
  KILN_SDK_CHECK_ARG(same, "y has shape ", shape_string(y), ", expected x's shape ",
                     shape_string(x), " with ", last_size, " in the last dim");
}

void fft_c2c_impl(const OpArgs& args) {
  args.expect_counts(1, 1);
  const TensorView x = args.input(0), y = args.output(0);
  const auto a = sdk::attrs::fft_c2c::read(args);
  const size_t first = first_signal_dim(a.signal_ndim, x.ndim, "kiln.fft_c2c");
  expect_same_shape(y, x, "y");
  expect_contiguous(y, "y");
  expect_dtype(y, x.dtype, "y");
  if (x.numel() == 0) return;
  if (x.dtype == KILN_DTYPE_COMPLEX64)
    c2c<float>(x, y, first, a.forward == 0, a.norm);
  else if (x.dtype == KILN_DTYPE_COMPLEX128)
    c2c<double>(x, y, first, a.forward == 0, a.norm);
  else
    unsupported_dtype(x.dtype);
}

void fft_r2c_impl(const OpArgs& args) {
  args.expect_counts(1, 1);
  const TensorView x = args.input(0), y = args.output(0);
  const auto a = sdk::attrs::fft_r2c::read(args);
  const size_t first = first_signal_dim(a.signal_ndim, x.ndim, "kiln.fft_r2c");
  const int64_t n = x.shape[x.ndim - 1];
  expect_shape_except_last(y, x, n / 2 + 1);
  expect_contiguous(y, "y");
  if (x.dtype == KILN_DTYPE_FLOAT32) {
    expect_dtype(y, KILN_DTYPE_COMPLEX64, "y");
    if (x.numel() > 0) r2c<float>(x, y, first, a.norm);
  } else if (x.dtype == KILN_DTYPE_FLOAT64) {
    expect_dtype(y, KILN_DTYPE_COMPLEX128, "y");
    if (x.numel() > 0) r2c<double>(x, y, first, a.norm);
  } else {
    unsupported_dtype(x.dtype);
  }
}

void fft_c2r_impl(const OpArgs& args) {
  args.expect_counts(1, 1);
  const TensorView x = args.input(0), y = args.output(0);
  const auto a = sdk::attrs::fft_c2r::read(args);
  const size_t first = first_signal_dim(a.signal_ndim, x.ndim, "kiln.fft_c2r");
  const int64_t n = a.last_dim_size;
  if (n < 1 || n / 2 + 1 > x.shape[x.ndim - 1])
    throw sdk::Error(KILN_STATUS_INVALID_ARGUMENT,
                     "kiln.fft_c2r: last_dim_size " + std::to_string(n) +
                         " needs at least n/2+1 = " + std::to_string(n / 2 + 1) +
                         " input entries along the last dim, got " +
                         std::to_string(x.shape[x.ndim - 1]));
  expect_shape_except_last(y, x, n);
  expect_contiguous(y, "y");
  if (x.dtype == KILN_DTYPE_COMPLEX64) {
    expect_dtype(y, KILN_DTYPE_FLOAT32, "y");
    if (y.numel() > 0) c2r<float>(x, y, first, n, a.norm);
  } else if (x.dtype == KILN_DTYPE_COMPLEX128) {
    expect_dtype(y, KILN_DTYPE_FLOAT64, "y");
    if (y.numel() > 0) c2r<double>(x, y, first, n, a.norm);
  } else {
    unsupported_dtype(x.dtype);
  }
}

int32_t supports_c2c(void*, const kiln_op_args* args) {
  return output_dtype(args, 0) == input_dtype(args, 0);
}
int32_t supports_r2c(void*, const kiln_op_args* args) {
  return output_dtype(args, 0) == (input_dtype(args, 0) == KILN_DTYPE_FLOAT64
                                       ? KILN_DTYPE_COMPLEX128
                                       : KILN_DTYPE_COMPLEX64);
}
int32_t supports_c2r(void*, const kiln_op_args* args) {
  return output_dtype(args, 0) ==
         (input_dtype(args, 0) == KILN_DTYPE_COMPLEX128 ? KILN_DTYPE_FLOAT64 : KILN_DTYPE_FLOAT32);
}

}  // namespace

void add_fft_kernels(KernelList& list) {
  list.push_back(catalogue_entry<op::fft_c2c>(&run_kernel<fft_c2c_impl>, &supports_c2c,
                                              KILN_KERNEL_STRIDED_INPUTS));
  list.push_back(catalogue_entry<op::fft_r2c>(&run_kernel<fft_r2c_impl>, &supports_r2c,
                                              KILN_KERNEL_STRIDED_INPUTS));
  list.push_back(catalogue_entry<op::fft_c2r>(&run_kernel<fft_c2r_impl>, &supports_c2r,
                                              KILN_KERNEL_STRIDED_INPUTS));
}

}  // namespace kiln::cpu
