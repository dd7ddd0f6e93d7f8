// kiln::fft (kiln/fft.h) on the catalogue's three transforms: fft_c2c, fft_r2c and
// fft_c2r. Each user-level transform resizes its input (zero padding or trimming, both
// differentiable), moves the transformed dims last as a view, runs one catalogue op and
// moves them back. The gradients are PyTorch's: the adjoint of each transform, which is
// another of the three.

#include "kiln/fft.h"

#include <algorithm>
#include <numeric>

#include "autograd/record.h"
#include "kiln/autograd.h"
#include "kiln/nn/functional.h"
#include "kiln/ops.h"
#include "ops/common.h"

namespace kiln::fft {

namespace ag = detail::autograd_impl;
using Grads = std::vector<Tensor>;
using Saved = std::vector<Tensor>;

namespace {

// The catalogue's `norm` codes: 0 unscaled, 1 by 1/sqrt(n), 2 by 1/n.
enum Scale : int64_t { kNone = 0, kSqrt = 1, kFull = 2 };

// What `norm` means for a transform in the forward (exp(-2πi...)) or inverse direction.
int64_t scale_of(const std::string& norm, bool forward, const char* name) {
  if (norm == "backward") return forward ? kNone : kFull;
  if (norm == "forward") return forward ? kFull : kNone;
  if (norm == "ortho") return kSqrt;
  KILN_FAIL(name, ": norm must be \"backward\", \"forward\" or \"ortho\", got \"", norm, "\"");
}

// The transform's dims (wrapped, distinct) and their signal sizes.
struct Signal {
  std::vector<int64_t> dims, sizes;
};

Signal signal_of(const Tensor& x, const Sizes& s, const Dims& dim, const char* name) {
  Signal sig;
  const int64_t rank = x.dim();
  if (dim) {
    for (int64_t d : *dim) sig.dims.push_back(detail::wrap_dim(d, rank, name));
  } else {
    const int64_t k = s ? static_cast<int64_t>(s->size()) : rank;
    KILN_CHECK(k <= rank, name, ": s has ", k, " sizes for a tensor of rank ", rank);
    for (int64_t d = rank - k; d < rank; ++d) sig.dims.push_back(d);
  }
  std::vector<int64_t> sorted = sig.dims;
  std::sort(sorted.begin(), sorted.end());
  KILN_CHECK(std::adjacent_find(sorted.begin(), sorted.end()) == sorted.end(), name,
             ": dims must be distinct, got ", IntArrayRef(sig.dims));
  KILN_CHECK(!sig.dims.empty(), name, ": no dims to transform (a 0-d input, or an empty dim)");
  KILN_CHECK(!s || s->size() == sig.dims.size(), name, ": s has ", s ? s->size() : 0,
             " sizes but there are ", sig.dims.size(), " dims");
  for (size_t i = 0; i < sig.dims.size(); ++i) {
    const int64_t n = s && (*s)[i] != -1 ? (*s)[i] : x.size(sig.dims[i]);
    KILN_CHECK(n >= 1, name, ": invalid number of data points (", n, ") along dim ", sig.dims[i]);
    sig.sizes.push_back(n);
  }
  return sig;
}

// x zero-padded or trimmed to `size` along `dim`: F::pad's constant mode, whose negative
// padding trims (differentiable).
Tensor resized(const Tensor& x, int64_t dim, int64_t size) {
  const int64_t have = x.size(dim);
  if (have == size) return x;
  std::vector<int64_t> padding(static_cast<size_t>(2 * (x.dim() - dim)), 0);
  padding.back() = size - have;  // the last (before, after) pair is dim's
  return nn::functional::pad(x, padding);
}

// The permutation that puts `dims` last (in their order), and its inverse.
std::pair<std::vector<int64_t>, std::vector<int64_t>> dims_last(int64_t rank,
                                                                const std::vector<int64_t>& dims) {
  std::vector<int64_t> perm;
  for (int64_t d = 0; d < rank; ++d)
    if (std::find(dims.begin(), dims.end(), d) == dims.end()) perm.push_back(d);
  perm.insert(perm.end(), dims.begin(), dims.end());
  std::vector<int64_t> inverse(perm.size());
  for (size_t i = 0; i < perm.size(); ++i)
    inverse[static_cast<size_t>(perm[i])] = static_cast<int64_t>(i);
  return {perm, inverse};
}

// Real input dtype: float32/float64 stay, integers and bool become float32, half refused.
Tensor real_input(const Tensor& x, const char* name) {
  const DType d = x.dtype();
  KILN_CHECK(d != DType::Float16 && d != DType::BFloat16, name, ": ", d,
             " transforms are not supported; convert with .to(kiln::float32)");
  return is_floating(d) ? x : x.to(DType::Float32);
}

Tensor complex_input(const Tensor& x, const char* name) {
  if (is_complex(x.dtype())) return x;
  Tensor r = real_input(x, name);
  return r.to(complex_dtype(r.dtype()));
}

Tensor c2c(const Tensor& x, const std::vector<int64_t>& dims, int64_t scale, bool forward);
Tensor r2c(const Tensor& x, const std::vector<int64_t>& dims, int64_t scale);
Tensor c2r(const Tensor& x, const std::vector<int64_t>& dims, int64_t scale, int64_t n);

// Runs one catalogue transform on x with `dims` moved last; `out_last` is the output's
// size along the last of them.
template <class Attrs>
Tensor run_transform(const Tensor& x, const std::vector<int64_t>& dims, DType out_dtype,
                     int64_t out_last, const Attrs& attrs) {
  auto [perm, inverse] = dims_last(x.dim(), dims);
  const bool moved = !std::is_sorted(perm.begin(), perm.end());  // else already last
  Tensor xp = moved ? x.permute(perm) : x;
  std::vector<int64_t> shape = xp.shape().vec();
  shape.back() = out_last;
  Tensor out = detail::empty_on(x, shape, out_dtype);
  if (out.numel() > 0 && xp.numel() > 0)
    detail::dispatch(attrs, {xp.impl().get()}, {out.impl().get()});
  else if (out.numel() > 0)
    out.fill_(0);
  return moved ? out.permute(inverse) : out;
}

Tensor c2c(const Tensor& x, const std::vector<int64_t>& dims, int64_t scale, bool forward) {
  Tensor out;
  {
    NoGradGuard no_grad;
    out = run_transform(x, dims, x.dtype(), x.size(dims.back()),
                        detail::attrs::fft_c2c{.signal_ndim = static_cast<int64_t>(dims.size()),
                                               .norm = scale,
                                               .forward = forward ? 1 : 0});
  }
  if (ag::needs_grad({&x}))
    ag::record("FftC2CBackward", out, {&x}, {},
               [dims, scale, forward](const Saved&, const Tensor& g) -> Grads {
                 return {c2c(g, dims, scale, !forward)};  // the adjoint: the other direction
               });
  return out;
}

Tensor r2c(const Tensor& x, const std::vector<int64_t>& dims, int64_t scale) {
  const int64_t n = x.size(dims.back());
  Tensor out;
  {
    NoGradGuard no_grad;
    out = run_transform(
        x, dims, complex_dtype(x.dtype()), n / 2 + 1,
        detail::attrs::fft_r2c{.signal_ndim = static_cast<int64_t>(dims.size()), .norm = scale});
  }
  if (ag::needs_grad({&x}))
    ag::record("FftR2CBackward", out, {&x}, {},
               [dims, scale, n, x_dtype = x.dtype()](const Saved&, const Tensor& g) -> Grads {
                 // The dropped half of the spectrum had no gradient: pad it with zeros.
                 Tensor full = resized(g, dims.back(), n);
                 return {real(c2c(full, dims, scale, false)).to(x_dtype)};
               });
  return out;
}

Tensor c2r(const Tensor& x, const std::vector<int64_t>& dims, int64_t scale, int64_t n) {
  Tensor out;
  {
    NoGradGuard no_grad;
    out = run_transform(
        x, dims, real_dtype(x.dtype()), n,
        detail::attrs::fft_c2r{
            .signal_ndim = static_cast<int64_t>(dims.size()), .norm = scale, .last_dim_size = n});
  }
  if (ag::needs_grad({&x}))
    ag::record(
        "FftC2RBackward", out, {&x}, {},
        [dims, scale, n, half = x.size(dims.back())](const Saved&, const Tensor& g) -> Grads {
          // Entries 1 .. n - n/2 - 1 stand for themselves and their mirror images.
          Tensor gx = r2c(g, dims, scale);
          const int64_t doubled = n - (n / 2 + 1);
          if (doubled > 0) {
            std::vector<double> w(static_cast<size_t>(half), 1.0);
            std::fill(w.begin() + 1, w.begin() + 1 + doubled, 2.0);
            std::vector<int64_t> shape(static_cast<size_t>(gx.dim()), 1);
            shape[static_cast<size_t>(dims.back())] = half;
            gx = gx * from_vector<double>(
                          w, shape, TensorOptions(real_dtype(gx.dtype())).device(gx.device()));
          }
          return {gx};
        });
  return out;
}

// -- the user-level transforms ------------------------------------------------------------

// fft/ifft/fftn/ifftn: complex to complex; a real input gives the full spectrum.
Tensor fft_c2c_user(const char* name, const Tensor& x, const Sizes& s, const Dims& dim,
                    const std::string& norm, bool forward) {
  detail::impl_of(x, name);
  const Signal sig = signal_of(x, s, dim, name);
  const int64_t scale = scale_of(norm, forward, name);
  // A real signal is transformed as complex: the full spectrum, as PyTorch gives.
  Tensor in = complex_input(x, name);
  for (size_t i = 0; i < sig.dims.size(); ++i) in = resized(in, sig.dims[i], sig.sizes[i]);
  return c2c(in, sig.dims, scale, forward);
}

// rfft/rfftn (forward) and ihfft (inverse, conjugated): a real input, one-sided output.
Tensor fft_r2c_user(const char* name, const Tensor& x, const Sizes& s, const Dims& dim,
                    const std::string& norm, bool forward) {
  detail::impl_of(x, name);
  KILN_CHECK(!is_complex(x.dtype()), name, ": expects a real input, got ", x.dtype());
  const Signal sig = signal_of(x, s, dim, name);
  Tensor in = real_input(x, name);
  for (size_t i = 0; i < sig.dims.size(); ++i) in = resized(in, sig.dims[i], sig.sizes[i]);
  Tensor out = r2c(in, sig.dims, scale_of(norm, forward, name));
  return forward ? out : conj(out);
}

// irfft/irfftn (inverse) and hfft (forward, on the conjugate): the real signal of a
// one-sided spectrum. The last dim's length defaults to 2·(size - 1).
Tensor fft_c2r_user(const char* name, const Tensor& x, const Sizes& s, const Dims& dim,
                    const std::string& norm, bool forward) {
  detail::impl_of(x, name);
  Signal sig = signal_of(x, s, dim, name);
  const int64_t last = sig.dims.back();
  if (!s || s->back() == -1) sig.sizes.back() = 2 * (x.size(last) - 1);
  const int64_t n = sig.sizes.back();
  KILN_CHECK(n >= 1, name, ": invalid number of data points (", n, ") along dim ", last,
             "; give n (or s) for an input of size ", x.size(last));
  Tensor in = complex_input(x, name);
  for (size_t i = 0; i + 1 < sig.dims.size(); ++i) in = resized(in, sig.dims[i], sig.sizes[i]);
  in = resized(in, last, n / 2 + 1);
  if (forward) in = conj(in);
  return c2r(in, sig.dims, scale_of(norm, forward, name), n);
}

// The 1-D transforms' n as the n-D ones' s. Unlike an entry of s, n = -1 does not
// mean "the input's size" (torch.fft refuses it too).
Sizes one(std::optional<int64_t> n, const char* name) {
  KILN_CHECK(!n || *n >= 1, name, ": invalid number of data points (", n.value_or(0),
             "); n must be at least 1");
  return n ? Sizes(std::vector<int64_t>{*n}) : std::nullopt;
}

}  // namespace

Tensor fft(const Tensor& x, std::optional<int64_t> n, int64_t dim, const std::string& norm) {
  return fft_c2c_user("fft", x, one(n, "fft"), std::vector<int64_t>{dim}, norm, true);
}
Tensor ifft(const Tensor& x, std::optional<int64_t> n, int64_t dim, const std::string& norm) {
  return fft_c2c_user("ifft", x, one(n, "ifft"), std::vector<int64_t>{dim}, norm, false);
}
Tensor rfft(const Tensor& x, std::optional<int64_t> n, int64_t dim, const std::string& norm) {
  return fft_r2c_user("rfft", x, one(n, "rfft"), std::vector<int64_t>{dim}, norm, true);
}
Tensor irfft(const Tensor& x, std::optional<int64_t> n, int64_t dim, const std::string& norm) {
  return fft_c2r_user("irfft", x, one(n, "irfft"), std::vector<int64_t>{dim}, norm, false);
}
Tensor hfft(const Tensor& x, std::optional<int64_t> n, int64_t dim, const std::string& norm) {
  return fft_c2r_user("hfft", x, one(n, "hfft"), std::vector<int64_t>{dim}, norm, true);
}
Tensor ihfft(const Tensor& x, std::optional<int64_t> n, int64_t dim, const std::string& norm) {
  return fft_r2c_user("ihfft", x, one(n, "ihfft"), std::vector<int64_t>{dim}, norm, false);
}

Tensor fft2(const Tensor& x, Sizes s, std::vector<int64_t> dim, const std::string& norm) {
  return fft_c2c_user("fft2", x, s, dim, norm, true);
}
Tensor ifft2(const Tensor& x, Sizes s, std::vector<int64_t> dim, const std::string& norm) {
  return fft_c2c_user("ifft2", x, s, dim, norm, false);
}
Tensor rfft2(const Tensor& x, Sizes s, std::vector<int64_t> dim, const std::string& norm) {
  return fft_r2c_user("rfft2", x, s, dim, norm, true);
}
Tensor irfft2(const Tensor& x, Sizes s, std::vector<int64_t> dim, const std::string& norm) {
  return fft_c2r_user("irfft2", x, s, dim, norm, false);
}

Tensor fftn(const Tensor& x, Sizes s, Dims dim, const std::string& norm) {
  return fft_c2c_user("fftn", x, s, dim, norm, true);
}
Tensor ifftn(const Tensor& x, Sizes s, Dims dim, const std::string& norm) {
  return fft_c2c_user("ifftn", x, s, dim, norm, false);
}
Tensor rfftn(const Tensor& x, Sizes s, Dims dim, const std::string& norm) {
  return fft_r2c_user("rfftn", x, s, dim, norm, true);
}
Tensor irfftn(const Tensor& x, Sizes s, Dims dim, const std::string& norm) {
  return fft_c2r_user("irfftn", x, s, dim, norm, false);
}

Tensor fftfreq(int64_t n, double d, TensorOptions options) {
  KILN_CHECK(n >= 1, "fftfreq: n must be at least 1, got ", n);
  const TensorOptions o = options.has_dtype() ? options : options.dtype(DType::Float32);
  Tensor k = arange(n, TensorOptions(DType::Int64).device(o.device()));
  // [0, ..., (n-1)/2, -(n/2), ..., -1]: the upper half wraps to negative frequencies.
  Tensor wrapped = where(k >= (n + 1) / 2, k - n, k);
  return wrapped.to(o.dtype()) / (d * static_cast<double>(n));
}

Tensor rfftfreq(int64_t n, double d, TensorOptions options) {
  KILN_CHECK(n >= 1, "rfftfreq: n must be at least 1, got ", n);
  const TensorOptions o = options.has_dtype() ? options : options.dtype(DType::Float32);
  return arange(n / 2 + 1, o) / (d * static_cast<double>(n));
}

namespace {
Tensor shifted(const Tensor& x, const Dims& dim, bool inverse, const char* name) {
  detail::impl_of(x, name);
  std::vector<int64_t> dims, shifts;
  if (dim) {
    for (int64_t d : *dim) dims.push_back(detail::wrap_dim(d, x.dim(), name));
  } else {
    dims.resize(static_cast<size_t>(x.dim()));
    std::iota(dims.begin(), dims.end(), int64_t{0});
  }
  if (dims.empty()) return x;
  for (int64_t d : dims) shifts.push_back(inverse ? -(x.size(d) / 2) : x.size(d) / 2);
  return roll(x, shifts, dims);
}
}  // namespace

Tensor fftshift(const Tensor& x, Dims dim) { return shifted(x, dim, false, "fftshift"); }
Tensor ifftshift(const Tensor& x, Dims dim) { return shifted(x, dim, true, "ifftshift"); }

}  // namespace kiln::fft
