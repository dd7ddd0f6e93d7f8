#pragma once
/// @file reference.h
/// The tests' oracle: dense row-major float64 arrays and plain-loop reference
/// implementations of the ops (broadcasting, reductions, matmul, joining, indexing).
/// Nothing here calls Kiln, so a bug in Kiln cannot hide in its own reference.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

namespace kiln::test {

using Shape = std::vector<int64_t>;

inline int64_t numel_of(const Shape& shape) {
  int64_t n = 1;
  for (int64_t s : shape) n *= s;
  return n;
}

/// A dense row-major float64 array.
struct Ref {
  Shape shape;
  std::vector<double> values;

  // No default constructor: `matches(t, {}, {2.5})` must mean "0-d, value 2.5".
  Ref(Shape s, std::vector<double> v) : shape(std::move(s)), values(std::move(v)) {
    if (numel_of(shape) != static_cast<int64_t>(values.size()))
      throw std::invalid_argument("Ref: shape and value count disagree");
  }
  static Ref filled(Shape s, double value) {
    auto n = static_cast<size_t>(numel_of(s));
    return Ref(std::move(s), std::vector<double>(n, value));
  }
  int64_t numel() const { return static_cast<int64_t>(values.size()); }
  int64_t dim() const { return static_cast<int64_t>(shape.size()); }
  double at(const Shape& index) const {
    int64_t linear = 0;
    for (size_t d = 0; d < shape.size(); ++d) linear = linear * shape[d] + index[d];
    return values[static_cast<size_t>(linear)];
  }
};

/// Calls f(index, linear) for every index of `shape` in row-major order.
template <typename F>
void for_each_index(const Shape& shape, F&& f) {
  const int64_t n = numel_of(shape);
  Shape index(shape.size(), 0);
  for (int64_t linear = 0; linear < n; ++linear) {
    f(static_cast<const Shape&>(index), linear);
    for (int64_t d = static_cast<int64_t>(shape.size()) - 1; d >= 0; --d) {
      if (++index[d] < shape[d]) break;
      index[d] = 0;
    }
  }
}

inline int64_t wrap_dim(int64_t dim, int64_t rank) { return dim < 0 ? dim + rank : dim; }

/// NumPy broadcasting of two shapes; throws std::invalid_argument (a test bug).
inline Shape broadcast_shapes(const Shape& a, const Shape& b) {
  const size_t rank = std::max(a.size(), b.size());
  Shape out(rank);
  for (size_t i = 0; i < rank; ++i) {
    int64_t x = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    int64_t y = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    if (x != y && x != 1 && y != 1)
      throw std::invalid_argument("reference: shapes do not broadcast");
    out[i] = x == 1 ? y : x;
  }
  return out;
}

/// The row-major position in `shape` that broadcasting maps `out_index` (of rank >=
/// shape's rank) to.
inline int64_t broadcast_linear(const Shape& shape, const Shape& out_index) {
  const size_t offset = out_index.size() - shape.size();
  int64_t linear = 0;
  for (size_t d = 0; d < shape.size(); ++d)
    linear = linear * shape[d] + (shape[d] == 1 ? 0 : out_index[d + offset]);
  return linear;
}

/// The element of `r` that broadcasting maps to `out_index` (of rank >= r's rank).
inline double broadcast_at(const Ref& r, const Shape& out_index) {
  return r.values[static_cast<size_t>(broadcast_linear(r.shape, out_index))];
}

template <typename F>
Ref map_unary(const Ref& x, F&& f) {
  Ref out = x;
  for (double& v : out.values) v = f(v);
  return out;
}

template <typename F>
Ref map_binary(const Ref& a, const Ref& b, F&& f) {
  Ref out = Ref::filled(broadcast_shapes(a.shape, b.shape), 0);
  for_each_index(out.shape, [&](const Shape& i, int64_t linear) {
    out.values[static_cast<size_t>(linear)] = f(broadcast_at(a, i), broadcast_at(b, i));
  });
  return out;
}

template <typename F>
Ref map_ternary(const Ref& a, const Ref& b, const Ref& c, F&& f) {
  Ref out = Ref::filled(broadcast_shapes(broadcast_shapes(a.shape, b.shape), c.shape), 0);
  for_each_index(out.shape, [&](const Shape& i, int64_t linear) {
    out.values[static_cast<size_t>(linear)] =
        f(broadcast_at(a, i), broadcast_at(b, i), broadcast_at(c, i));
  });
  return out;
}

/// Reduces `x` over `dims` (empty: all; negative allowed) with f(values in row-major
/// order of the reduced dims) -> double.
template <typename F>
Ref reduce(const Ref& x, Shape dims, bool keepdim, F&& f) {
  const int64_t rank = x.dim();
  std::vector<bool> reduced(static_cast<size_t>(rank), dims.empty());
  for (int64_t d : dims) reduced[static_cast<size_t>(wrap_dim(d, rank))] = true;
  Shape kept_shape;  // keepdim shape
  for (int64_t d = 0; d < rank; ++d) kept_shape.push_back(reduced[d] ? 1 : x.shape[d]);
  Shape inner_shape;
  for (int64_t d = 0; d < rank; ++d)
    if (reduced[d]) inner_shape.push_back(x.shape[d]);
  Ref out = Ref::filled(kept_shape, 0);
  for_each_index(kept_shape, [&](const Shape& outer, int64_t linear) {
    std::vector<double> group;
    for_each_index(inner_shape, [&](const Shape& inner, int64_t) {
      Shape full(static_cast<size_t>(rank));
      size_t k = 0;
      for (int64_t d = 0; d < rank; ++d) full[d] = reduced[d] ? inner[k++] : outer[d];
      group.push_back(x.at(full));
    });
    out.values[static_cast<size_t>(linear)] = f(group);
  });
  if (!keepdim) {
    Shape squeezed;
    for (int64_t d = 0; d < rank; ++d)
      if (!reduced[d]) squeezed.push_back(x.shape[d]);
    out.shape = squeezed;
  }
  return out;
}

// Reduction functions over one group of values.
inline double ref_sum(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x;
  return s;
}
inline double ref_prod(const std::vector<double>& v) {
  double p = 1;
  for (double x : v) p *= x;
  return p;
}
inline double ref_mean(const std::vector<double>& v) {
  return v.empty() ? std::numeric_limits<double>::quiet_NaN()
                   : ref_sum(v) / static_cast<double>(v.size());
}
inline double ref_max(const std::vector<double>& v) {
  double m = -std::numeric_limits<double>::infinity();
  for (double x : v) {
    if (std::isnan(x)) return x;
    m = std::max(m, x);
  }
  return m;
}
inline double ref_min(const std::vector<double>& v) {
  double m = std::numeric_limits<double>::infinity();
  for (double x : v) {
    if (std::isnan(x)) return x;
    m = std::min(m, x);
  }
  return m;
}
/// First index of the maximum; NaN counts as the maximum.
inline double ref_argmax(const std::vector<double>& v) {
  size_t best = 0;
  for (size_t i = 0; i < v.size(); ++i) {
    if (std::isnan(v[i])) return static_cast<double>(i);
    if (v[i] > v[best]) best = i;
  }
  return static_cast<double>(best);
}
/// First index of the minimum; NaN counts as the minimum.
inline double ref_argmin(const std::vector<double>& v) {
  size_t best = 0;
  for (size_t i = 0; i < v.size(); ++i) {
    if (std::isnan(v[i])) return static_cast<double>(i);
    if (v[i] < v[best]) best = i;
  }
  return static_cast<double>(best);
}
/// Two-pass variance with `correction`; NaN when n <= correction.
inline double ref_var(const std::vector<double>& v, int64_t correction) {
  const auto n = static_cast<int64_t>(v.size());
  if (n - correction <= 0) return std::numeric_limits<double>::quiet_NaN();
  const double m = ref_mean(v);
  double s = 0;
  for (double x : v) s += (x - m) * (x - m);
  return s / static_cast<double>(n - correction);
}

/// torch.matmul semantics. `abs_out`, when given, receives sum_k |a_ik * b_kj| per
/// output element (the scale of the rounding error of a float32 dot product).
inline Ref ref_matmul(const Ref& a, const Ref& b, Ref* abs_out = nullptr) {
  if (a.dim() == 0 || b.dim() == 0) throw std::invalid_argument("reference matmul: 0-d operand");
  Ref a2 = a, b2 = b;
  if (a.dim() == 1) a2.shape = {1, a.shape[0]};
  if (b.dim() == 1) b2.shape = {b.shape[0], 1};
  const int64_t m = a2.shape[a2.dim() - 2], k = a2.shape[a2.dim() - 1];
  const int64_t k2 = b2.shape[b2.dim() - 2], n = b2.shape[b2.dim() - 1];
  if (k != k2) throw std::invalid_argument("reference matmul: inner dimensions differ");
  Shape batch_a(a2.shape.begin(), a2.shape.end() - 2),
      batch_b(b2.shape.begin(), b2.shape.end() - 2);
  Shape batch = broadcast_shapes(batch_a, batch_b);
  Shape out_shape = batch;
  out_shape.push_back(m);
  out_shape.push_back(n);
  Ref out = Ref::filled(out_shape, 0);
  Ref abs = Ref::filled(out_shape, 0);
  // One [m, k]·[k, n] product per batch index, with plain offsets: this reference runs
  // at -O0 under AddressSanitizer in CI, where index vectors per multiply-add cost
  // minutes.
  for_each_index(batch, [&](const Shape& bi, int64_t batch_linear) {
    const double* pa = a2.values.data() + broadcast_linear(batch_a, bi) * m * k;
    const double* pb = b2.values.data() + broadcast_linear(batch_b, bi) * k * n;
    double* po = out.values.data() + batch_linear * m * n;
    double* ps = abs.values.data() + batch_linear * m * n;
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t j = 0; j < n; ++j) {
        double s = 0, sa = 0;
        for (int64_t kk = 0; kk < k; ++kk) {
          const double x = pa[i * k + kk], y = pb[kk * n + j];
          s += x * y;
          sa += std::abs(x * y);
        }
        po[i * n + j] = s;
        ps[i * n + j] = sa;
      }
    }
  });
  // Remove the dimensions that 1-D operands added.
  Shape final_shape = batch;
  if (a.dim() != 1) final_shape.push_back(m);
  if (b.dim() != 1) final_shape.push_back(n);
  out.shape = final_shape;
  abs.shape = final_shape;
  if (abs_out) *abs_out = abs;
  return out;
}

/// torch.cat along `dim` (shapes must agree elsewhere).
inline Ref ref_cat(const std::vector<Ref>& parts, int64_t dim) {
  const int64_t rank = parts.at(0).dim();
  dim = wrap_dim(dim, rank);
  Shape shape = parts[0].shape;
  shape[dim] = 0;
  for (const Ref& p : parts) shape[dim] += p.shape[dim];
  Ref out = Ref::filled(shape, 0);
  for_each_index(shape, [&](const Shape& i, int64_t linear) {
    Shape j = i;
    for (const Ref& p : parts) {
      if (j[dim] < p.shape[dim]) {
        out.values[static_cast<size_t>(linear)] = p.at(j);
        return;
      }
      j[dim] -= p.shape[dim];
    }
  });
  return out;
}

/// torch.stack along a new dimension `dim` (0..rank).
inline Ref ref_stack(const std::vector<Ref>& parts, int64_t dim) {
  std::vector<Ref> expanded;
  const int64_t rank = parts.at(0).dim() + 1;
  dim = wrap_dim(dim, rank);
  for (Ref p : parts) {
    p.shape.insert(p.shape.begin() + dim, 1);
    expanded.push_back(p);
  }
  return ref_cat(expanded, dim);
}

inline Ref ref_index_select(const Ref& x, int64_t dim, const std::vector<int64_t>& index) {
  dim = wrap_dim(dim, x.dim());
  Shape shape = x.shape;
  shape[dim] = static_cast<int64_t>(index.size());
  Ref out = Ref::filled(shape, 0);
  for_each_index(shape, [&](const Shape& i, int64_t linear) {
    Shape j = i;
    j[dim] = index[static_cast<size_t>(i[dim])];
    out.values[static_cast<size_t>(linear)] = x.at(j);
  });
  return out;
}

inline Ref ref_gather(const Ref& x, int64_t dim, const Ref& index) {
  dim = wrap_dim(dim, x.dim());
  Ref out = Ref::filled(index.shape, 0);
  for_each_index(index.shape, [&](const Shape& i, int64_t linear) {
    Shape j = i;
    j[dim] = static_cast<int64_t>(index.values[static_cast<size_t>(linear)]);
    out.values[static_cast<size_t>(linear)] = x.at(j);
  });
  return out;
}

/// Moves dimensions: out.shape[i] = x.shape[perm[i]] (torch.permute).
inline Ref ref_permute(const Ref& x, const Shape& perm) {
  Shape shape;
  for (int64_t p : perm) shape.push_back(x.shape[p]);
  Ref out = Ref::filled(shape, 0);
  for_each_index(shape, [&](const Shape& i, int64_t linear) {
    Shape j(x.shape.size());
    for (size_t d = 0; d < perm.size(); ++d) j[perm[d]] = i[d];
    out.values[static_cast<size_t>(linear)] = x.at(j);
  });
  return out;
}

// -- deterministic inputs -------------------------------------------------------------

/// `n` values uniform in [lo, hi), each exactly representable in float32 (so a
/// float32 tensor holds exactly what the reference computes with).
inline std::vector<double> random_floats(size_t n, uint32_t seed, double lo = -2, double hi = 2) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<double> dist(lo, hi);
  std::vector<double> v(n);
  for (double& x : v) x = static_cast<double>(static_cast<float>(dist(gen)));
  return v;
}

/// `n` values that are multiples of 1/`denominator` in [lo, hi]: exactly
/// representable in float16 and bfloat16 for small ranges (e.g. 1/16 within [-4, 4]).
inline std::vector<double> random_grid(size_t n, uint32_t seed, double lo, double hi,
                                       int denominator) {
  std::mt19937 gen(seed);
  const auto steps = static_cast<int>(std::lround((hi - lo) * denominator));
  std::uniform_int_distribution<int> dist(0, steps);
  std::vector<double> v(n);
  for (double& x : v) x = lo + static_cast<double>(dist(gen)) / denominator;
  return v;
}

inline std::vector<double> random_ints(size_t n, uint32_t seed, int lo, int hi) {
  std::mt19937 gen(seed);
  std::uniform_int_distribution<int> dist(lo, hi);
  std::vector<double> v(n);
  for (double& x : v) x = dist(gen);
  return v;
}

}  // namespace kiln::test
